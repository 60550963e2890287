//! The `/v1/videos` routes.

use crate::api::extract::{ApiQuery, JsonOrForm};
use crate::app::App;
use crate::domain::accounts::Caller;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::ids::is_valid;
use crate::domain::videos::*;
use crate::ports::store::Query;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

/// How long an SDK poller should wait between reads (OpenAI's SDK honours this header): the
/// spec recommends 10 to 30 seconds, since polling faster does not render faster.
pub const POLL_AFTER_MS: &str = "10000";

pub fn routes() -> Router<App> {
    Router::new()
        .merge(collection_route())
        .merge(models_route())
        .merge(acceptance_route())
        .merge(item_route())
        .merge(content_route())
        .merge(thumbnail_route())
        .merge(cancel_route())
}

// One function per path (the unit a Lambda function serves, `api::PathRoutes`).

pub fn collection_route() -> Router<App> {
    Router::new().route("/v1/videos", get(list).post(create))
}

pub fn models_route() -> Router<App> {
    Router::new().route("/v1/videos/models", get(models))
}

pub fn acceptance_route() -> Router<App> {
    Router::new().route(
        "/v1/videos/acceptance",
        get(crate::api::agreement::get_status).post(crate::api::agreement::accept),
    )
}

pub fn item_route() -> Router<App> {
    Router::new().route("/v1/videos/{video_id}", get(retrieve).delete(delete))
}

pub fn content_route() -> Router<App> {
    Router::new().route("/v1/videos/{video_id}/content", get(content))
}

pub fn thumbnail_route() -> Router<App> {
    Router::new().route("/v1/videos/{video_id}/thumbnail", get(thumbnail))
}

pub fn cancel_route() -> Router<App> {
    Router::new().route("/v1/videos/{video_id}/cancel", post(cancel))
}

fn with_poll_hint(video: Video) -> Response {
    let running = !video.is_terminal();
    let mut response = Json(video).into_response();
    if running {
        response.headers_mut().insert(
            "openai-poll-after-ms",
            axum::http::HeaderValue::from_static(POLL_AFTER_MS),
        );
    }
    response
}

fn not_found(video_id: &str) -> ApiError {
    ApiError::not_found(
        "video_not_found",
        format!("No video found with id '{video_id}'."),
    )
    .with_param("video_id")
}

/// A job of the caller's organization; another organization's job does not exist.
pub async fn find(app: &App, org: &str, video_id: &str) -> ApiResult<Video> {
    if !is_valid(video_id, "video") {
        return Err(not_found(video_id));
    }
    let it = app
        .store
        .get(&crate::domain::table_keys::job(org, video_id))
        .await?;
    it.as_ref()
        .and_then(Video::from_item)
        .ok_or_else(|| not_found(video_id))
}

async fn create(
    State(app): State<App>,
    caller: Caller,
    headers: HeaderMap,
    JsonOrForm(body): JsonOrForm,
) -> ApiResult<Response> {
    admit(&app, &caller, &headers, &body).await
}

/// The one admission path of a video create, for `/v1/videos` and the console alike: the
/// caller's `Idempotency-Key` claim, the video-create rate limits (key and organization), then
/// the use case's own checks (balance, key budget, concurrency) in one transaction.
pub async fn admit(
    app: &App,
    caller: &Caller,
    headers: &HeaderMap,
    body: &Value,
) -> ApiResult<Response> {
    use crate::domain::idempotency::{self as idem, Begin};
    let key = idem::key_from(headers.get(idem::HEADER).map(|v| v.as_bytes()))?;
    let fingerprint = idem::Fingerprint::new("videos").json(body).clone().finish();
    let claim = match idem::begin(
        app.context(),
        caller,
        "videos",
        key.as_deref(),
        &fingerprint,
    )
    .await?
    {
        Begin::Proceed(claim) => claim,
        Begin::Replay(first) => return Ok(replayed(first)),
        Begin::Resource(video_id) => {
            return Ok(with_poll_hint(find(app, &caller.org, &video_id).await?))
        }
    };
    let plan = app.accounts().org(&caller.org).await?.plan;
    let grant = match crate::api::rate_limits::acquire(
        app,
        caller,
        &plan,
        crate::domain::billing::rate_limits::Kind::VideoCreate,
        0,
    )
    .await
    {
        Ok(grant) => grant,
        Err(refused) => {
            idem::release(app.context(), claim).await;
            return Ok(refused);
        }
    };
    let workflow = app.workflow();
    let created = crate::domain::videos::create::create_with(
        app.context(),
        workflow.as_deref(),
        caller,
        body,
        claim.as_ref(),
    )
    .await;
    match created {
        Ok(video) => {
            let first = serde_json::to_value(&video)
                .map_err(|e| ApiError::internal("recording an idempotent answer", e))?;
            idem::finish(app.context(), claim, &first).await?;
            let mut response = with_poll_hint(video);
            crate::api::rate_limits::apply(&grant.status, response.headers_mut());
            Ok(response)
        }
        Err(e) => {
            idem::release(app.context(), claim).await;
            let mut response = e.into_response();
            crate::api::rate_limits::apply(&grant.status, response.headers_mut());
            Ok(response)
        }
    }
}

