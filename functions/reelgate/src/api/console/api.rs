//! The console's JSON routes under `/console/api/` but its videos' (`videos.rs`). Every route takes the signed-in
//! [`ConsoleSession`] (the cookie; state-changing routes also its CSRF token) and calls the same
//! domain use cases as the `/v1` routes, as the signed-in person in their organization.

use super::answers::*;
use super::{cleared_cookie, ConsoleSession};
use crate::api::envelope::List;
use crate::api::extract::ApiBody;
use crate::api::operation::{
    link, list_of, schema, Answer, Auth, Body, Declared, Operation, DEFAULT, IDEMPOTENCY_KEY,
    KEY_ID, UPLOAD_ID, WEBHOOK_ID,
};
use crate::app::App;
use crate::domain::accounts::agreement::{self, AgreementStatus};
use crate::domain::accounts::console::Console;
use crate::domain::accounts::key_controls;
use crate::domain::error::ApiResult;
use crate::domain::webhooks;
use axum::extract::Path;
use axum::extract::State;
use axum::http::header::SET_COOKIE;
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use serde_json::{json, Value};

pub const CONSOLE_SESSION: Operation = Operation {
    path: "/console/api/session",
    id: "ConsoleSession",
    tag: "console",
    summary: "Who is signed in, and the session's CSRF token",
    auth: Auth::Console,
    ok: &[(
        200,
        Answer::Json(schema::<crate::api::console::answers::SessionInfo>),
    )],
    ..DEFAULT
};

pub const CONSOLE_SIGN_OUT: Operation = Operation {
    method: "POST",
    path: "/console/api/signout",
    id: "ConsoleSignOut",
    tag: "console",
    summary: "Revoke the session and clear its cookie",
    auth: Auth::ConsoleCsrf,
    ok: &[(
        200,
        Answer::Json(schema::<crate::api::console::answers::SignedOut>),
    )],
    errors: &[401, 403],
    ..DEFAULT
};

pub const CONSOLE_TERMS: Operation = Operation {
    path: "/console/api/terms",
    id: "ConsoleTerms",
    tag: "console",
    summary: "The current Video Service Terms and whether this person agreed",
    auth: Auth::Console,
    ok: &[(
        200,
        Answer::Json(schema::<crate::api::console::answers::Terms>),
    )],
    ..DEFAULT
};

pub const CONSOLE_AGREE_TO_TERMS: Operation = Operation {
    method: "POST",
    path: "/console/api/terms/agree",
    id: "ConsoleAgreeToTerms",
    tag: "console",
    summary: "Record agreement to the current terms (the only way to record it)",
    auth: Auth::ConsoleCsrf,
    ok: &[(
        200,
        Answer::Json(schema::<crate::domain::accounts::agreement::AgreementStatus>),
    )],
    errors: &[401, 403],
    ..DEFAULT
};

pub const CONSOLE_VIDEO_MODELS: Operation = Operation {
    path: "/console/api/models",
    id: "ConsoleVideoModels",
    tag: "console",
    summary: "The plan's video models with prices and the create form's limits",
    auth: Auth::Console,
    ok: &[(
        200,
        Answer::Json(schema::<crate::api::console::answers::ConsoleVideoModels>),
    )],
    ..DEFAULT
};

pub const CONSOLE_CHAT_MODELS: Operation = Operation {
    path: "/console/api/chat/models",
    id: "ConsoleChatModels",
    tag: "console",
    summary: "The chat models",
    auth: Auth::Console,
    ok: &[(
        200,
        Answer::Json(list_of::<crate::domain::chat::models::ModelObject>),
    )],
    ..DEFAULT
};

pub const CONSOLE_CHAT_COMPLETION: Operation = Operation {
    method: "POST",
    path: "/console/api/chat/completions",
    id: "ConsoleChatCompletion",
    tag: "console",
    summary: "A chat completion as the signed-in person",
    auth: Auth::ConsoleCsrf,
    body: Body::Json(schema::<crate::ports::upstream::request::ChatCompletionRequest>),
    ok: &[(
        200,
        Answer::JsonOrStream(schema::<crate::domain::chat::completion::ChatCompletion>),
    )],
    errors: &[400, 401, 402, 403, 404, 413, 502, 503, 504],
    ..DEFAULT
};

