//! The `/v1/videos` routes.

use crate::api::envelope::List;
use crate::api::extract::{ApiQuery, JsonOrFormBody, JsonOrFormWithVideo};
use crate::api::video_answers::{idempotency_key, render_create};
use crate::app::App;
use crate::domain::accounts::Caller;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::videos::{create, edits, extensions, remix, source_upload};
use crate::domain::videos::{
    output_blob_key, queries, spritesheet_blob_key, thumbnail_blob_key, Video,
};
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;

pub fn routes() -> Router<App> {
    Router::new()
        .merge(collection_route())
        .merge(models_route())
        .merge(crate::api::agreement::acceptance_route())
        .merge(item_route())
        .merge(content_route())
        .merge(thumbnail_route())
        .merge(cancel_route())
        .merge(remix_route())
        .merge(extensions_route())
        .merge(edits_route())
}

// One function per path (the unit a Lambda function serves, `api::PathRoutes`).

pub fn collection_route() -> Router<App> {
    Router::new().route("/v1/videos", get(list).post(create))
}

pub fn models_route() -> Router<App> {
    Router::new().route("/v1/videos/models", get(models))
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

pub fn extensions_route() -> Router<App> {
    Router::new().route("/v1/videos/extensions", post(extend))
}

pub fn edits_route() -> Router<App> {
    Router::new().route("/v1/videos/edits", post(edit))
}

pub fn remix_route() -> Router<App> {
    Router::new().route("/v1/videos/{video_id}/remix", post(remix))
}

async fn create(
    State(app): State<App>,
    caller: Caller,
    headers: HeaderMap,
    JsonOrFormBody(body): JsonOrFormBody<create::VideoCreateRequest>,
) -> ApiResult<Response> {
    let workflow = app.workflow();
    let key = idempotency_key(&headers);
    let answer = create::create(app.context(), workflow.as_deref(), &caller, key, &body).await?;
    Ok(render_create(answer))
}

async fn remix(
    State(app): State<App>,
    caller: Caller,
    Path(video_id): Path<String>,
    headers: HeaderMap,
    JsonOrFormBody(body): JsonOrFormBody<remix::VideoRemixRequest>,
) -> ApiResult<Response> {
    let workflow = app.workflow();
    let key = idempotency_key(&headers);
    let (cx, workflow) = (app.context(), workflow.as_deref());
    let answer = remix::remix(cx, workflow, &caller, key, &video_id, &body).await?;
    Ok(render_create(answer))
}

async fn extend(
    State(app): State<App>,
    caller: Caller,
    headers: HeaderMap,
    JsonOrFormWithVideo { body, video }: JsonOrFormWithVideo<extensions::VideoExtensionRequest>,
) -> ApiResult<Response> {
    let workflow = app.workflow();
    let key = idempotency_key(&headers);
    let (cx, workflow) = (app.context(), workflow.as_deref());
    let file = video.map(source_upload::file);
    let answer = extensions::extend(cx, workflow, &caller, key, body, file).await?;
    Ok(render_create(answer))
}

async fn edit(
    State(app): State<App>,
    caller: Caller,
    headers: HeaderMap,
    JsonOrFormWithVideo { body, video }: JsonOrFormWithVideo<edits::VideoEditRequest>,
) -> ApiResult<Response> {
    let workflow = app.workflow();
    let key = idempotency_key(&headers);
    let answer = edits::edit(
        app.context(),
        workflow.as_deref(),
        &caller,
        key,
        body,
        video.map(source_upload::file),
    )
    .await?;
    Ok(render_create(answer))
}

async fn retrieve(
    State(app): State<App>,
    caller: Caller,
    Path(video_id): Path<String>,
) -> ApiResult<Response> {
    Ok(crate::api::video_answers::with_poll_hint(
        queries::retrieve(app.context(), &caller.org, &video_id).await?,
    ))
}

async fn cancel(
    State(app): State<App>,
    caller: Caller,
    Path(video_id): Path<String>,
) -> ApiResult<Response> {
    let workflow = app.workflow();
    let video = crate::domain::videos::cancel::cancel_for(
        app.context(),
        workflow.as_deref(),
        &app.engines,
        &caller,
        &video_id,
    )
    .await?;
    Ok(crate::api::video_answers::with_poll_hint(video))
}

async fn list(
    State(app): State<App>,
    caller: Caller,
    ApiQuery(params): ApiQuery<queries::VideoListQuery>,
) -> ApiResult<Json<List<Video>>> {
    let page = queries::list(app.context(), &caller, &params).await?;
    Ok(Json(List::page(page, |v| v.id.clone())))
}

async fn models(
    State(app): State<App>,
    caller: Caller,
) -> ApiResult<Json<List<queries::VideoModelObject>>> {
    let data = queries::models(app.context(), &caller).await?;
    Ok(Json(List::whole(data, |m| m.id.clone())))
}

async fn delete(
    State(app): State<App>,
    caller: Caller,
    Path(video_id): Path<String>,
) -> ApiResult<Json<crate::api::envelope::Deleted>> {
    queries::delete(app.context(), &caller, &video_id).await?;
    Ok(Json(crate::api::envelope::Deleted::new(video_id, "video")))
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
        None | Some("video") => serve_video(&app, &caller, &video_id, &headers).await,
        // OpenAI's SDK asks for the thumbnail through the content route.
        Some("thumbnail") => serve_thumbnail(&app, &caller, &video_id, &headers).await,
        Some("spritesheet") => serve_spritesheet(&app, &caller, &video_id, &headers).await,
        Some(_) => Err(ApiError::invalid(
            "variant",
            "variant must be video, thumbnail or spritesheet.",
        )),
    }
}

/// The completed job's MP4, streamed or, where the host cannot carry it, redirected to.
async fn serve_video(
    app: &App,
    caller: &Caller,
    video_id: &str,
    headers: &HeaderMap,
) -> ApiResult<Response> {
    queries::retrieve_completed(app.context(), &caller.org, video_id, "content").await?;
    if app.settings.content_redirect {
        return crate::api::content::redirect_to_blob(app, &output_blob_key(&caller.org, video_id))
            .await;
    }
    crate::api::content::stream_blob(
        app.blobs.as_ref(),
        &output_blob_key(&caller.org, video_id),
        headers,
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
    let video =
        queries::retrieve_completed(app.context(), &caller.org, video_id, "thumbnail").await?;
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

/// The completed job's spritesheet: 16 frames through the clip in one JPEG grid of 4 columns.
/// Jobs completed before spritesheets were made have none (404).
async fn serve_spritesheet(
    app: &App,
    caller: &Caller,
    video_id: &str,
    headers: &HeaderMap,
) -> ApiResult<Response> {
    queries::retrieve_completed(app.context(), &caller.org, video_id, "spritesheet").await?;
    let key = spritesheet_blob_key(&caller.org, video_id);
    if app.blobs.head(&key).await?.is_none() {
        return Err(ApiError::not_found(
            "spritesheet_not_found",
            format!("Video {video_id} has no spritesheet."),
        ));
    }
    crate::api::content::stream_blob(app.blobs.as_ref(), &key, headers, Some("image/jpeg")).await
}