/// The first answer to an `Idempotency-Key`, sent again as it was.
fn replayed(first: Value) -> Response {
    let running = first["status"]
        .as_str()
        .is_some_and(|s| crate::domain::videos::record::RUNNING.contains(&s));
    let mut response = Json(first).into_response();
    if running {
        response.headers_mut().insert(
            "openai-poll-after-ms",
            axum::http::HeaderValue::from_static(POLL_AFTER_MS),
        );
    }
    response
}

async fn retrieve(
    State(app): State<App>,
    caller: Caller,
    Path(video_id): Path<String>,
) -> ApiResult<Response> {
    Ok(with_poll_hint(find(&app, &caller.org, &video_id).await?))
}

async fn cancel(
    State(app): State<App>,
    caller: Caller,
    Path(video_id): Path<String>,
) -> ApiResult<Response> {
    Ok(with_poll_hint(
        cancel_video(&app, &caller, &video_id).await?,
    ))
}

/// Cancels a running job of the caller's organization (`POST /v1/videos/{id}/cancel` and the
/// console): 404 for another organization's or an unknown job, 409 for a terminal one.
pub async fn cancel_video(app: &App, caller: &Caller, video_id: &str) -> ApiResult<Video> {
    find(app, &caller.org, video_id).await?;
    let workflow = app.workflow();
    let canceled = crate::domain::videos::cancel::cancel(
        app.context(),
        workflow.as_deref(),
        &app.engines,
        &caller.org,
        video_id,
    )
    .await?;
    let video = canceled.ok_or_else(|| not_found(video_id))?;
    tracing::info!(%video_id, org = %caller.org, key = %caller.key_id(), "video canceled");
    Ok(video)
}

#[derive(Deserialize)]
pub struct ListParams {
    limit: Option<String>,
    after: Option<String>,
    order: Option<String>,
}

async fn list(
    State(app): State<App>,
    caller: Caller,
    ApiQuery(params): ApiQuery<ListParams>,
) -> ApiResult<Json<Value>> {
    Ok(Json(list_videos(&app, &caller, &params).await?))
}

/// A page of the caller's organization's jobs (newest first unless `order=asc`), as a list
/// envelope; shared by `GET /v1/videos` and the console.
pub async fn list_videos(app: &App, caller: &Caller, params: &ListParams) -> ApiResult<Value> {
    let limit = match params.limit.as_deref() {
        None => 20,
        Some(raw) => match raw.parse::<usize>() {
            Ok(n) if (1..=100).contains(&n) => n,
            _ => {
                return Err(ApiError::invalid(
                    "limit",
                    "limit must be an integer from 1 to 100.",
                ))
            }
        },
    };
    let descending = match params.order.as_deref() {
        None | Some("desc") => true,
        Some("asc") => false,
        Some(_) => return Err(ApiError::invalid("order", "order must be asc or desc.")),
    };
    let after = match params.after.as_deref() {
        None | Some("") => None,
        Some(id) if is_valid(id, "video") => Some(crate::domain::table_keys::video_sk(id)),
        Some(_) => return Err(ApiError::invalid("after", "after must be a video id.")),
    };
    let mut q = Query::partition(crate::domain::table_keys::org_pk(&caller.org))
        .prefix(crate::domain::table_keys::VIDEO_PREFIX)
        .limit(limit)
        .after(after);
    if descending {
        q = q.descending();
    }
    let page = app.store.query(q).await?;
    let data: Vec<Video> = page.items.iter().filter_map(Video::from_item).collect();
    Ok(crate::api::envelope::list_envelope(
        &data,
        |v| v.id.clone(),
        page.last_sk.is_some(),
    ))
}

async fn models(State(app): State<App>, caller: Caller) -> ApiResult<Json<Value>> {
    Ok(Json(video_models(&app, &caller).await?))
}