pub const CONSOLE_LIST_KEYS: Operation = Operation {
    path: "/console/api/keys",
    id: "ConsoleListKeys",
    tag: "console",
    summary: "The signed-in person's API keys (never their secrets)",
    auth: Auth::Console,
    ok: &[(
        200,
        Answer::Json(list_of::<crate::domain::accounts::ApiKeyInfo>),
    )],
    ..DEFAULT
};

pub const CONSOLE_CREATE_KEY: Operation = Operation {
    method: "POST",
    path: "/console/api/keys",
    id: "ConsoleCreateKey",
    tag: "console",
    summary: "Create an API key; its secret is in this answer only",
    auth: Auth::ConsoleCsrf,
    ok: &[(
        200,
        Answer::Json(schema::<crate::api::console::answers::ApiKeyCreated>),
    )],
    errors: &[401, 403],
    links: &[link("RevokeKey", &CONSOLE_REVOKE_KEY, &KEY_ID)],
    ..DEFAULT
};

pub const CONSOLE_REVOKE_KEY: Operation = Operation {
    method: "DELETE",
    path: "/console/api/keys/{key_id}",
    id: "ConsoleRevokeKey",
    tag: "console",
    summary: "Revoke one of the signed-in person's API keys",
    auth: Auth::ConsoleCsrf,
    params: &[KEY_ID],
    ok: &[(
        200,
        Answer::Json(schema::<crate::api::console::answers::ApiKeyRevoked>),
    )],
    errors: &[401, 403, 404],
    ..DEFAULT
};

pub const CONSOLE_KEY_LIMITS: Operation = Operation {
    path: "/console/api/keys/{key_id}/limits",
    id: "ConsoleKeyLimits",
    tag: "console",
    summary: "One of the signed-in person's keys: its effective rate limits (overrides over \
              the plan's per-key limits) and its monthly budget with this month's committed amount",
    auth: Auth::Console,
    params: &[KEY_ID],
    ok: &[(
        200,
        Answer::Json(schema::<crate::domain::accounts::key_controls::KeyControls>),
    )],
    errors: &[401, 404],
    ..DEFAULT
};

pub const CONSOLE_SET_KEY_LIMITS: Operation = Operation {
    method: "POST",
    path: "/console/api/keys/{key_id}/limits",
    id: "ConsoleSetKeyLimits",
    tag: "console",
    summary: "Set or clear one of the signed-in person's keys' rate-limit overrides and monthly \
              budget, never above the plan's per-key limits",
    auth: Auth::ConsoleCsrf,
    params: &[KEY_ID],
    body: Body::Json(schema::<crate::domain::accounts::key_controls::KeyLimitsRequest>),
    ok: &[(
        200,
        Answer::Json(schema::<crate::domain::accounts::key_controls::KeyControls>),
    )],
    errors: &[400, 401, 403, 404],
    ..DEFAULT
};

pub const CONSOLE_USAGE: Operation = Operation {
    path: "/console/api/usage",
    id: "ConsoleUsage",
    tag: "console",
    summary: "Balance, reservations of renders in flight, recent charges",
    auth: Auth::Console,
    ok: &[(
        200,
        Answer::Json(schema::<crate::api::console::answers::ConsoleUsage>),
    )],
    ..DEFAULT
};

pub const CONSOLE_CREATE_UPLOAD: Operation = Operation {
    method: "POST",
    path: "/console/api/uploads",
    id: "ConsoleCreateUpload",
    tag: "console",
    summary: "Reserve a direct upload for a new video's frame or reference: PUT, then complete",
    auth: Auth::ConsoleCsrf,
    params: &[IDEMPOTENCY_KEY],
    body: Body::Json(schema::<crate::domain::files::uploads::UploadCreateRequest>),
    ok: &[(
        200,
        Answer::Json(schema::<crate::domain::files::uploads::Upload>),
    )],
    errors: &[400, 401, 403, 409, 413],
    links: &[link("CompleteUpload", &CONSOLE_COMPLETE_UPLOAD, &UPLOAD_ID)],
};

pub const CONSOLE_COMPLETE_UPLOAD: Operation = Operation {
    method: "POST",
    path: "/console/api/uploads/{upload_id}/complete",
    id: "ConsoleCompleteUpload",
    tag: "console",
    summary: "Register the uploaded bytes as a file (checked as POST /v1/files checks them)",
    auth: Auth::ConsoleCsrf,
    params: &[UPLOAD_ID],
    ok: &[(
        200,
        Answer::Json(schema::<crate::domain::files::FileObject>),
    )],
    errors: &[400, 401, 403, 404, 409, 413],
    ..DEFAULT
};

