//! The `/v1/videos` routes.

use crate::api::envelope::List;
use crate::api::extract::{ApiQuery, JsonOrFormBody, JsonOrFormWithVideo};
use crate::api::operation::{
    link, list_of, path_param, query_param, schema, Answer, Body, Declared, Kind, Link, Operation,
    Param, DEFAULT, IDEMPOTENCY_KEY, ORDER, RANGE, VIDEO_ID,
};
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
use axum::{Json, Router};
use serde::Deserialize;

const VIDEO_LINKS: &[Link] = &[
    link("GetVideo", &RETRIEVE_VIDEO, &VIDEO_ID),
    link("GetVideoContent", &DOWNLOAD_VIDEO_CONTENT, &VIDEO_ID),
    link("GetVideoThumbnail", &DOWNLOAD_VIDEO_THUMBNAIL, &VIDEO_ID),
    link("DeleteVideo", &DELETE_VIDEO, &VIDEO_ID),
];

const VIDEO_BYTES: &[&str] = &["video/mp4", "image/jpeg"];

/// The query of `GET /v1/videos` and of the console's list: the page and reelgate's filters,
/// which compose with it (`domain/videos/queries.rs`).
pub const VIDEO_LIST_PARAMS: &[Param] = &[
    query_param(
        "limit",
        Kind::Int(1, crate::domain::videos::queries::MAX_PAGE as i64),
        "Page size (default 20). Every page but the last holds this many jobs, unless a filtered \
         list read its budget of 5,000 jobs first (then `has_more` is true).",
    ),
    query_param(
        "after",
        Kind::Str,
        "A video id: the page starts after it. Send the previous page's `last_id`.",
    ),
    ORDER,
    query_param(
        "status",
        Kind::OneOf(crate::domain::videos::queries::STATUS_FILTERS),
        "Only jobs in this status, or `running`: any status before the end (reelgate).",
    ),
    query_param(
        "model",
        Kind::Str,
        "Only jobs of this video model id, exactly; an id the catalog does not have is a 400 \
         (reelgate).",
    ),
    query_param(
        "q",
        Kind::Str,
        "Only jobs whose prompt, as it was sent, contains this text, ignoring case; trimmed, at \
         most 200 characters, empty for none (reelgate).",
    ),
];

pub const CREATE_VIDEO: Operation = Operation {
    method: "POST",
    path: "/v1/videos",
    id: "CreateVideo",
    tag: "videos",
    summary: "Start a render job (quoted and reserved at submission)",
    params: &[IDEMPOTENCY_KEY],
    body: Body::JsonOrForm(schema::<crate::domain::videos::create_request::VideoCreateRequest>),
    ok: &[(200, Answer::PolledVideo)],
    errors: &[400, 401, 402, 403, 404, 409, 413, 429, 503],
    links: VIDEO_LINKS,
    ..DEFAULT
};

pub const LIST_VIDEOS: Operation = Operation {
    path: "/v1/videos",
    id: "ListVideos",
    tag: "videos",
    summary:
        "List the organization's video jobs, optionally filtered by status, model or prompt text",
    params: VIDEO_LIST_PARAMS,
    ok: &[(200, Answer::Json(list_of::<crate::domain::videos::Video>))],
    errors: &[400, 401],
    ..DEFAULT
};

pub const LIST_VIDEO_MODELS: Operation = Operation {
    path: "/v1/videos/models",
    id: "ListVideoModels",
    tag: "videos",
    summary: "The video models the plan is entitled to, with prices per second",
    ok: &[(
        200,
        Answer::Json(list_of::<crate::domain::videos::queries::VideoModelObject>),
    )],
    ..DEFAULT
};

pub const RETRIEVE_VIDEO: Operation = Operation {
    path: "/v1/videos/{video_id}",
    id: "RetrieveVideo",
    tag: "videos",
    summary: "A video job (poll it: `openai-poll-after-ms` while it runs)",
    params: &[VIDEO_ID],
    ok: &[(200, Answer::PolledVideo)],
    errors: &[401, 404],
    ..DEFAULT
};

pub const DELETE_VIDEO: Operation = Operation {
    method: "DELETE",
    path: "/v1/videos/{video_id}",
    id: "DeleteVideo",
    tag: "videos",
    summary: "Delete a finished job and its outputs",
    params: &[VIDEO_ID],
    ok: &[(200, Answer::Json(schema::<crate::api::envelope::Deleted>))],
    errors: &[401, 404, 409],
    ..DEFAULT
};

pub const DOWNLOAD_VIDEO_CONTENT: Operation = Operation {
    path: "/v1/videos/{video_id}/content",
    id: "DownloadVideoContent",
    tag: "videos",
    summary: "The MP4 of a completed job (`variant=thumbnail`: its JPEG thumbnail; \
              `variant=spritesheet`: 16 frames in one JPEG grid of 4 columns)",
    params: &[
        VIDEO_ID,
        query_param(
            "variant",
            Kind::OneOf(&["video", "thumbnail", "spritesheet"]),
            "`video` (default), `thumbnail` or `spritesheet`.",
        ),
        RANGE,
    ],
    ok: &[
        (200, Answer::Bytes(VIDEO_BYTES)),
        (206, Answer::Bytes(VIDEO_BYTES)),
        (302, Answer::Redirect),
    ],
    errors: &[400, 401, 404, 416],
    ..DEFAULT
};

