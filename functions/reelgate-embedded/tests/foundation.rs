//! The foundation end to end over HTTP: authentication, the error envelope, files with content
//! checks and tenancy, and presigned URLs served by the local server.

use reelgate_embedded::testing::TestServer;
use serde_json::Value;

/// A real 2x2 PNG.
pub fn tiny_png() -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    let img = image::RgbImage::from_fn(2, 2, |x, y| image::Rgb([x as u8 * 200, y as u8 * 200, 90]));
    img.write_to(&mut out, image::ImageFormat::Png)
        .expect("png");
    out.into_inner()
}

async fn upload(
    server: &TestServer,
    key: &str,
    purpose: &str,
    name: &str,
    bytes: Vec<u8>,
) -> (u16, Value) {
    let form = reqwest::multipart::Form::new()
        .text("purpose", purpose.to_owned())
        .part(
            "file",
            reqwest::multipart::Part::bytes(bytes).file_name(name.to_owned()),
        );
    let res = reqwest::Client::new()
        .post(server.url("/v1/files"))
        .bearer_auth(key)
        .multipart(form)
        .send()
        .await
        .expect("upload");
    let status = res.status().as_u16();
    (status, res.json().await.expect("json"))
}

fn assert_error(body: &Value, code: &str) {
    let err = &body["error"];
    assert_eq!(err["code"], code, "{body}");
    assert!(
        err["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{body}"
    );
    assert!(
        err.get("type").is_some() && err.get("param").is_some(),
        "{body}"
    );
}

#[tokio::test]
async fn health_needs_no_credentials_and_v1_does() {
    let server = TestServer::start().await;
    let http = reqwest::Client::new();
    let health = http
        .get(server.url("/health"))
        .send()
        .await
        .expect("health");
    assert_eq!(health.status(), 200);
    let missing = http
        .get(server.url("/v1/files"))
        .send()
        .await
        .expect("no key");
    assert_eq!(missing.status(), 401);
    assert_error(&missing.json().await.expect("json"), "missing_api_key");
    let unknown = http
        .get(server.url("/v1/files"))
        .bearer_auth("rgk_0000000000000000000000000000_nope")
        .send()
        .await
        .expect("bad key");
    assert_eq!(unknown.status(), 401);
    assert_error(&unknown.json().await.expect("json"), "invalid_api_key");
}

#[tokio::test]
async fn revoked_key_stops_working() {
    let server = TestServer::start().await;
    let tenant = server.tenant("1.00").await;
    let accounts = server.app.accounts();
    let fresh = accounts.create_api_key(&tenant.person).await.expect("key");
    let http = reqwest::Client::new();
    let ok = http
        .get(server.url("/v1/files"))
        .bearer_auth(&fresh.secret)
        .send()
        .await
        .expect("list");
    assert_eq!(ok.status(), 200);
    accounts.revoke_api_key(&fresh.id).await.expect("revoke");
    let refused = http
        .get(server.url("/v1/files"))
        .bearer_auth(&fresh.secret)
        .send()
        .await
        .expect("list");
    assert_eq!(refused.status(), 401);
    let other = http
        .get(server.url("/v1/files"))
        .bearer_auth(&tenant.key)
        .send()
        .await
        .expect("list");
    assert_eq!(other.status(), 200, "revoking one key leaves the others");
}

#[tokio::test]
async fn error_envelope_for_unknown_route_wrong_method_and_bad_json() {
    let server = TestServer::start().await;
    let tenant = server.tenant("1.00").await;
    let http = reqwest::Client::new();
    let unknown = http
        .get(server.url("/v1/nothing-here"))
        .bearer_auth(&tenant.key)
        .send()
        .await
        .expect("404");
    assert_eq!(unknown.status(), 404);
    assert_error(&unknown.json().await.expect("json"), "unknown_url");
    let wrong = http
        .patch(server.url("/v1/files"))
        .bearer_auth(&tenant.key)
        .send()
        .await
        .expect("405");
    assert_eq!(wrong.status(), 405);
    assert_error(&wrong.json().await.expect("json"), "method_not_allowed");
}

#[tokio::test]
async fn png_roundtrip_tenancy_and_presigned_url() {
    let server = TestServer::start().await;
    let alice = server.tenant("1.00").await;
    let bob = server.tenant("1.00").await;
    let png = tiny_png();
    let (status, file) = upload(&server, &alice.key, "vision", "tiny.png", png.clone()).await;
    assert_eq!(status, 200, "{file}");
    let id = file["id"].as_str().expect("id").to_owned();
    assert_eq!(file["file_id"], id.as_str());
    assert_eq!(file["object"], "file");
    assert_eq!(file["bytes"], png.len());
    assert_eq!(file["purpose"], "vision");
    assert_eq!(file["filename"], "tiny.png");
    let created = file["created_at"].as_i64().expect("created_at");
    assert_eq!(file["expires_at"].as_i64(), Some(created + 30 * 24 * 3600));

    let http = reqwest::Client::new();
    let content = http
        .get(server.url(&format!("/v1/files/{id}/content")))
        .bearer_auth(&alice.key)
        .send()
        .await
        .expect("content");
    assert_eq!(content.status(), 200);
    assert_eq!(content.headers()["content-type"], "image/png");
    assert_eq!(content.bytes().await.expect("bytes").to_vec(), png);

    for path in [format!("/v1/files/{id}"), format!("/v1/files/{id}/content")] {
        let res = http
            .get(server.url(&path))
            .bearer_auth(&bob.key)
            .send()
            .await
            .expect("bob");
        assert_eq!(res.status(), 404, "{path}");
        assert_error(&res.json().await.expect("json"), "file_not_found");
    }
    let bob_delete = http
        .delete(server.url(&format!("/v1/files/{id}")))
        .bearer_auth(&bob.key)
        .send()
        .await
        .expect("del");
    assert_eq!(bob_delete.status(), 404);

    let listed: Value = http
        .get(server.url("/v1/files"))
        .bearer_auth(&alice.key)
        .send()
        .await
        .expect("list")
        .json()
        .await
        .expect("json");
    assert_eq!(listed["object"], "list");
    assert_eq!(listed["data"][0]["id"], id.as_str());
    let bob_list: Value = http
        .get(server.url("/v1/files"))
        .bearer_auth(&bob.key)
        .send()
        .await
        .expect("list")
        .json()
        .await
        .expect("json");
    assert_eq!(bob_list["data"].as_array().map(Vec::len), Some(0));

    // The presigned URL serves the same bytes to a plain client with no credential.
    let url = server
        .app
        .blobs
        .presign_get(
            &reelgate::domain::files::blob_key(&alice.org, &id),
            std::time::Duration::from_secs(60),
        )
        .await
        .expect("presign");
    let fetched = http.get(&url).send().await.expect("presigned");
    assert_eq!(fetched.status(), 200);
    assert_eq!(fetched.bytes().await.expect("bytes").to_vec(), png);

    let deleted: Value = http
        .delete(server.url(&format!("/v1/files/{id}")))
        .bearer_auth(&alice.key)
        .send()
        .await
        .expect("delete")
        .json()
        .await
        .expect("json");
    assert_eq!(deleted["deleted"], true);
    let gone = http
        .get(server.url(&format!("/v1/files/{id}")))
        .bearer_auth(&alice.key)
        .send()
        .await
        .expect("get");
    assert_eq!(gone.status(), 404);
}

#[tokio::test]
async fn content_must_match_purpose() {
    let server = TestServer::start().await;
    let t = server.tenant("1.00").await;
    let (status, body) = upload(
        &server,
        &t.key,
        "vision",
        "notes.txt",
        b"just some text".to_vec(),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_error(&body, "invalid_request_error");
    assert_eq!(body["error"]["param"], "file");
    let (status, body) = upload(&server, &t.key, "audio", "tiny.png", tiny_png()).await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = upload(&server, &t.key, "posters", "tiny.png", tiny_png()).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["param"], "purpose");
    let (status, body) = upload(
        &server,
        &t.key,
        "user_data",
        "notes.txt",
        b"plain text is fine here".to_vec(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // Nothing of the refused uploads was kept.
    let listed: Value = reqwest::Client::new()
        .get(server.url("/v1/files"))
        .bearer_auth(&t.key)
        .send()
        .await
        .expect("list")
        .json()
        .await
        .expect("json");
    assert_eq!(listed["data"].as_array().map(Vec::len), Some(1), "{listed}");
}

#[tokio::test]
async fn purpose_after_file_field_is_accepted() {
    let server = TestServer::start().await;
    let t = server.tenant("1.00").await;
    let form = reqwest::multipart::Form::new()
        .part(
            "file",
            reqwest::multipart::Part::bytes(tiny_png()).file_name("late.png"),
        )
        .text("purpose", "vision");
    let res = reqwest::Client::new()
        .post(server.url("/v1/files"))
        .bearer_auth(&t.key)
        .multipart(form)
        .send()
        .await
        .expect("upload");
    assert_eq!(res.status(), 200);
}

#[tokio::test]
async fn files_list_pages_with_after() {
    let server = TestServer::start().await;
    let t = server.tenant("1.00").await;
    let mut ids = Vec::new();
    for i in 0..5 {
        let (status, f) = upload(&server, &t.key, "vision", &format!("{i}.png"), tiny_png()).await;
        assert_eq!(status, 200);
        ids.push(f["id"].as_str().expect("id").to_owned());
    }
    ids.reverse();
    let http = reqwest::Client::new();
    let mut seen = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let mut url = server.url("/v1/files?limit=2");
        if let Some(a) = &after {
            url.push_str(&format!("&after={a}"));
        }
        let page: Value = http
            .get(url)
            .bearer_auth(&t.key)
            .send()
            .await
            .expect("page")
            .json()
            .await
            .expect("json");
        for f in page["data"].as_array().expect("data") {
            seen.push(f["id"].as_str().expect("id").to_owned());
        }
        if page["has_more"] != true {
            break;
        }
        after = page["last_id"].as_str().map(str::to_owned);
    }
    assert_eq!(seen, ids);
}

/// Every route in `API_ROUTES` is served by the router (neither unknown nor the wrong method),
/// and a route the router serves under /v1 that the list lacks would be caught by the infra
/// checks that read the same list.
#[tokio::test]
async fn every_listed_route_is_routed() {
    let server = TestServer::start().await;
    let http = reqwest::Client::new();
    for (method, path) in reelgate::api::API_ROUTES.iter() {
        let concrete = path
            .replace("{file_id}", "file_00000000000000000000000000")
            .replace("{video_id}", "video_00000000000000000000000000")
            .replace("{response_id}", "resp_00000000000000000000000000");
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let res = http
            .request(method.clone(), server.url(&concrete))
            .send()
            .await
            .expect("request");
        let status = res.status().as_u16();
        let body: Value = res.json().await.unwrap_or(Value::Null);
        assert_ne!(status, 405, "{method} {path}: {body}");
        assert_ne!(body["error"]["code"], "unknown_url", "{method} {path}");
        if *path == reelgate::api::openapi::PATH {
            assert_eq!(status, 200, "the OpenAPI document needs no key: {body}");
            assert_eq!(body["openapi"], "3.1.0", "{body}");
            continue;
        }
        assert_eq!(status, 401, "{method} {path} must require a key: {body}");
    }
}

/// Every console route is served by the router, and refuses a caller without a session (the
/// pages, assets and sign-in link excepted).
#[tokio::test]
async fn every_console_route_is_routed() {
    let server = TestServer::start().await;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    for (method, path) in reelgate::api::CONSOLE_ROUTES.iter() {
        let concrete = path
            .replace("{video_id}", "video_00000000000000000000000000")
            .replace("{key_id}", "key_00000000000000000000000000");
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let res = http
            .request(method.clone(), server.url(&concrete))
            .send()
            .await
            .expect("request");
        let status = res.status().as_u16();
        let body: Value = res.json().await.unwrap_or(Value::Null);
        assert_ne!(status, 405, "{method} {path}: {body}");
        assert_ne!(body["error"]["code"], "unknown_url", "{method} {path}");
        if path.starts_with("/console/api/") {
            assert_eq!(
                status, 401,
                "{method} {path} must require a session: {body}"
            );
        }
    }
}

/// Each malformed upload body is refused naming its parameter, under an Idempotency-Key too,
/// and the key stays free: the same key then reserves a good upload.
#[tokio::test]
async fn an_upload_body_is_refused_naming_its_parameter() {
    let server = TestServer::start().await;
    let t = server.tenant("1.00").await;
    let http = reqwest::Client::new();
    let good = serde_json::json!({"purpose": "vision", "filename": "a.png", "bytes": 10});
    let with = |field: &str, value: Value| {
        let mut body = good.clone();
        body[field] = value;
        body
    };
    let without = |field: &str| {
        let mut body = good.clone();
        body.as_object_mut().expect("object").remove(field);
        body
    };
    let cases = [
        (with("purpose", "fine-tune".into()), "purpose"),
        (with("purpose", 3.into()), "purpose"),
        (without("purpose"), "purpose"),
        (with("filename", "".into()), "filename"),
        (with("filename", "x".repeat(1000).into()), "filename"),
        (without("filename"), "filename"),
        (with("bytes", 0.into()), "bytes"),
        (with("bytes", (-1).into()), "bytes"),
        (with("bytes", "10".into()), "bytes"),
        (with("bytes", u64::MAX.into()), "bytes"),
        (without("bytes"), "bytes"),
        (with("mime_type", 7.into()), "mime_type"),
    ];
    for (body, param) in cases {
        let res = http
            .post(server.url("/v1/uploads"))
            .bearer_auth(&t.key)
            .header("Idempotency-Key", "upload-refusals")
            .json(&body)
            .send()
            .await
            .expect("create");
        assert_eq!(res.status().as_u16(), 400, "{body}");
        let answer: Value = res.json().await.expect("json");
        assert_eq!(answer["error"]["param"], param, "{body}: {answer}");
        let message = answer["error"]["message"].as_str().expect("message");
        assert!(message.starts_with(param), "{body}: {message}");
    }
    let res = http
        .post(server.url("/v1/uploads"))
        .bearer_auth(&t.key)
        .header("Idempotency-Key", "upload-refusals")
        .json(&good)
        .send()
        .await
        .expect("create");
    assert_eq!(
        res.status().as_u16(),
        200,
        "the refused bodies left the key free"
    );
}

#[tokio::test]
async fn direct_upload_flow_registers_a_checked_file() {
    let server = TestServer::start().await;
    let t = server.tenant("1.00").await;
    let http = reqwest::Client::new();
    let png = tiny_png();
    let upload: Value = http
        .post(server.url("/v1/uploads"))
        .bearer_auth(&t.key)
        .json(&serde_json::json!({"purpose": "vision", "filename": "big.png", "bytes": png.len(), "mime_type": "image/png"}))
        .send()
        .await
        .expect("create")
        .json()
        .await
        .expect("json");
    assert_eq!(upload["status"], "pending", "{upload}");
    let url = upload["upload_url"].as_str().expect("url");
    let early: Value = http
        .post(server.url(&format!(
            "/v1/uploads/{}/complete",
            upload["id"].as_str().expect("id")
        )))
        .bearer_auth(&t.key)
        .send()
        .await
        .expect("complete")
        .json()
        .await
        .expect("json");
    assert_eq!(early["error"]["code"], "invalid_request_error", "{early}");
    let put = http
        .put(url)
        .header("content-type", "image/png")
        .body(png.clone())
        .send()
        .await
        .expect("put");
    assert!(put.status().is_success(), "{}", put.status());
    let file: Value = http
        .post(server.url(&format!(
            "/v1/uploads/{}/complete",
            upload["id"].as_str().expect("id")
        )))
        .bearer_auth(&t.key)
        .send()
        .await
        .expect("complete")
        .json()
        .await
        .expect("json");
    assert_eq!(file["purpose"], "vision", "{file}");
    assert_eq!(file["bytes"], png.len());
    let content = http
        .get(server.url(&format!(
            "/v1/files/{}/content",
            file["id"].as_str().expect("id")
        )))
        .bearer_auth(&t.key)
        .send()
        .await
        .expect("content");
    assert_eq!(content.bytes().await.expect("bytes").to_vec(), png);

    // Text declared as vision is refused at completion, and nothing is kept.
    let upload: Value = http
        .post(server.url("/v1/uploads"))
        .bearer_auth(&t.key)
        .json(&serde_json::json!({"purpose": "vision", "filename": "x.txt", "bytes": 5}))
        .send()
        .await
        .expect("create")
        .json()
        .await
        .expect("json");
    let url = upload["upload_url"].as_str().expect("url");
    http.put(url)
        .header("content-type", "application/octet-stream")
        .body("hello")
        .send()
        .await
        .expect("put");
    let refused = http
        .post(server.url(&format!(
            "/v1/uploads/{}/complete",
            upload["id"].as_str().expect("id")
        )))
        .bearer_auth(&t.key)
        .send()
        .await
        .expect("complete");
    assert_eq!(refused.status(), 400);
    // A bigger declared size than the limit is refused up front.
    let too_big = http
        .post(server.url("/v1/uploads"))
        .bearer_auth(&t.key)
        .json(
            &serde_json::json!({"purpose": "video", "filename": "x.mp4", "bytes": 200_000_000u64}),
        )
        .send()
        .await
        .expect("create");
    assert_eq!(too_big.status(), 400);
}

#[tokio::test]
async fn oversize_json_body_is_413_in_the_envelope() {
    let server = TestServer::start().await;
    let t = server.tenant("1.00").await;
    let huge = format!("{{\"prompt\": \"{}\"}}", "a".repeat(33 * 1024 * 1024));
    let res = reqwest::Client::new()
        .post(server.url("/v1/videos"))
        .bearer_auth(&t.key)
        .header("content-type", "application/json")
        .body(huge)
        .send()
        .await
        .expect("send");
    assert_eq!(res.status(), 413);
    let body: Value = res.json().await.expect("json");
    assert_error(&body, "payload_too_large");
}

#[tokio::test]
async fn file_content_can_redirect_to_a_short_lived_url() {
    let catalog =
        reelgate::domain::catalog::Catalog::parse(reelgate::domain::catalog::DEFAULT_CATALOG)
            .expect("catalog");
    let server = TestServer::start_with(catalog, |app| {
        let mut settings = (*app.settings).clone();
        settings.content_redirect = true;
        app.settings = std::sync::Arc::new(settings);
    })
    .await;
    let t = server.tenant("1.00").await;
    let png = tiny_png();
    let (status, file) = upload(&server, &t.key, "vision", "a.png", png.clone()).await;
    assert_eq!(status, 200);
    let no_follow = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let res = no_follow
        .get(server.url(&format!(
            "/v1/files/{}/content",
            file["id"].as_str().expect("id")
        )))
        .bearer_auth(&t.key)
        .send()
        .await
        .expect("content");
    assert_eq!(res.status(), 302);
    let location = res.headers()["location"]
        .to_str()
        .expect("location")
        .to_owned();
    assert_eq!(
        reqwest::get(&location)
            .await
            .expect("get")
            .bytes()
            .await
            .expect("bytes")
            .to_vec(),
        png
    );
}

/// With a credential cache (Lambda's default), a verified key is not read again within its
/// lifetime; the secret is still checked every time, a revocation by this process takes effect
/// at once, and one made elsewhere within the lifetime.
#[tokio::test]
async fn a_cached_credential_still_checks_the_secret_and_forgets_a_revoked_key() {
    use reelgate::domain::accounts::AccountCache;
    use reelgate::domain::catalog::{Catalog, DEFAULT_CATALOG};
    let ttl = std::time::Duration::from_millis(600);
    let catalog = Catalog::parse(DEFAULT_CATALOG).expect("catalog");
    let server = TestServer::start_with(catalog, |app| {
        app.credentials = std::sync::Arc::new(AccountCache::new(ttl));
    })
    .await;
    let tenant = server.tenant("1.00").await;
    let app = &server.app;
    let verifies = |secret: String| async move {
        app.accounts()
            .authenticate(&secret)
            .await
            .expect("auth")
            .is_some()
    };
    let key = app
        .accounts()
        .create_api_key(&tenant.person)
        .await
        .expect("key");
    assert!(verifies(key.secret.clone()).await);
    // Elsewhere (another instance, or `reelgate admin`): the key is revoked in the store.
    reelgate::domain::accounts::Accounts::new(app.store.as_ref())
        .revoke_api_key(&key.id)
        .await
        .expect("revoke elsewhere");
    assert!(
        verifies(key.secret.clone()).await,
        "within the cache's lifetime this process still trusts the key"
    );
    let wrong = format!("{}x", &key.secret[..key.secret.len() - 1]);
    assert!(!verifies(wrong).await, "the secret is checked every time");
    tokio::time::sleep(ttl).await;
    assert!(
        !verifies(key.secret.clone()).await,
        "past its lifetime the revocation holds"
    );

    // Revoked through this process: refused at once.
    let second = app
        .accounts()
        .create_api_key(&tenant.person)
        .await
        .expect("key");
    assert!(verifies(second.secret.clone()).await);
    app.accounts()
        .revoke_api_key(&second.id)
        .await
        .expect("revoke here");
    assert!(!verifies(second.secret.clone()).await);
}

/// What an engine or a provider fetching a file by its signed URL is told it is: the sniffed
/// type, whatever the uploader declared (a multipart part's type, or the PUT to a staging URL).
#[tokio::test]
async fn signed_urls_serve_uploaded_files_under_their_sniffed_type() {
    let server = TestServer::start().await;
    let t = server.tenant("1.00").await;
    let http = reqwest::Client::new();
    let png = tiny_png();
    let form = reqwest::multipart::Form::new()
        .text("purpose", "vision")
        .part(
            "file",
            reqwest::multipart::Part::bytes(png.clone())
                .file_name("dot.bin")
                .mime_str("application/octet-stream")
                .expect("mime"),
        );
    let by_form: Value = http
        .post(server.url("/v1/files"))
        .bearer_auth(&t.key)
        .multipart(form)
        .send()
        .await
        .expect("upload")
        .json()
        .await
        .expect("json");
    let upload: Value = http
        .post(server.url("/v1/uploads"))
        .bearer_auth(&t.key)
        .json(&serde_json::json!({"purpose": "vision", "filename": "dot.bin", "bytes": png.len(), "mime_type": "application/octet-stream"}))
        .send()
        .await
        .expect("create")
        .json()
        .await
        .expect("json");
    let put = http
        .put(upload["upload_url"].as_str().expect("url"))
        .header("content-type", "application/octet-stream")
        .body(png.clone())
        .send()
        .await
        .expect("put");
    assert!(put.status().is_success(), "{}", put.status());
    let direct: Value = http
        .post(server.url(&format!(
            "/v1/uploads/{}/complete",
            upload["id"].as_str().expect("id")
        )))
        .bearer_auth(&t.key)
        .send()
        .await
        .expect("complete")
        .json()
        .await
        .expect("json");
    for file in [by_form, direct] {
        let id = file["id"].as_str().expect("file id");
        let key = reelgate::domain::files::blob_key(&t.org, id);
        let url = server
            .app
            .blobs
            .presign_get(&key, std::time::Duration::from_secs(60))
            .await
            .expect("presign");
        let fetched = http.get(&url).send().await.expect("fetch");
        assert_eq!(fetched.status(), 200);
        assert_eq!(fetched.headers()["content-type"], "image/png", "{file}");
        assert_eq!(fetched.bytes().await.expect("bytes").to_vec(), png);
    }
}