pub const CONSOLE_LIST_WEBHOOKS: Operation = Operation {
    path: "/console/api/webhooks",
    id: "ConsoleListWebhooks",
    tag: "console",
    summary: "The organization's webhook endpoints with their delivery records",
    auth: Auth::Console,
    ok: &[(
        200,
        Answer::Json(list_of::<crate::domain::webhooks::Endpoint>),
    )],
    ..DEFAULT
};

pub const CONSOLE_CREATE_WEBHOOK: Operation = Operation {
    method: "POST",
    path: "/console/api/webhooks",
    id: "ConsoleCreateWebhook",
    tag: "console",
    summary: "Register an endpoint for video events (its signing secret is in this answer only)",
    auth: Auth::ConsoleCsrf,
    body: Body::Json(schema::<crate::domain::webhooks::WebhookCreateRequest>),
    ok: &[(
        200,
        Answer::Json(schema::<crate::domain::webhooks::Endpoint>),
    )],
    errors: &[400, 401, 403],
    links: &[
        link(
            "RotateWebhookSecret",
            &CONSOLE_ROTATE_WEBHOOK_SECRET,
            &WEBHOOK_ID,
        ),
        link("DeleteWebhook", &CONSOLE_DELETE_WEBHOOK, &WEBHOOK_ID),
    ],
    ..DEFAULT
};

pub const CONSOLE_DELETE_WEBHOOK: Operation = Operation {
    method: "DELETE",
    path: "/console/api/webhooks/{webhook_id}",
    id: "ConsoleDeleteWebhook",
    tag: "console",
    summary: "Delete a webhook endpoint",
    auth: Auth::ConsoleCsrf,
    params: &[WEBHOOK_ID],
    ok: &[(200, Answer::Json(schema::<crate::api::envelope::Deleted>))],
    errors: &[401, 403, 404],
    ..DEFAULT
};

pub const CONSOLE_ROTATE_WEBHOOK_SECRET: Operation = Operation {
    method: "POST",
    path: "/console/api/webhooks/{webhook_id}/rotate_secret",
    id: "ConsoleRotateWebhookSecret",
    tag: "console",
    summary: "A new signing secret (shown once); the old one keeps signing for 24 hours",
    auth: Auth::ConsoleCsrf,
    params: &[WEBHOOK_ID],
    ok: &[(
        200,
        Answer::Json(schema::<crate::domain::webhooks::Endpoint>),
    )],
    errors: &[401, 403, 404],
    ..DEFAULT
};

pub const CONSOLE_SEND_WEBHOOK_TEST_EVENT: Operation = Operation {
    method: "POST",
    path: "/console/api/webhooks/{webhook_id}/test",
    id: "ConsoleSendWebhookTestEvent",
    tag: "console",
    summary: "Send one signed `webhook.test` event to the endpoint now and answer what the \
              receiver did (its status or the error, and how long it took); one test per \
              endpoint every 5 seconds",
    auth: Auth::ConsoleCsrf,
    params: &[WEBHOOK_ID],
    ok: &[(
        200,
        Answer::Json(schema::<crate::domain::webhooks::test_event::TestDelivery>),
    )],
    errors: &[401, 403, 404, 429],
    ..DEFAULT
};

/// The console's chat answer (streamed on AWS by a function of its own).
pub fn chat_routes() -> Router<App> {
    Router::new().declared(&CONSOLE_CHAT_COMPLETION, chat)
}

/// The account's JSON routes: everything here but the chat answer.
pub fn routes() -> Router<App> {
    Router::new()
        .declared(&CONSOLE_SESSION, session)
        .declared(&CONSOLE_SIGN_OUT, sign_out)
        .declared(&CONSOLE_TERMS, terms)
        .declared(&CONSOLE_AGREE_TO_TERMS, agree)
        .declared(&CONSOLE_VIDEO_MODELS, models)
        .declared(&CONSOLE_CHAT_MODELS, chat_models)
        .declared(&CONSOLE_LIST_KEYS, list_keys)
        .declared(&CONSOLE_CREATE_KEY, create_key)
        .declared(&CONSOLE_REVOKE_KEY, revoke_key)
        .declared(&CONSOLE_KEY_LIMITS, key_limits)
        .declared(&CONSOLE_SET_KEY_LIMITS, set_key_limits)
        .declared(&CONSOLE_USAGE, usage)
        .declared(&CONSOLE_CREATE_UPLOAD, create_upload)
        .declared(&CONSOLE_COMPLETE_UPLOAD, complete_upload)
        .declared(&CONSOLE_LIST_WEBHOOKS, list_webhooks)
        .declared(&CONSOLE_CREATE_WEBHOOK, create_webhook)
        .declared(&CONSOLE_DELETE_WEBHOOK, delete_webhook)
        .declared(&CONSOLE_ROTATE_WEBHOOK_SECRET, rotate_webhook_secret)
        .declared(&CONSOLE_SEND_WEBHOOK_TEST_EVENT, test_webhook)
}

