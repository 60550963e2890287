//! The console's video routes under `/console/api/videos`: quote, create, remix, extend and edit
//! as the signed-in person ([`ConsoleSession`]; state changes with its CSRF token), and the list,
//! the detail, cancel, delete and the signed media links, through the same domain use cases as
//! `/v1/videos`.

use super::answers::VideoMedia;
use super::ConsoleSession;
use crate::api::envelope::List;
use crate::api::extract::{ApiBody, ApiJson, ApiQuery};
use crate::api::operation::{
    link, list_of, path_param, schema, Answer, Auth, Body, Declared, Link, Operation, DEFAULT,
    VIDEO_ID,
};
use crate::api::videos::VIDEO_LIST_PARAMS;
use crate::app::App;
use crate::domain::error::ApiResult;
use axum::extract::Path;
use axum::extract::State;
use axum::response::Response;
use axum::{Json, Router};

const CONSOLE_VIDEO_LINKS: &[Link] = &[
    link("GetConsoleVideo", &CONSOLE_RETRIEVE_VIDEO, &VIDEO_ID),
    link("GetConsoleVideoMedia", &CONSOLE_VIDEO_MEDIA, &VIDEO_ID),
];

pub const CONSOLE_QUOTE_VIDEO: Operation = Operation {
    method: "POST",
    path: "/console/api/videos/quote",
    id: "ConsoleQuoteVideo",
    tag: "console",
    summary: "The exact quote of a create request",
    auth: Auth::ConsoleCsrf,
    body: Body::Json(schema::<crate::domain::videos::create_request::VideoCreateRequest>),
    ok: &[(
        200,
        Answer::Json(schema::<crate::domain::videos::create::Quote>),
    )],
    errors: &[400, 401, 403, 404, 413],
    ..DEFAULT
};

pub const CONSOLE_LIST_VIDEOS: Operation = Operation {
    path: "/console/api/videos",
    id: "ConsoleListVideos",
    tag: "console",
    summary: "The organization's video jobs, optionally filtered by status, model or prompt text",
    auth: Auth::Console,
    params: VIDEO_LIST_PARAMS,
    ok: &[(200, Answer::Json(list_of::<crate::domain::videos::Video>))],
    errors: &[400, 401],
    ..DEFAULT
};

pub const CONSOLE_CREATE_VIDEO: Operation = Operation {
    method: "POST",
    path: "/console/api/videos",
    id: "ConsoleCreateVideo",
    tag: "console",
    summary: "Start a render job as the signed-in person",
    auth: Auth::ConsoleCsrf,
    body: Body::Json(schema::<crate::domain::videos::create_request::VideoCreateRequest>),
    ok: &[(200, Answer::Json(schema::<crate::domain::videos::Video>))],
    errors: &[400, 401, 402, 403, 404, 413, 429, 503],
    links: CONSOLE_VIDEO_LINKS,
    ..DEFAULT
};

pub const CONSOLE_RETRIEVE_VIDEO: Operation = Operation {
    path: "/console/api/videos/{video_id}",
    id: "ConsoleRetrieveVideo",
    tag: "console",
    summary: "A video job with its page's details (the rendered prompt, inputs, timings)",
    auth: Auth::Console,
    params: &[VIDEO_ID],
    ok: &[(
        200,
        Answer::Json(schema::<crate::domain::videos::object::VideoDetail>),
    )],
    errors: &[401, 404],
    ..DEFAULT
};

pub const CONSOLE_DELETE_VIDEO: Operation = Operation {
    method: "DELETE",
    path: "/console/api/videos/{video_id}",
    id: "ConsoleDeleteVideo",
    tag: "console",
    summary: "Delete a finished job and its outputs",
    auth: Auth::ConsoleCsrf,
    params: &[VIDEO_ID],
    ok: &[(200, Answer::Json(schema::<crate::api::envelope::Deleted>))],
    errors: &[401, 403, 404, 409],
    ..DEFAULT
};

pub const CONSOLE_VIDEO_MEDIA: Operation = Operation {
    path: "/console/api/videos/{video_id}/media",
    id: "ConsoleVideoMedia",
    tag: "console",
    summary: "Short-lived signed URLs of a completed job's MP4 and thumbnail",
    auth: Auth::Console,
    params: &[VIDEO_ID],
    ok: &[(
        200,
        Answer::Json(schema::<crate::api::console::answers::VideoMedia>),
    )],
    errors: &[400, 401, 404],
    ..DEFAULT
};

