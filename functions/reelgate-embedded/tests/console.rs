//! Console sign-in over HTTP on the embedded adapters: one-time links, the session cookie with
//! its CSRF token, server-side sign-out, the membership check on every request, and the wall
//! between console sessions and API keys.

use reelgate::domain::accounts::console::Console;
use reelgate::ports::store::{Key, Update};
use reelgate_embedded::testing::TestServer;
use serde_json::Value;

async fn sign_in(server: &TestServer, person: &str, org: &str) -> (String, String) {
    let login = server.console_sign_in(person, org).await;
    // The link worked once.
    let again = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
        .get(&login.link_url)
        .send()
        .await
        .expect("again");
    assert_eq!(again.status().as_u16(), 401);
    (login.secret, login.csrf)
}

async fn status(req: reqwest::RequestBuilder) -> (u16, Value) {
    let res = req.send().await.expect("request");
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_session_is_a_cookie_with_csrf_and_never_an_api_key() {
    let server = TestServer::start().await;
    let t = server.tenant("5.00").await;
    let (secret, csrf) = sign_in(&server, &t.person, &t.org).await;
    let http = reqwest::Client::new();
    let cookie = format!("reelgate_console={secret}");
    // Without the CSRF token a state-changing request is refused; with it, it goes through.
    let (code, body) = status(
        http.post(server.url("/console/api/terms/agree"))
            .header("cookie", &cookie),
    )
    .await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(body["error"]["code"], "csrf_token_invalid");
    let (code, body) = status(
        http.post(server.url("/console/api/terms/agree"))
            .header("cookie", &cookie)
            .header("x-csrf-token", &csrf),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["accepted"], true);
    // The session is no API key, and an API key is no session.
    let (code, _) = status(http.get(server.url("/v1/videos")).bearer_auth(&secret)).await;
    assert_eq!(code, 401);
    let (code, body) = status(
        http.get(server.url("/console/api/session"))
            .bearer_auth(&t.key),
    )
    .await;
    assert_eq!(code, 401);
    assert_eq!(body["error"]["code"], "console_login_required");
    // Console jobs are attributed to the `console` key id.
    let (code, video) = status(
        http.post(server.url("/console/api/videos"))
            .header("cookie", &cookie)
            .header("x-csrf-token", &csrf)
            .json(&serde_json::json!({"model": "reel-1", "prompt": "waves", "seconds": 4, "aspect_ratio": "16:9"})),
    )
    .await;
    assert_eq!(code, 200, "{video}");
    let job = server
        .app
        .store
        .get(&Key::new(
            format!("ORG#{}", t.org),
            format!("VIDEO#{}", video["id"].as_str().expect("id")),
        ))
        .await
        .expect("get")
        .expect("job");
    assert_eq!(job.get("key").and_then(|a| a.as_str()), Some("console"));
    // Sign-out revokes the session server-side.
    let (code, _) = status(
        http.post(server.url("/console/api/signout"))
            .header("cookie", &cookie)
            .header("x-csrf-token", &csrf),
    )
    .await;
    assert_eq!(code, 200);
    let (code, _) = status(
        http.get(server.url("/console/api/session"))
            .header("cookie", &cookie),
    )
    .await;
    assert_eq!(code, 401);
}

#[tokio::test]
async fn a_person_no_longer_in_the_organization_is_refused() {
    let server = TestServer::start().await;
    let t = server.tenant("5.00").await;
    let (secret, _) = sign_in(&server, &t.person, &t.org).await;
    let http = reqwest::Client::new();
    let cookie = format!("reelgate_console={secret}");
    let (code, _) = status(
        http.get(server.url("/console/api/terms"))
            .header("cookie", &cookie),
    )
    .await;
    assert_eq!(code, 200);
    server
        .app
        .store
        .delete(
            &Key::new(format!("ORG#{}", t.org), format!("MEMBER#{}", t.person)),
            None,
        )
        .await
        .expect("remove membership");
    let (code, _) = status(
        http.get(server.url("/console/api/terms"))
            .header("cookie", &cookie),
    )
    .await;
    assert_eq!(code, 401);
    // Nor can a link be made or redeemed for them.
    let console = Console::new(server.app.store.as_ref());
    assert!(console.create_link(&t.person, &t.org, 60).await.is_err());
}

#[tokio::test]
async fn expired_links_and_sessions_are_refused() {
    let server = TestServer::start().await;
    let t = server.tenant("5.00").await;
    let console = Console::new(server.app.store.as_ref());
    let link = console
        .create_link(&t.person, &t.org, 60)
        .await
        .expect("link");
    server
        .app
        .store
        .update(
            &Key::new(format!("CONSOLELINK#{}", link.id), "CONSOLELINK"),
            Update::new().set("expires_at", reelgate::ports::store::now_secs() - 1),
            None,
        )
        .await
        .expect("expire link");
    assert!(console.redeem_link(&link.token).await.is_err());
    let issued = console
        .create_session(&t.person, &t.org)
        .await
        .expect("session");
    assert!(console
        .session(&issued.secret)
        .await
        .expect("lookup")
        .is_some());
    server
        .app
        .store
        .update(
            &Key::new(format!("CONSOLE#{}", issued.session_id), "CONSOLE"),
            Update::new().set("expires_at", reelgate::ports::store::now_secs() - 1),
            None,
        )
        .await
        .expect("expire session");
    assert!(console
        .session(&issued.secret)
        .await
        .expect("lookup")
        .is_none());
    // A forged secret with a real session id is refused.
    let forged = format!("{}AAAA", &issued.secret[..issued.secret.len() - 4]);
    assert!(console.session(&forged).await.expect("lookup").is_none());
}
