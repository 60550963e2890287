//! The console playground's HTTP surface under `/console`: sign-in by link, the browser session
//! cookie (with its CSRF token), and the console's JSON routes under `/console/api/`, which act
//! as the signed-in person in their organization through the same domain use cases as `/v1`.
//!
//! A console session works only here; `/v1` takes API keys only, and an API key in the
//! `Authorization` header is not a console session.

pub mod answers;
pub mod api;
pub mod oidc;
pub mod videos;

use crate::api::operation::{
    query_param, Answer, Auth, Declared, Kind, Operation, DEFAULT, VIDEO_ID,
};
use crate::app::App;
use crate::domain::accounts::console::{Console, IssuedSession, Session};
use crate::domain::error::ApiError;
use axum::extract::{FromRequestParts, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, COOKIE, LOCATION, SET_COOKIE};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde::Deserialize;

/// The session cookie's name.
pub const COOKIE_NAME: &str = "reelgate_console";
/// The header that carries the session's CSRF token on every state-changing console request.
pub const CSRF_HEADER: &str = "x-csrf-token";

pub const CONSOLE_PAGE: Operation = Operation {
    path: "/console",
    id: "ConsolePage",
    tag: "console",
    summary: "The console's single page",
    auth: Auth::None,
    ok: &[(200, Answer::Html)],
    errors: &[],
    ..DEFAULT
};

pub const CONSOLE_PAGE_SLASH: Operation = Operation {
    path: "/console/",
    id: "ConsolePageSlash",
    tag: "console",
    summary: "The console's single page",
    auth: Auth::None,
    ok: &[(200, Answer::Html)],
    errors: &[],
    ..DEFAULT
};

pub const CONSOLE_VIDEO_PAGE: Operation = Operation {
    path: "/console/videos/{video_id}",
    id: "ConsoleVideoPage",
    tag: "console",
    summary: "The console's single page, opened on one video's page",
    auth: Auth::None,
    params: &[VIDEO_ID],
    ok: &[(200, Answer::Html)],
    errors: &[],
    ..DEFAULT
};

pub const CONSOLE_SIGN_IN: Operation = Operation {
    path: "/console/signin",
    id: "ConsoleSignIn",
    tag: "console",
    summary: "Redeem a one-time sign-in link: sets the session cookie, redirects to the console",
    auth: Auth::None,
    params: &[query_param(
        "token",
        Kind::Str,
        "The link's one-time token.",
    )],
    // A used, expired or unknown link gets a page saying so (a browser opened it).
    ok: &[(303, Answer::Redirect), (401, Answer::Html)],
    errors: &[],
    ..DEFAULT
};

pub const CONSOLE_STYLESHEET: Operation = Operation {
    path: "/console/assets/console.css",
    id: "ConsoleStylesheet",
    tag: "console",
    summary: "The console's stylesheet",
    auth: Auth::None,
    ok: &[(200, Answer::Text("text/css; charset=utf-8"))],
    errors: &[],
    ..DEFAULT
};

pub const CONSOLE_SCRIPT: Operation = Operation {
    path: "/console/assets/console.js",
    id: "ConsoleScript",
    tag: "console",
    summary: "The console's script",
    auth: Auth::None,
    ok: &[(200, Answer::Text("text/javascript; charset=utf-8"))],
    errors: &[],
    ..DEFAULT
};

/// Every console route: the local server's console.
pub fn routes() -> Router<App> {
    site_routes()
        .merge(videos::routes())
        .merge(api::chat_routes())
}

/// The console without its video routes and its chat answer: the pages, sign-in, and the JSON
/// routes of the account (session, terms, keys, usage, uploads, webhooks, model lists). On AWS
/// its parts are functions of their own, so that each links only the ports it uses
/// (docs/console.md, "On AWS").
pub fn site_routes() -> Router<App> {
    Router::new()
        .declared(&CONSOLE_PAGE, page)
        .declared(&CONSOLE_PAGE_SLASH, page)
        .declared(&CONSOLE_SIGN_IN, sign_in)
        // A video's own page: the same single page, which reads the id from its path.
        .declared(&CONSOLE_VIDEO_PAGE, page)
        .declared(&CONSOLE_STYLESHEET, css)
        .declared(&CONSOLE_SCRIPT, js)
        .merge(api::routes())
        .merge(oidc::routes())
}

/// `Set-Cookie` for a new session: HttpOnly, SameSite=Lax (the sign-in link is opened from
/// another application, a top-level navigation), Path=/console, a fixed Max-Age, and Secure
/// whenever the public URL is https.
pub fn session_cookie(session: &IssuedSession, public_base_url: &str) -> String {
    let max_age = (session.expires_at - crate::ports::store::now_secs()).max(0);
    let mut cookie = format!(
        "{COOKIE_NAME}={}; Path=/console; HttpOnly; SameSite=Lax; Max-Age={max_age}",
        session.secret
    );
    if public_base_url.starts_with("https://") {
        cookie.push_str("; Secure");
    }
    cookie
}