pub const CONSOLE_CANCEL_VIDEO: Operation = Operation {
    method: "POST",
    path: "/console/api/videos/{video_id}/cancel",
    id: "ConsoleCancelVideo",
    tag: "console",
    summary: "Cancel a running job: unbilled, its reservation released",
    auth: Auth::ConsoleCsrf,
    params: &[VIDEO_ID],
    ok: &[(200, Answer::Json(schema::<crate::domain::videos::Video>))],
    errors: &[401, 403, 404, 409],
    ..DEFAULT
};

pub const CONSOLE_REMIX_VIDEO: Operation = Operation {
    method: "POST",
    path: "/console/api/videos/{video_id}/remix",
    id: "ConsoleRemixVideo",
    tag: "console",
    summary: "Remix a completed video as the signed-in person",
    auth: Auth::ConsoleCsrf,
    params: &[path_param(
        "video_id",
        "The completed video to remix (`video_…`).",
    )],
    body: Body::Json(schema::<crate::domain::videos::remix::VideoRemixRequest>),
    ok: &[(200, Answer::Json(schema::<crate::domain::videos::Video>))],
    errors: &[400, 401, 402, 403, 404, 409, 413, 429, 503],
    links: CONSOLE_VIDEO_LINKS,
};

pub const CONSOLE_EXTEND_VIDEO: Operation = Operation {
    method: "POST",
    path: "/console/api/videos/{video_id}/extend",
    id: "ConsoleExtendVideo",
    tag: "console",
    summary: "Extend a completed video as the signed-in person",
    auth: Auth::ConsoleCsrf,
    params: &[path_param(
        "video_id",
        "The completed video to extend (`video_…`).",
    )],
    body: Body::Json(schema::<crate::api::console::videos::ConsoleVideoExtendRequest>),
    ok: &[(200, Answer::Json(schema::<crate::domain::videos::Video>))],
    errors: &[400, 401, 402, 403, 404, 409, 413, 429, 503],
    links: CONSOLE_VIDEO_LINKS,
};

pub const CONSOLE_EDIT_VIDEO: Operation = Operation {
    method: "POST",
    path: "/console/api/videos/{video_id}/edit",
    id: "ConsoleEditVideo",
    tag: "console",
    summary: "Edit a completed video as the signed-in person",
    auth: Auth::ConsoleCsrf,
    params: &[path_param(
        "video_id",
        "The completed video to edit (`video_…`).",
    )],
    body: Body::Json(schema::<crate::api::console::videos::ConsoleVideoEditRequest>),
    ok: &[(200, Answer::Json(schema::<crate::domain::videos::Video>))],
    errors: &[400, 401, 402, 403, 404, 409, 413, 429, 503],
    links: CONSOLE_VIDEO_LINKS,
};

/// Every console video route.
pub fn routes() -> Router<App> {
    admission_routes().merge(cancel_routes())
}

/// The console's video routes but cancel: on AWS one function, and cancel another, because
/// stopping the provider's render links the video engines (and, through their submissions, the
/// image decoders), which nothing else here uses.
pub fn admission_routes() -> Router<App> {
    Router::new()
        .declared(&CONSOLE_QUOTE_VIDEO, quote)
        .declared(&CONSOLE_LIST_VIDEOS, list_videos)
        .declared(&CONSOLE_CREATE_VIDEO, create_video)
        .declared(&CONSOLE_RETRIEVE_VIDEO, get_video)
        .declared(&CONSOLE_DELETE_VIDEO, delete_video)
        .declared(&CONSOLE_VIDEO_MEDIA, media)
        .declared(&CONSOLE_REMIX_VIDEO, remix_video)
        .declared(&CONSOLE_EXTEND_VIDEO, extend_video)
        .declared(&CONSOLE_EDIT_VIDEO, edit_video)
}

/// The Cancel button's route.
pub fn cancel_routes() -> Router<App> {
    Router::new().declared(&CONSOLE_CANCEL_VIDEO, cancel_video)
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