pub const DOWNLOAD_VIDEO_THUMBNAIL: Operation = Operation {
    path: "/v1/videos/{video_id}/thumbnail",
    id: "DownloadVideoThumbnail",
    tag: "videos",
    summary: "The JPEG thumbnail (480 px wide) of a completed job",
    params: &[VIDEO_ID, RANGE],
    ok: &[
        (200, Answer::Bytes(&["image/jpeg"])),
        (206, Answer::Bytes(&["image/jpeg"])),
        (302, Answer::Redirect),
    ],
    errors: &[400, 401, 404, 416],
    ..DEFAULT
};

pub const CANCEL_VIDEO: Operation = Operation {
    method: "POST",
    path: "/v1/videos/{video_id}/cancel",
    id: "CancelVideo",
    tag: "videos",
    summary: "Cancel a running job: unbilled, its reservation released",
    params: &[VIDEO_ID],
    ok: &[(200, Answer::Json(schema::<crate::domain::videos::Video>))],
    errors: &[401, 404, 409],
    ..DEFAULT
};

pub const REMIX_VIDEO: Operation = Operation {
    method: "POST",
    path: "/v1/videos/{video_id}/remix",
    id: "RemixVideo",
    tag: "videos",
    summary: "A new job on a completed video's model, seconds, aspect ratio and inputs, \
              with a new prompt (quoted, reserved and billed as a create)",
    params: &[
        path_param("video_id", "The completed video to remix (`video_…`)."),
        IDEMPOTENCY_KEY,
    ],
    body: Body::JsonOrForm(schema::<crate::domain::videos::remix::VideoRemixRequest>),
    ok: &[(200, Answer::PolledVideo)],
    errors: &[400, 401, 402, 403, 404, 409, 413, 429, 503],
    links: VIDEO_LINKS,
    ..DEFAULT
};

pub const EXTEND_VIDEO: Operation = Operation {
    method: "POST",
    path: "/v1/videos/extensions",
    id: "ExtendVideo",
    tag: "videos",
    summary: "A new job whose output is a source video (a completed video by id, or an MP4 \
              file in a form) followed by a new segment of `seconds` (continued by the \
              engine, or rendered from its last frame, and stitched after it; quoted, \
              reserved and billed for the segment's seconds)",
    params: &[IDEMPOTENCY_KEY],
    body: Body::JsonOrForm(schema::<crate::domain::videos::extensions::VideoExtensionRequest>),
    ok: &[(200, Answer::PolledVideo)],
    errors: &[400, 401, 402, 403, 404, 409, 413, 429, 503],
    links: VIDEO_LINKS,
    ..DEFAULT
};

pub const EDIT_VIDEO: Operation = Operation {
    method: "POST",
    path: "/v1/videos/edits",
    id: "EditVideo",
    tag: "videos",
    summary: "A new job that re-renders a source video (a completed video by id, or an MP4 \
              file in a form) guided by the prompt, at its seconds and aspect ratio, on a \
              model with video-to-video (quoted, reserved and billed as a create)",
    params: &[IDEMPOTENCY_KEY],
    body: Body::JsonOrForm(schema::<crate::domain::videos::edits::VideoEditRequest>),
    ok: &[(200, Answer::PolledVideo)],
    errors: &[400, 401, 402, 403, 404, 409, 413, 429, 503],
    links: VIDEO_LINKS,
    ..DEFAULT
};

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
    Router::new()
        .declared(&LIST_VIDEOS, list)
        .declared(&CREATE_VIDEO, create)
}

pub fn models_route() -> Router<App> {
    Router::new().declared(&LIST_VIDEO_MODELS, models)
}

pub fn item_route() -> Router<App> {
    Router::new()
        .declared(&RETRIEVE_VIDEO, retrieve)
        .declared(&DELETE_VIDEO, delete)
}

pub fn content_route() -> Router<App> {
    Router::new().declared(&DOWNLOAD_VIDEO_CONTENT, content)
}

pub fn thumbnail_route() -> Router<App> {
    Router::new().declared(&DOWNLOAD_VIDEO_THUMBNAIL, thumbnail)
}

pub fn cancel_route() -> Router<App> {
    Router::new().declared(&CANCEL_VIDEO, cancel)
}

pub fn extensions_route() -> Router<App> {
    Router::new().declared(&EXTEND_VIDEO, extend)
}

pub fn edits_route() -> Router<App> {
    Router::new().declared(&EDIT_VIDEO, edit)
}

pub fn remix_route() -> Router<App> {
    Router::new().declared(&REMIX_VIDEO, remix)
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