/// Who is signed in, and the CSRF token the page sends with every state-changing request.
async fn session(
    State(app): State<App>,
    ConsoleSession(s): ConsoleSession,
) -> ApiResult<Json<SessionInfo>> {
    let person = app.accounts().person(&s.caller.person).await?;
    let org = app.accounts().org(&s.caller.org).await?;
    Ok(Json(SessionInfo {
        object: "console.session",
        user: SessionUser {
            id: person.id,
            email: person.email,
        },
        organization: SessionOrganization {
            id: org.id,
            name: org.name,
        },
        csrf_token: s.csrf_token,
        expires_at: s.expires_at,
    }))
}

/// Signs out: revokes the session server-side and clears the cookie.
async fn sign_out(
    State(app): State<App>,
    ConsoleSession(s): ConsoleSession,
) -> ApiResult<Response> {
    Console::new(app.store.as_ref())
        .revoke_session(&s.session_id)
        .await?;
    let mut response = Json(SignedOut {
        object: "console.session",
        signed_out: true,
    })
    .into_response();
    if let Ok(v) = HeaderValue::from_str(&cleared_cookie(&app.settings.public_base_url)) {
        response.headers_mut().insert(SET_COOKIE, v);
    }
    Ok(response)
}

/// The current terms version, its text (English and Japanese, from the catalog) and whether
/// this person agreed to it.
async fn terms(
    State(app): State<App>,
    ConsoleSession(s): ConsoleSession,
) -> ApiResult<Json<Terms>> {
    let status = agreement::status(app.context(), &s.caller.org, &s.caller.person).await?;
    let text = app.catalog.terms_text(&status.terms_version);
    Ok(Json(Terms {
        text: TermsText {
            en: text.map(|t| t.en.clone()),
            ja: text.map(|t| t.ja.clone()),
        },
        status,
    }))
}

/// Records agreement to the current terms version: the only path that records it.
async fn agree(
    State(app): State<App>,
    ConsoleSession(s): ConsoleSession,
) -> ApiResult<Json<AgreementStatus>> {
    Ok(Json(agreement::accept(app.context(), &s.caller).await?))
}

/// The video models the organization's plan is entitled to, with prices per second, the create
/// rules' limits for the form, and whether Japanese prompts can be translated.
async fn models(
    State(app): State<App>,
    ConsoleSession(s): ConsoleSession,
) -> ApiResult<Json<ConsoleVideoModels>> {
    let data = crate::domain::videos::queries::models(app.context(), &s.caller).await?;
    Ok(Json(ConsoleVideoModels {
        list: List::whole(data, |m| m.id.clone()),
        limits: CreateLimits::CURRENT,
        // Without a translator the New video page warns before a Japanese prompt is submitted
        // (it would fail `translation_unavailable`).
        translator: app.translator().is_some(),
    }))
}

/// The chat models (as `GET /v1/models` lists them), for the chat page's picker.
async fn chat_models(
    State(app): State<App>,
    ConsoleSession(_): ConsoleSession,
) -> Json<List<crate::domain::chat::models::ModelObject>> {
    Json(crate::api::models::chat_model_list(&app))
}

/// Chat completions as the signed-in person (streamed as server-sent events when asked).
async fn chat(
    State(app): State<App>,
    ConsoleSession(s): ConsoleSession,
    crate::api::extract::ChatBody(body): crate::api::extract::ChatBody,
) -> ApiResult<Response> {
    // A person who leaves a reply (Stop, or closing the page) wants the model to stop.
    let on_leave = crate::domain::chat::stream::OnLeave::EndNow;
    crate::api::chat_answers::complete(&app, s.caller, body, on_leave).await
}