/// The video models the caller's plan is entitled to, with their prices per second.
pub async fn video_models(app: &App, caller: &Caller) -> ApiResult<Value> {
    let org = app.accounts().org(&caller.org).await?;
    let data: Vec<Value> = app
        .catalog
        .video_models_for_plan(&org.plan)
        .map(|m| {
            let caps = app.catalog.capabilities(m);
            json!({
                "id": m.id,
                "object": "video_model",
                "name": m.name,
                "description": m.description,
                // Beyond the spec's fields (clients ignore unknown fields): what a create may send.
                "inputs": caps.inputs,
                "aspect_ratios": caps.aspect_ratios,
                "seconds": caps.seconds.map(|(min, max)| json!({"min": min, "max": max})),
                "native_audio": caps.native.audio,
                "pricing": m.pricing.iter().map(|p| json!({
                    "resolution": p.resolution,
                    "per_second": p.per_second.to_string(),
                    "currency": p.currency,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    Ok(json!({"object": "list", "data": data}))
}

async fn delete(
    State(app): State<App>,
    caller: Caller,
    Path(video_id): Path<String>,
) -> ApiResult<Json<Value>> {
    Ok(Json(delete_video(&app, &caller, &video_id).await?))
}

/// Deletes a finished job of the caller's organization with its output and thumbnail.
pub async fn delete_video(app: &App, caller: &Caller, video_id: &str) -> ApiResult<Value> {
    let video_id = video_id.to_owned();
    let video = find(app, &caller.org, &video_id).await?;
    if !video.is_terminal() {
        return Err(ApiError::conflict(format!(
            "Video {video_id} is still {}; it can be deleted once it has completed, failed or been canceled.",
            video.status
        )));
    }
    match app
        .store
        .delete(
            &crate::domain::table_keys::job(&caller.org, &video_id),
            Some(crate::domain::videos::record::is_terminal()),
        )
        .await
    {
        Ok(_) => {}
        Err(crate::ports::store::StoreError::ConditionFailed) => {
            return Err(ApiError::conflict(format!(
                "Video {video_id} changed state; try again."
            )))
        }
        Err(e) => return Err(e.into()),
    }
    app.blobs
        .delete(&output_blob_key(&caller.org, &video_id))
        .await?;
    app.blobs
        .delete(&thumbnail_blob_key(&caller.org, &video_id))
        .await?;
    tracing::info!(%video_id, org = %caller.org, key = %caller.key_id(), "video deleted");
    Ok(json!({"id": video_id, "object": "video", "deleted": true}))
}

pub fn require_completed(video: &Video, what: &str) -> ApiResult<()> {
    if video.status != STATUS_COMPLETED {
        return Err(ApiError::invalid(
            "video_id",
            format!(
                "The {what} is available once the video has completed; it is {}.",
                video.status
            ),
        ));
    }
    Ok(())
}

#[derive(Deserialize)]
struct ContentParams {
    variant: Option<String>,
}

async fn content(
    State(app): State<App>,
    caller: Caller,
    Path(video_id): Path<String>,
    ApiQuery(params): ApiQuery<ContentParams>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    match params.variant.as_deref() {
        None | Some("video") => {}
        // OpenAI's SDK asks for the thumbnail through the content route.
        Some("thumbnail") => return serve_thumbnail(&app, &caller, &video_id, &headers).await,
        Some(_) => {
            return Err(ApiError::invalid(
                "variant",
                "variant must be video or thumbnail.",
            ))
        }
    }
    let video = find(&app, &caller.org, &video_id).await?;
    require_completed(&video, "content")?;
    if app.settings.content_redirect {
        return crate::api::content::redirect_to_blob(
            &app,
            &output_blob_key(&caller.org, &video_id),
        )
        .await;
    }
    crate::api::content::stream_blob(
        app.blobs.as_ref(),
        &output_blob_key(&caller.org, &video_id),
        &headers,
        Some("video/mp4"),
    )
    .await
}

async fn thumbnail(
    State(app): State<App>,
    caller: Caller,
    Path(video_id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    serve_thumbnail(&app, &caller, &video_id, &headers).await
}

async fn serve_thumbnail(
    app: &App,
    caller: &Caller,
    video_id: &str,
    headers: &HeaderMap,
) -> ApiResult<Response> {
    let video = find(app, &caller.org, video_id).await?;
    require_completed(&video, "thumbnail")?;
    if !video.thumbnail {
        return Err(ApiError::not_found(
            "thumbnail_not_found",
            format!("Video {video_id} has no thumbnail."),
        ));
    }
    crate::api::content::stream_blob(
        app.blobs.as_ref(),
        &thumbnail_blob_key(&caller.org, video_id),
        headers,
        Some("image/jpeg"),
    )
    .await
}