/// `Set-Cookie` that clears the session cookie.
pub fn cleared_cookie(public_base_url: &str) -> String {
    let mut cookie = format!("{COOKIE_NAME}=; Path=/console; HttpOnly; SameSite=Lax; Max-Age=0");
    if public_base_url.starts_with("https://") {
        cookie.push_str("; Secure");
    }
    cookie
}

/// The console session cookie's secret, when the request carries one.
pub(crate) fn session_secret(headers: &HeaderMap) -> Option<&str> {
    cookie_value(headers, COOKIE_NAME)
}

pub(crate) fn cookie_value<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim())
}

/// The signed-in console session. Rejects a request without a live session cookie (401
/// `console_login_required`), and a state-changing request (anything but GET/HEAD) whose
/// `X-CSRF-Token` header is not the session's token (403 `csrf_token_invalid`).
pub struct ConsoleSession(pub Session);

impl FromRequestParts<App> for ConsoleSession {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<Self, Self::Rejection> {
        let refused = || {
            ApiError::unauthorized(
                "console_login_required",
                "Sign in to the console first: open the sign-in link `reelgate serve` printed, \
                 or make one with `reelgate admin console-link`.",
            )
        };
        let secret = cookie_value(&parts.headers, COOKIE_NAME).ok_or_else(refused)?;
        let session = Console::new(app.store.as_ref())
            .session(secret)
            .await?
            .ok_or_else(refused)?;
        if parts.method != Method::GET && parts.method != Method::HEAD {
            let presented = parts
                .headers
                .get(CSRF_HEADER)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default();
            if !session.csrf_matches(presented) {
                return Err(ApiError::forbidden(
                    "csrf_token_invalid",
                    "This console request changes state and needs the session's CSRF token in \
                     the X-CSRF-Token header.",
                ));
            }
        }
        crate::observability::telemetry::note_caller(&session.caller.org, session.caller.key_id());
        Ok(ConsoleSession(session))
    }
}

#[derive(Deserialize)]
struct SignInQuery {
    #[serde(default)]
    token: String,
}

/// `GET /console/signin?token=…`: redeems a one-time sign-in link, sets the session cookie and
/// sends the browser to the console; a used, expired or unknown link gets a page saying so.
async fn sign_in(
    State(app): State<App>,
    axum::extract::Query(q): axum::extract::Query<SignInQuery>,
) -> Response {
    match Console::new(app.store.as_ref()).redeem_link(&q.token).await {
        Ok(session) => {
            let cookie = session_cookie(&session, &app.settings.public_base_url);
            let mut response = StatusCode::SEE_OTHER.into_response();
            let headers = response.headers_mut();
            headers.insert(LOCATION, HeaderValue::from_static(CONSOLE_PAGE_SLASH.path));
            headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
            if let Ok(v) = HeaderValue::from_str(&cookie) {
                headers.insert(SET_COOKIE, v);
            }
            response
        }
        // The console's own sign-in page (header, language switch, OIDC button where
        // configured) with its notice that the link expired or was used, and what to do next.
        Err(error) => {
            let mut response = console_page(&app, true);
            *response.status_mut() = crate::api::envelope::status(error.kind);
            no_store_html(response)
        }
    }
}

fn no_store_html(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// A small server-rendered page (sign-in refusals, the organization choice), styled by the
/// console's stylesheet, under the console's content security policy.
pub(crate) fn html_page(status: StatusCode, title: &str, body_html: &str) -> Response {
    let html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <link rel=\"stylesheet\" href=\"/console/assets/console.css\">\
         <title>{title} · reelgate console</title></head><body>\
         <main class=\"standalone\"><h1>{title}</h1>{body_html}</main></body></html>",
        title = html_escape(title),
    );
    let mut response = (status, html).into_response();
    let h = response.headers_mut();
    h.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert("content-security-policy", HeaderValue::from_static(CSP));
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    response
}

pub(crate) fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// The console's own files only: no inline script, no third-party origin; images may also be
/// `blob:` URLs (the New video page's previews of files the person chose); media may come from
/// the blob store's signed URLs (this origin locally, the bucket's https origin on AWS), and the
/// New video page PUTs uploads to such a presigned URL (so `connect-src` allows https too; the
/// signature in the URL is the only authority it carries, and no cookie goes with it).
const CSP: &str =
    "default-src 'self'; img-src 'self' https: data: blob:; media-src 'self' https:; \
                   connect-src 'self' https:; frame-ancestors 'none'; base-uri 'none'; \
                   form-action 'self'";

fn asset(body: impl IntoResponse, content_type: &'static str) -> Response {
    let mut response = body.into_response();
    let h = response.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("content-security-policy", HeaderValue::from_static(CSP));
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    response
}

/// `GET /console`: the single-page console (compiled into the binary).
async fn page(State(app): State<App>) -> Response {
    console_page(&app, false)
}