async fn list_keys(
    State(app): State<App>,
    ConsoleSession(s): ConsoleSession,
) -> ApiResult<Json<List<crate::domain::accounts::ApiKeyInfo>>> {
    let keys = app
        .accounts()
        .list_api_keys(&s.caller.org, &s.caller.person)
        .await?;
    Ok(Json(List::whole(keys, |k| k.id.clone())))
}

/// Creates an API key for the signed-in person, with the optional `name` of the JSON body (an
/// empty body is a key without a name); the secret is in this answer only.
async fn create_key(
    State(app): State<App>,
    ConsoleSession(s): ConsoleSession,
    body: axum::body::Bytes,
) -> ApiResult<Json<ApiKeyCreated>> {
    let name = key_name(&body)?;
    let issued = app
        .accounts()
        .create_named_api_key(&s.caller.person, name.as_deref())
        .await?;
    Ok(Json(ApiKeyCreated {
        object: "api_key",
        id: issued.id,
        name: name
            .as_deref()
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(str::to_owned),
        secret: issued.secret,
        organization: issued.org,
    }))
}

/// The `name` of a new key's JSON body; none for an empty body or a body without one.
fn key_name(body: &[u8]) -> ApiResult<Option<String>> {
    let body: Value = if body.is_empty() {
        json!({})
    } else {
        serde_json::from_slice(body).map_err(|_| {
            crate::domain::error::ApiError::invalid("name", "The body must be a JSON object.")
        })?
    };
    match &body["name"] {
        Value::Null => Ok(None),
        Value::String(n) => Ok(Some(n.clone())),
        _ => Err(crate::domain::error::ApiError::invalid(
            "name",
            "name must be a string.",
        )),
    }
}

async fn revoke_key(
    State(app): State<App>,
    ConsoleSession(s): ConsoleSession,
    Path(key_id): Path<String>,
) -> ApiResult<Json<ApiKeyRevoked>> {
    app.accounts()
        .revoke_own_api_key(&s.caller.org, &s.caller.person, &key_id)
        .await?;
    Ok(Json(ApiKeyRevoked {
        object: "api_key",
        id: key_id,
        revoked: true,
    }))
}

/// One of the person's own keys: its effective limits (its overrides over the plan's per-key
/// limits) and its monthly budget with what is committed this month.
async fn key_limits(
    State(app): State<App>,
    ConsoleSession(s): ConsoleSession,
    Path(key_id): Path<String>,
) -> ApiResult<Json<key_controls::KeyControls>> {
    let controls = key_controls::show_own(
        &app.accounts(),
        app.context().catalog,
        &s.caller.org,
        &s.caller.person,
        &key_id,
    )
    .await?;
    Ok(Json(controls))
}

/// Replaces the overrides and the budget of one of the person's own keys, within the plan.
async fn set_key_limits(
    State(app): State<App>,
    ConsoleSession(s): ConsoleSession,
    Path(key_id): Path<String>,
    ApiBody(asked): ApiBody<key_controls::KeyLimitsRequest>,
) -> ApiResult<Json<key_controls::KeyControls>> {
    let controls = key_controls::set_own(
        &app.accounts(),
        app.context().catalog,
        &s.caller.org,
        &s.caller.person,
        &key_id,
        asked,
    )
    .await?;
    Ok(Json(controls))
}

/// Balance, reservations for renders in flight, recent charges, and the last 30 UTC days: per
/// day by model, key and kind (`days`, the chart) and summed over the days (`last_30_days`).
async fn usage(
    State(app): State<App>,
    ConsoleSession(s): ConsoleSession,
) -> ApiResult<Json<ConsoleUsage>> {
    let view = crate::domain::billing::usage::overview(app.context(), &s.caller.org).await?;
    Ok(Json(ConsoleUsage {
        object: "console.usage",
        last_30_days: view.last_30_days,
        days: view.days,
        organization: view.org.id,
        currency: view.org.currency,
        balance: view.org.balance.to_string(),
        reserved: view.org.reserved.to_string(),
        available: view.org.available.to_string(),
        renders_in_flight: view.org.renders_in_flight,
        recent_charges: view.recent_charges,
    }))
}

