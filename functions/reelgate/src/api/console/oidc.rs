//! Console sign-in through the configured OpenID Connect issuer (`crate::domain::accounts::console::oidc`):
//! `GET /console/oidc/start` sends the browser to the issuer with a short-lived flow cookie,
//! `GET /console/oidc/callback` completes the sign-in (or shows the organizations to choose
//! from), `POST /console/oidc/choose` finishes a choice. Every refusal is a page that says why.

use super::{html_escape, html_page, session_cookie};
use crate::api::operation::{
    query_param, schema, Answer, Auth, Body, Declared, Kind, Operation, DEFAULT,
};
use crate::app::App;
use crate::domain::accounts::console::oidc::{Callback, Completed, OrgChoice, FLOW_SECS};
use crate::domain::error::ApiError;
use axum::extract::{Query, State};
use axum::http::header::{CACHE_CONTROL, LOCATION, SET_COOKIE};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Form, Router};
use serde::Deserialize;

/// The cookie that binds a sign-in in progress to the browser that started it.
pub const FLOW_COOKIE: &str = "reelgate_oidc";

pub const CONSOLE_OIDC_START: Operation = Operation {
    path: "/console/oidc/start",
    id: "ConsoleOidcStart",
    tag: "console",
    summary: "Single sign-on: to the OpenID Connect issuer (authorization code with PKCE)",
    auth: Auth::None,
    // A browser opened it: refusals are pages (404 when no issuer is configured).
    ok: &[
        (303, Answer::Redirect),
        (404, Answer::Html),
        (502, Answer::Html),
        (503, Answer::Html),
    ],
    errors: &[],
    ..DEFAULT
};

pub const CONSOLE_OIDC_CALLBACK: Operation = Operation {
    path: "/console/oidc/callback",
    id: "ConsoleOidcCallback",
    tag: "console",
    summary: "The issuer's return: signs the person in (or asks which organization)",
    auth: Auth::None,
    params: &[
        query_param("code", Kind::Str, "The authorization code."),
        query_param("state", Kind::Str, "The flow's state."),
        query_param("error", Kind::Str, "The issuer's refusal, if it refused."),
        query_param(
            "error_description",
            Kind::Str,
            "What the issuer said about it.",
        ),
    ],
    ok: &[
        (303, Answer::Redirect),
        (200, Answer::Html),
        (400, Answer::Html),
        (401, Answer::Html),
        (403, Answer::Html),
        (404, Answer::Html),
        (409, Answer::Html),
        (502, Answer::Html),
        (503, Answer::Html),
    ],
    errors: &[],
    ..DEFAULT
};

pub const CONSOLE_OIDC_CHOOSE: Operation = Operation {
    method: "POST",
    path: "/console/oidc/choose",
    id: "ConsoleOidcChoose",
    tag: "console",
    summary: "Choose the organization to sign in to (form: `token`, `org`)",
    auth: Auth::None,
    body: Body::Form(schema::<crate::api::console::oidc::OidcChooseForm>),
    ok: &[
        (303, Answer::Redirect),
        (400, Answer::Html),
        (401, Answer::Html),
        (403, Answer::Html),
        (404, Answer::Html),
        (409, Answer::Html),
    ],
    errors: &[],
    ..DEFAULT
};

pub fn routes() -> Router<App> {
    Router::new()
        .declared(&CONSOLE_OIDC_START, start)
        .declared(&CONSOLE_OIDC_CALLBACK, callback)
        .declared(&CONSOLE_OIDC_CHOOSE, choose)
}

/// Where the issuer sends the browser back (registered at the issuer as the redirect URI).
pub fn redirect_uri(public_base_url: &str) -> String {
    format!(
        "{}/console/oidc/callback",
        public_base_url.trim_end_matches('/')
    )
}

fn flow_cookie(value: &str, max_age: i64, public_base_url: &str) -> String {
    // SameSite=Lax: the issuer's redirect back is a top-level GET navigation from its site.
    let mut cookie = format!(
        "{FLOW_COOKIE}={value}; Path=/console/oidc; HttpOnly; SameSite=Lax; Max-Age={max_age}"
    );
    if public_base_url.starts_with("https://") {
        cookie.push_str("; Secure");
    }
    cookie
}