/// The single-page console, with a "Sign in with …" button on its sign-in page when an OpenID
/// Connect issuer is configured, and (`link_refused`) its notice that a sign-in link expired or
/// was already used shown.
fn console_page(app: &App, link_refused: bool) -> Response {
    let mut html = std::borrow::Cow::Borrowed(INDEX_HTML);
    if let Some(oidc) = &app.oidc {
        let name = html_escape(oidc.name());
        let button = format!(
            "<p><a class=\"button primary\" id=\"oidc-signin\" \
             href=\"/console/oidc/start\" data-name=\"{name}\">Sign in with {name}</a></p>"
        );
        html = html.replacen(OIDC_SLOT, &button, 1).into();
        html = html
            .replacen(NO_OIDC_HINT, "id=\"signin-admin\" class=\"hint\" hidden", 1)
            .into();
    }
    if link_refused {
        html = html
            .replacen(REFUSED_SLOT, "id=\"signin-refused\"", 1)
            .into();
    }
    if app.settings.console_links_by_cli {
        html = html.replacen(CLI_LINK_SLOT, "id=\"signin-cli\"", 1).into();
    }
    asset(html.into_owned(), "text/html; charset=utf-8")
}

/// Where the sign-in page's OpenID Connect button goes (index.html).
const OIDC_SLOT: &str = "<!-- oidc sign-in -->";
/// The sign-in page's "ask your administrator" line, hidden where OIDC sign-in is offered.
const NO_OIDC_HINT: &str = "id=\"signin-admin\" class=\"hint\"";
/// The sign-in page's `reelgate admin console-link` help, shown where this host's operator makes
/// links that way (the local server).
const CLI_LINK_SLOT: &str = "id=\"signin-cli\" hidden";
/// The sign-in page's refused-link notice, shown only on a refused link's page.
const REFUSED_SLOT: &str = "id=\"signin-refused\" hidden";
async fn css() -> Response {
    asset(CONSOLE_CSS, "text/css; charset=utf-8")
}
async fn js() -> Response {
    asset(CONSOLE_JS, "text/javascript; charset=utf-8")
}

const INDEX_HTML: &str = include_str!("assets/index.html");
const CONSOLE_CSS: &str = include_str!("assets/console.css");

/// The console's script is written as one source file per part under `assets/js/` (the shared
/// words, the core, one file per page, the code boxes, the start) and joined here, at build time,
/// into the one classic script served at `/console/assets/console.js`, in this order. Joined
/// rather than served as ES modules: the page loads one file under one URL as before, so a deploy
/// can never serve a mix of old and new parts (the script is `no-cache`, without content hashes),
/// no route, CSP or caching rule changes, and the parts share one script scope exactly as the
/// single file did (function declarations are hoisted across parts; top-level statements run in
/// this order). Each part ends with a newline, so no line comment runs into the next part.
macro_rules! console_script {
    ($($part:literal),+ $(,)?) => {
        /// The parts of the console's script, in the order they are joined.
        #[cfg(test)]
        const CONSOLE_JS_PARTS: &[&str] = &[$($part),+];
        const CONSOLE_JS: &str = concat!($(include_str!(concat!("assets/js/", $part))),+);
    };
}

console_script!(
    "i18n.js",
    "core.js",
    "terms.js",
    "new-video.js",
    "videos.js",
    "video-page.js",
    "code-boxes.js",
    "chat.js",
    "keys.js",
    "webhooks.js",
    "usage.js",
    "main.js",
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookie_values_are_found_among_others() {
        let mut h = HeaderMap::new();
        h.insert(
            COOKIE,
            HeaderValue::from_static("a=1; reelgate_console=rgc_x ; b=2"),
        );
        assert_eq!(cookie_value(&h, COOKIE_NAME), Some("rgc_x"));
        assert_eq!(cookie_value(&h, "c"), None);
    }

    #[test]
    fn session_cookie_is_secure_only_over_https() {
        let s = IssuedSession {
            session_id: "cs_x".into(),
            secret: "rgc_secret".into(),
            csrf_token: "t".into(),
            expires_at: crate::ports::store::now_secs() + 100,
            user: "user_x".into(),
            organization: "org_x".into(),
        };
        let plain = session_cookie(&s, "http://127.0.0.1:8080");
        assert!(plain.contains("HttpOnly") && plain.contains("SameSite=Lax"));
        assert!(plain.contains("Path=/console") && plain.contains("Max-Age="));
        assert!(!plain.contains("Secure"));
        assert!(session_cookie(&s, "https://reel.example").ends_with("; Secure"));
    }

    /// Every script part under `assets/js/` is joined into the served script (a new page's file
    /// cannot be forgotten), each ends with a newline (a trailing line comment cannot swallow the
    /// next part's first line), and the whole script is strict.
    #[test]
    fn console_script_joins_every_part() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/api/console/assets/js");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .expect("assets/js")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        on_disk.sort();
        let mut joined: Vec<String> = CONSOLE_JS_PARTS.iter().map(|p| p.to_string()).collect();
        joined.sort();
        assert_eq!(
            on_disk, joined,
            "every file in assets/js is a part of console.js"
        );
        for part in CONSOLE_JS_PARTS {
            let text = std::fs::read_to_string(format!("{dir}/{part}")).expect("part");
            assert!(text.ends_with('\n'), "{part} ends with a newline");
        }
        assert!(CONSOLE_JS.starts_with("\"use strict\";\n"));
    }
}