/// Starts a direct upload (a first or last frame, a reference) for the New video page: the
/// same use case as `POST /v1/uploads`, so the page PUTs the bytes to the answer's `upload_url`
/// (this server's signed URL locally, the bucket's presigned URL on AWS) with progress events.
/// An `Idempotency-Key`, when the page sends one, is claimed as on `/v1`.
async fn create_upload(
    State(app): State<App>,
    ConsoleSession(s): ConsoleSession,
    headers: axum::http::HeaderMap,
    ApiBody(req): ApiBody<crate::domain::files::uploads::UploadCreateRequest>,
) -> ApiResult<crate::domain::idempotency::Answered<crate::domain::files::uploads::Upload>> {
    let key = headers.get(crate::domain::idempotency::HEADER);
    let key = key.map(|v| v.as_bytes());
    crate::domain::files::uploads::create(app.context(), &s.caller, key, req).await
}

/// Registers the uploaded bytes as a file (sniffed and checked against the purpose, as
/// `POST /v1/uploads/{id}/complete` does); the page puts its `id` in the create request.
async fn complete_upload(
    State(app): State<App>,
    ConsoleSession(s): ConsoleSession,
    Path(upload_id): Path<String>,
) -> ApiResult<Json<crate::domain::files::FileObject>> {
    Ok(Json(
        crate::domain::files::uploads::complete(app.context(), &s.caller, &upload_id).await?,
    ))
}

/// The organization's webhook endpoints with their last attempts, status and disabled reason.
async fn list_webhooks(
    State(app): State<App>,
    ConsoleSession(s): ConsoleSession,
) -> ApiResult<Json<List<webhooks::Endpoint>>> {
    let data = webhooks::list(app.context(), &s.caller.org).await?;
    Ok(Json(List::whole(data, |e| e.id.clone())))
}

/// Registers an endpoint (the URL goes through the guarded fetcher's check); the signing
/// secret is in this answer only.
async fn create_webhook(
    State(app): State<App>,
    ConsoleSession(s): ConsoleSession,
    crate::api::extract::ApiBody(body): crate::api::extract::ApiBody<
        webhooks::WebhookCreateRequest,
    >,
) -> ApiResult<Json<webhooks::Endpoint>> {
    let created = webhooks::create(app.context(), &s.caller.org, body).await;
    Ok(Json(created.map_err(|e| with_local_hint(&app, e))?))
}

/// On the local server (`console_links_by_cli`), a refused URL's message ends with how to allow
/// a receiver on this machine for development; elsewhere, and for any other error, unchanged.
fn with_local_hint(
    app: &App,
    mut e: crate::domain::error::ApiError,
) -> crate::domain::error::ApiError {
    if app.settings.console_links_by_cli && e.code == "url_refused" {
        e.message = format!(
            "{} {}",
            e.message,
            webhooks::test_event::LOCAL_RECEIVER_HINT
        );
    }
    e
}

async fn delete_webhook(
    State(app): State<App>,
    ConsoleSession(s): ConsoleSession,
    Path(webhook_id): Path<String>,
) -> ApiResult<Json<crate::api::envelope::Deleted>> {
    webhooks::delete(app.context(), &s.caller.org, &webhook_id).await?;
    Ok(Json(crate::api::envelope::Deleted::new(
        webhook_id,
        "webhook_endpoint",
    )))
}

/// A new signing secret, shown once; the previous one keeps signing for a day.
async fn rotate_webhook_secret(
    State(app): State<App>,
    ConsoleSession(s): ConsoleSession,
    Path(webhook_id): Path<String>,
) -> ApiResult<Json<webhooks::Endpoint>> {
    Ok(Json(
        webhooks::rotate_secret(app.context(), &s.caller.org, &webhook_id).await?,
    ))
}

/// Sends one signed `webhook.test` event to the endpoint now and answers what the receiver did:
/// its status, or the error in plain words, and how long it took (`domain/webhooks/test_event.rs`;
/// one test per endpoint every few seconds, 429 otherwise). On the local server a refused URL's
/// answer carries the hint that says how to allow a receiver on this machine.
async fn test_webhook(
    State(app): State<App>,
    ConsoleSession(s): ConsoleSession,
    Path(webhook_id): Path<String>,
) -> ApiResult<Json<webhooks::test_event::TestDelivery>> {
    let mut sent = webhooks::test_event::send(app.context(), &s.caller.org, &webhook_id).await?;
    if app.settings.console_links_by_cli && sent.error_code.as_deref() == Some("url_refused") {
        sent.hint = Some(webhooks::test_event::LOCAL_RECEIVER_HINT.to_owned());
    }
    Ok(Json(sent))
}