fn no_store(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The refusal page; `end_flow` clears the flow cookie (a choice refused leaves the flow, so the
/// person can go back and choose again).
fn refusal(error: &ApiError, public_base_url: &str, end_flow: bool) -> Response {
    let mut response = html_page(
        crate::api::envelope::status(error.kind),
        "Sign-in refused",
        &format!(
            "<p id=\"error\" data-code=\"{}\">{}</p><p><a href=\"/console/\">Back to the console</a></p>",
            html_escape(&error.code),
            html_escape(&error.message)
        ),
    );
    if end_flow {
        if let Ok(v) = HeaderValue::from_str(&flow_cookie("", 0, public_base_url)) {
            response.headers_mut().append(SET_COOKIE, v);
        }
    }
    no_store(response)
}

fn not_configured() -> Response {
    no_store(html_page(
        StatusCode::NOT_FOUND,
        "Single sign-on is not configured",
        "<p id=\"error\">This service has no OpenID Connect issuer configured. Sign in with a \
         sign-in link instead.</p><p><a href=\"/console/\">Back to the console</a></p>",
    ))
}

/// `GET /console/oidc/start`: to the issuer, with the flow cookie set.
async fn start(State(app): State<App>) -> Response {
    let Some(oidc) = app.oidc.clone() else {
        return not_configured();
    };
    let base = &app.settings.public_base_url;
    match oidc.begin(app.store.as_ref(), &redirect_uri(base)).await {
        Ok(started) => {
            let mut response = StatusCode::SEE_OTHER.into_response();
            let h = response.headers_mut();
            if let Ok(v) = HeaderValue::from_str(&started.authorize_url) {
                h.insert(LOCATION, v);
            }
            if let Ok(v) =
                HeaderValue::from_str(&flow_cookie(&started.browser_secret, FLOW_SECS, base))
            {
                h.insert(SET_COOKIE, v);
            }
            no_store(response)
        }
        Err(e) => refusal(&e, base, true),
    }
}

fn signed_in(session: &crate::domain::accounts::console::IssuedSession, base: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    let h = response.headers_mut();
    h.insert(
        LOCATION,
        HeaderValue::from_static(super::CONSOLE_PAGE_SLASH.path),
    );
    if let Ok(v) = HeaderValue::from_str(&session_cookie(session, base)) {
        h.append(SET_COOKIE, v);
    }
    if let Ok(v) = HeaderValue::from_str(&flow_cookie("", 0, base)) {
        h.append(SET_COOKIE, v);
    }
    no_store(response)
}

/// `GET /console/oidc/callback?code=…&state=…`.
async fn callback(
    State(app): State<App>,
    headers: HeaderMap,
    Query(query): Query<Callback>,
) -> Response {
    let Some(oidc) = app.oidc.clone() else {
        return not_configured();
    };
    let base = &app.settings.public_base_url;
    let secret = super::cookie_value(&headers, FLOW_COOKIE);
    match oidc
        .complete(app.store.as_ref(), secret, &query, &redirect_uri(base))
        .await
    {
        Ok(Completed::Session(session)) => signed_in(&session, base),
        Ok(Completed::Choose {
            form_token,
            choices,
        }) => choice_page(&form_token, &choices),
        Err(e) => refusal(&e, base, true),
    }
}

/// The page where a person who belongs to several organizations picks the one to sign in to.
fn choice_page(form_token: &str, choices: &[OrgChoice]) -> Response {
    let mut body = String::from(
        "<p>You are a member of several organizations. Choose the one to work in; you \
         can sign in again to switch.</p><ul class=\"choices\">",
    );
    for c in choices {
        body.push_str(&format!(
            "<li><form method=\"post\" action=\"/console/oidc/choose\">\
             <input type=\"hidden\" name=\"token\" value=\"{}\">\
             <input type=\"hidden\" name=\"org\" value=\"{}\">\
             <button type=\"submit\">{} <small>({})</small></button></form></li>",
            html_escape(form_token),
            html_escape(&c.org),
            html_escape(&c.name),
            html_escape(&c.org),
        ));
    }
    body.push_str("</ul>");
    no_store(html_page(StatusCode::OK, "Choose an organization", &body))
}

/// `POST /console/oidc/choose`: the choice page's form.
#[derive(Deserialize, utoipa::ToSchema)]
pub struct OidcChooseForm {
    /// The pending sign-in's token, from the page.
    #[serde(default)]
    token: String,
    /// The chosen organization's id.
    #[serde(default)]
    org: String,
}

/// `POST /console/oidc/choose` (form: `token`, `org`).
async fn choose(
    State(app): State<App>,
    headers: HeaderMap,
    form: Result<Form<OidcChooseForm>, axum::extract::rejection::FormRejection>,
) -> Response {
    let Some(oidc) = app.oidc.clone() else {
        return not_configured();
    };
    let base = &app.settings.public_base_url;
    // A body that is not the choice page's form (wrong type, unreadable) gets the same page as
    // every other refusal, not the framework's plain-text answer.
    let Ok(Form(form)) = form else {
        let refused = ApiError::bad_request(
            "The organization choice could not be read; sign in again and choose from the page.",
        );
        return refusal(&refused, base, false);
    };
    let secret = super::cookie_value(&headers, FLOW_COOKIE);
    match oidc
        .choose(app.store.as_ref(), secret, &form.token, &form.org)
        .await
    {
        Ok(session) => signed_in(&session, base),
        Err(e) => refusal(&e, base, false),
    }
}
