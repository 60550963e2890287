//! The console's JSON routes under `/console/api/`. Every route takes the signed-in
//! [`ConsoleSession`] (the cookie; state-changing routes also its CSRF token) and calls the same
//! domain use cases as the `/v1` routes, as the signed-in person in their organization.

use super::answers::*;
use super::{cleared_cookie, ConsoleSession};
use crate::api::envelope::List;
use crate::api::extract::{ApiBody, ApiJson, ApiQuery};
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
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

pub fn routes() -> Router<App> {
    Router::new()
        .route("/console/api/session", get(session))
        .route("/console/api/signout", post(sign_out))
        .route("/console/api/terms", get(terms))
        .route("/console/api/terms/agree", post(agree))
        .route("/console/api/models", get(models))
        .route("/console/api/chat/models", get(chat_models))
        .route("/console/api/videos/quote", post(quote))
        .route("/console/api/videos", get(list_videos).post(create_video))
        .route(
            "/console/api/videos/{video_id}",
            get(get_video).delete(delete_video),
        )
        .route("/console/api/videos/{video_id}/media", get(media))
        .route("/console/api/videos/{video_id}/cancel", post(cancel_video))
        .route("/console/api/videos/{video_id}/remix", post(remix_video))
        .route("/console/api/videos/{video_id}/extend", post(extend_video))
        .route("/console/api/videos/{video_id}/edit", post(edit_video))
        .route("/console/api/chat/completions", post(chat))
        .route("/console/api/keys", get(list_keys).post(create_key))
        .route("/console/api/keys/{key_id}", delete(revoke_key))
        .route(
            "/console/api/keys/{key_id}/limits",
            get(key_limits).post(set_key_limits),
        )
        .route("/console/api/usage", get(usage))
        .route("/console/api/uploads", post(create_upload))
        .route(
            "/console/api/uploads/{upload_id}/complete",
            post(complete_upload),
        )
        .route(
            "/console/api/webhooks",
            get(list_webhooks).post(create_webhook),
        )
        .route("/console/api/webhooks/{webhook_id}", delete(delete_webhook))
        .route(
            "/console/api/webhooks/{webhook_id}/rotate_secret",
            post(rotate_webhook_secret),
        )
        .route(
            "/console/api/webhooks/{webhook_id}/test",
            post(test_webhook),
        )
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

/// The exact quote of a create request before submitting it (same validation as admission).
async fn quote(
    State(app): State<App>,
    ConsoleSession(s): ConsoleSession,
    ApiBody(body): ApiBody<crate::domain::videos::create::VideoCreateRequest>,
) -> ApiResult<Json<crate::domain::videos::create::Quote>> {
    Ok(Json(
        crate::domain::videos::create::quote(app.context(), &s.caller, &body).await?,
    ))
}

/// The `/v1/videos` create use case itself: the same Idempotency-Key claim (scoped to the
/// signed-in person), video-create rate limits, budget and concurrency checks.
async fn create_video(
    State(app): State<App>,
    ConsoleSession(s): ConsoleSession,
    headers: axum::http::HeaderMap,
    ApiBody(body): ApiBody<crate::domain::videos::create::VideoCreateRequest>,
) -> ApiResult<Response> {
    use crate::api::video_answers::{idempotency_key, render_create};
    let workflow = app.workflow();
    let key = idempotency_key(&headers);
    let answer = crate::domain::videos::create::create(
        app.context(),
        workflow.as_deref(),
        &s.caller,
        key,
        &body,
    )
    .await?;
    Ok(render_create(answer))
}

/// A remix of a completed video as the signed-in person (JSON: `{"prompt": …}`).
async fn remix_video(
    State(app): State<App>,
    ConsoleSession(s): ConsoleSession,
    Path(video_id): Path<String>,
    headers: axum::http::HeaderMap,
    ApiBody(body): ApiBody<crate::domain::videos::remix::VideoRemixRequest>,
) -> ApiResult<Response> {
    use crate::api::video_answers::{idempotency_key, render_create};
    let workflow = app.workflow();
    let (cx, key) = (app.context(), idempotency_key(&headers));
    let answer = crate::domain::videos::remix::remix(
        cx,
        workflow.as_deref(),
        &s.caller,
        key,
        &video_id,
        &body,
    )
    .await?;
    Ok(render_create(answer))
}

/// An extension of a completed video as the signed-in person; the source is the video in the
/// path, never a file (the console links no decoder to check one).
async fn extend_video(
    State(app): State<App>,
    ConsoleSession(s): ConsoleSession,
    Path(video_id): Path<String>,
    headers: axum::http::HeaderMap,
    ApiJson(request): ApiJson<ConsoleVideoExtendRequest>,
) -> ApiResult<Response> {
    use crate::api::video_answers::{idempotency_key, render_create};
    let body = extension_request(video_id, request)?;
    let workflow = app.workflow();
    let (cx, key) = (app.context(), idempotency_key(&headers));
    let answer = crate::domain::videos::extensions::extend(
        cx,
        workflow.as_deref(),
        &s.caller,
        key,
        body,
        None,
    )
    .await?;
    Ok(render_create(answer))
}

/// The `/v1/videos/extensions` request a console extension of `video_id` stands for, checked
/// as that route checks it.
fn extension_request(
    video_id: String,
    request: ConsoleVideoExtendRequest,
) -> ApiResult<crate::domain::videos::extensions::VideoExtensionRequest> {
    use crate::domain::params::RequestBody;
    crate::domain::videos::extensions::VideoExtensionRequest {
        prompt: request.prompt,
        seconds: request.seconds,
        video: Some(crate::domain::videos::source_request::VideoReference { id: video_id }),
        model: None,
        characters: request.characters,
    }
    .check()
}

/// An edit of a completed video as the signed-in person.
async fn edit_video(
    State(app): State<App>,
    ConsoleSession(s): ConsoleSession,
    Path(video_id): Path<String>,
    headers: axum::http::HeaderMap,
    ApiJson(request): ApiJson<ConsoleVideoEditRequest>,
) -> ApiResult<Response> {
    use crate::api::video_answers::{idempotency_key, render_create};
    let body = crate::domain::videos::edits::VideoEditRequest {
        prompt: request.prompt,
        video: Some(crate::domain::videos::source_request::VideoReference { id: video_id }),
        model: None,
    };
    let workflow = app.workflow();
    let (cx, key) = (app.context(), idempotency_key(&headers));
    let caller = &s.caller;
    let answer =
        crate::domain::videos::edits::edit(cx, workflow.as_deref(), caller, key, body, None)
            .await?;
    Ok(render_create(answer))
}

/// An extension from the console: the source is the video in the path. The use case checks
/// the values (the prompt's length, the seconds against the model).
#[derive(serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"prompt": "the boat drifts under a bridge", "seconds": 4}))]
pub struct ConsoleVideoExtendRequest {
    #[schema(min_length = 1, max_length = 7000)]
    pub prompt: String,
    /// The new segment's length, within the model's range; the source and the segment together
    /// last at most 60 s.
    pub seconds: u32,
    #[schema(max_items = 2)]
    pub characters: Option<Vec<String>>,
}

/// An edit from the console: the source is the video in the path, its seconds and ratio kept.
#[derive(serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"prompt": "make it snow"}))]
pub struct ConsoleVideoEditRequest {
    #[schema(min_length = 1, max_length = 7000)]
    pub prompt: String,
}

async fn list_videos(
    State(app): State<App>,
    ConsoleSession(s): ConsoleSession,
    ApiQuery(params): ApiQuery<crate::domain::videos::queries::VideoListQuery>,
) -> ApiResult<Json<List<crate::domain::videos::Video>>> {
    let page = crate::domain::videos::queries::list(app.context(), &s.caller, &params).await?;
    Ok(Json(List::page(page, |v| v.id.clone())))
}

async fn get_video(
    State(app): State<App>,
    ConsoleSession(s): ConsoleSession,
    Path(video_id): Path<String>,
) -> ApiResult<Json<crate::domain::videos::object::VideoDetail>> {
    Ok(Json(
        crate::domain::videos::queries::retrieve_detail(app.context(), &s.caller.org, &video_id)
            .await?,
    ))
}

async fn delete_video(
    State(app): State<App>,
    ConsoleSession(s): ConsoleSession,
    Path(video_id): Path<String>,
) -> ApiResult<Json<crate::api::envelope::Deleted>> {
    crate::domain::videos::queries::delete(app.context(), &s.caller, &video_id).await?;
    Ok(Json(crate::api::envelope::Deleted::new(video_id, "video")))
}

async fn cancel_video(
    State(app): State<App>,
    ConsoleSession(s): ConsoleSession,
    Path(video_id): Path<String>,
) -> ApiResult<Json<crate::domain::videos::Video>> {
    let workflow = app.workflow();
    Ok(Json(
        crate::domain::videos::cancel::cancel_for(
            app.context(),
            workflow.as_deref(),
            &app.engines,
            &s.caller,
            &video_id,
        )
        .await?,
    ))
}

/// Lifetime of the signed media URLs the console hands to `<video>` and `<img>`.
const MEDIA_URL_SECS: u64 = 10 * 60;

/// Short-lived signed URLs for a completed video's MP4 and thumbnail, so `<video src>` and a
/// download link work without headers (the blob store's own signed URLs, ranges included).
async fn media(
    State(app): State<App>,
    ConsoleSession(s): ConsoleSession,
    Path(video_id): Path<String>,
) -> ApiResult<Json<VideoMedia>> {
    let ttl = std::time::Duration::from_secs(MEDIA_URL_SECS);
    let links =
        crate::domain::videos::queries::media_links(app.context(), &s.caller.org, &video_id, ttl)
            .await?;
    Ok(Json(VideoMedia {
        object: "video.media",
        id: video_id,
        content_url: links.content_url,
        thumbnail_url: links.thumbnail_url,
        expires_in: links.ttl.as_secs(),
    }))
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
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Json<key_controls::KeyControls>> {
    let controls = key_controls::set_own(
        &app.accounts(),
        app.context().catalog,
        &s.caller.org,
        &s.caller.person,
        &key_id,
        &body,
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
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Json<Value>> {
    let key = headers.get(crate::domain::idempotency::HEADER);
    let key = key.map(|v| v.as_bytes());
    Ok(Json(
        crate::domain::files::uploads::create(app.context(), &s.caller, key, body).await?,
    ))
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
