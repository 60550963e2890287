//! `GET /openapi.json`: the OpenAPI 3.1 document of the whole HTTP surface, built from the code.
//! Every operation the router serves is one row of [`OPERATIONS`] (the tests check the rows
//! against `API_ROUTES`, the console's routes and the router itself), with the statuses its
//! handler can answer; bodies are the domain's own types (`Video`, `FileObject`,
//! `AgreementStatus` derive `utoipa::ToSchema`) or the wire shapes in [`schemas`]. Every error
//! is the one envelope of `domain/error.rs`.
//!
//! The committed copy is `docs/openapi.json`; `functions/reelgate/tests/openapi.rs` fails when
//! it differs from [`document_json`] and says how to refresh it.

use crate::api::operation::{list_of, schema, Answer, Body, SchemaName};
use crate::app::App;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use std::collections::BTreeMap;
use utoipa::openapi::content::ContentBuilder;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::link::LinkBuilder;
use utoipa::openapi::path::{
    HttpMethod, OperationBuilder, ParameterBuilder, ParameterIn, PathItemBuilder,
};
use utoipa::openapi::request_body::RequestBodyBuilder;
use utoipa::openapi::response::{ResponseBuilder, ResponsesBuilder};
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::openapi::security::{
    ApiKey, ApiKeyValue, Http, HttpAuthScheme, SecurityRequirement, SecurityScheme,
};
use utoipa::openapi::tag::TagBuilder;
use utoipa::openapi::{InfoBuilder, OpenApi, PathsBuilder, Ref, RefOr, Required, ServerBuilder};
use utoipa::OpenApi as _;

/// The route serving the document (outside `/v1`, whose every endpoint needs an API key).
pub const PATH: &str = "/openapi.json";

pub fn routes() -> Router<App> {
    Router::new().route(PATH, get(serve))
}

async fn serve() -> Response {
    let mut response = document_json().into_response();
    let h = response.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// Who may call an operation.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Auth {
    None,
    /// `Authorization: Bearer <API key>`.
    ApiKey,
    /// The console's session cookie (reads).
    Console,
    /// The console's session cookie and its `X-CSRF-Token` (state changes).
    ConsoleCsrf,
}

/// A parameter's schema.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    Str,
    Int(i64, i64),
    OneOf(&'static [&'static str]),
}

/// Where a parameter is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum In {
    Path,
    Query,
    Header,
}

#[derive(Clone, Copy, Debug)]
pub struct Param {
    pub name: &'static str,
    pub at: In,
    pub kind: Kind,
    pub required: bool,
    pub about: &'static str,
}

const fn path(name: &'static str, about: &'static str) -> Param {
    Param {
        name,
        at: In::Path,
        kind: Kind::Str,
        required: true,
        about,
    }
}

const fn query(name: &'static str, kind: Kind, about: &'static str) -> Param {
    Param {
        name,
        at: In::Query,
        kind,
        required: false,
        about,
    }
}

const fn header(name: &'static str, about: &'static str) -> Param {
    Param {
        name,
        at: In::Header,
        kind: Kind::Str,
        required: false,
        about,
    }
}

const IDEMPOTENCY_KEY: Param = header(
    "Idempotency-Key",
    "Retrying with the same key and body answers the first answer again instead of acting twice.",
);
const RANGE: Param = header("Range", "One byte range, e.g. `bytes=0-1023`.");
const ORDER: Param = query(
    "order",
    Kind::OneOf(&["asc", "desc"]),
    "Sort by creation time (default `desc`).",
);

/// The query of `GET /v1/videos` and of the console's list: the page and reelgate's filters,
/// which compose with it (`domain/videos/queries.rs`).
const VIDEO_LIST_PARAMS: &[Param] = &[
    query(
        "limit",
        Kind::Int(1, crate::domain::videos::queries::MAX_PAGE as i64),
        "Page size (default 20). Every page but the last holds this many jobs, unless a filtered \
         list read its budget of 5,000 jobs first (then `has_more` is true).",
    ),
    query(
        "after",
        Kind::Str,
        "A video id: the page starts after it. Send the previous page's `last_id`.",
    ),
    ORDER,
    query(
        "status",
        Kind::OneOf(crate::domain::videos::queries::STATUS_FILTERS),
        "Only jobs in this status, or `running`: any status before the end (reelgate).",
    ),
    query(
        "model",
        Kind::Str,
        "Only jobs of this video model id, exactly; an id the catalog does not have is a 400 \
         (reelgate).",
    ),
    query(
        "q",
        Kind::Str,
        "Only jobs whose prompt, as it was sent, contains this text, ignoring case; trimmed, at \
         most 200 characters, empty for none (reelgate).",
    ),
];

/// An OpenAPI link: after this operation, `param` of operation `op` is `expr`.
#[derive(Clone, Copy, Debug)]
pub struct Link {
    pub name: &'static str,
    pub op: &'static str,
    pub param: &'static str,
    pub expr: &'static str,
}

const fn link(name: &'static str, op: &'static str, param: &'static str) -> Link {
    Link {
        name,
        op,
        param,
        expr: "$response.body#/id",
    }
}

/// One operation of the router.
#[derive(Clone, Copy, Debug)]
pub struct Operation {
    pub method: &'static str,
    pub path: &'static str,
    pub id: &'static str,
    pub tag: &'static str,
    pub summary: &'static str,
    pub auth: Auth,
    pub params: &'static [Param],
    pub body: Body,
    pub ok: &'static [(u16, Answer)],
    /// Every error status the handler (with its extractors) can answer.
    pub errors: &'static [u16],
    pub links: &'static [Link],
}

const DEFAULT: Operation = Operation {
    method: "GET",
    path: "",
    id: "",
    tag: "",
    summary: "",
    auth: Auth::ApiKey,
    params: &[],
    body: Body::None,
    ok: &[],
    errors: &[401],
    links: &[],
};

const VIDEO_BYTES: &[&str] = &["video/mp4", "image/jpeg"];
const VIDEO_LINKS: &[Link] = &[
    link("GetVideo", "RetrieveVideo", "video_id"),
    link("GetVideoContent", "DownloadVideoContent", "video_id"),
    link("GetVideoThumbnail", "DownloadVideoThumbnail", "video_id"),
    link("DeleteVideo", "DeleteVideo", "video_id"),
];
const CHARACTER_LINKS: &[Link] = &[
    link("GetCharacter", "RetrieveVideoCharacter", "character_id"),
    link("DeleteCharacter", "DeleteVideoCharacter", "character_id"),
];
const FILE_LINKS: &[Link] = &[
    link("GetFile", "RetrieveFile", "file_id"),
    link("GetFileContent", "DownloadFileContent", "file_id"),
    link("DeleteFile", "DeleteFile", "file_id"),
];
const RESPONSE_LINKS: &[Link] = &[
    link("GetResponse", "RetrieveResponse", "response_id"),
    link(
        "GetResponseInputItems",
        "ListResponseInputItems",
        "response_id",
    ),
    link("DeleteResponse", "DeleteResponse", "response_id"),
];
const WEBHOOK_LINKS: &[Link] = &[
    link("GetWebhook", "RetrieveWebhook", "webhook_id"),
    link("RotateWebhookSecret", "RotateWebhookSecret", "webhook_id"),
    link("DeleteWebhook", "DeleteWebhook", "webhook_id"),
];
const CONSOLE_VIDEO_LINKS: &[Link] = &[
    link("GetConsoleVideo", "ConsoleRetrieveVideo", "video_id"),
    link("GetConsoleVideoMedia", "ConsoleVideoMedia", "video_id"),
];

/// Every operation the service serves, in the document's order.
pub const OPERATIONS: &[Operation] = &[
    Operation {
        path: "/health",
        id: "Health",
        tag: "service",
        summary: "Liveness: answers while the process serves",
        auth: Auth::None,
        ok: &[(200, Answer::Json(schema::<crate::api::Health>))],
        errors: &[],
        ..DEFAULT
    },
    Operation {
        path: "/metrics",
        id: "Metrics",
        tag: "service",
        summary: "Prometheus metrics for the operator (`Authorization: Bearer <REELGATE_METRICS_TOKEN>`; 404 while unset)",
        auth: Auth::None,
        ok: &[(200, Answer::Text("text/plain; version=0.0.4; charset=utf-8"))],
        errors: &[401, 404],
        ..DEFAULT
    },
    Operation {
        path: PATH,
        id: "OpenApiDocument",
        tag: "service",
        summary: "This document",
        auth: Auth::None,
        ok: &[(200, Answer::OpenApiDocument)],
        errors: &[],
        ..DEFAULT
    },
    // ---- files
    Operation {
        method: "POST",
        path: "/v1/files",
        id: "CreateFile",
        tag: "files",
        summary: "Upload a file (multipart, up to 100 MB; larger ones use /v1/uploads)",
        params: &[IDEMPOTENCY_KEY],
        body: Body::Multipart(schema::<crate::domain::files::form_upload::FileUploadForm>),
        ok: &[(200, Answer::Json(schema::<crate::domain::files::FileObject>))],
        errors: &[400, 401, 409, 413],
        links: FILE_LINKS,
        ..DEFAULT
    },
    Operation {
        path: "/v1/files",
        id: "ListFiles",
        tag: "files",
        summary: "List the organization's files",
        params: &[
            query("limit", Kind::Int(1, crate::domain::files::MAX_PAGE as i64), "Page size (default 20)."),
            query("after", Kind::Str, "A file id: the page starts after it."),
            query("purpose", Kind::Str, "Only files of this purpose."),
            ORDER,
        ],
        ok: &[(200, Answer::Json(list_of::<crate::domain::files::FileObject>))],
        errors: &[400, 401],
        ..DEFAULT
    },
    Operation {
        path: "/v1/files/{file_id}",
        id: "RetrieveFile",
        tag: "files",
        summary: "Retrieve a file",
        params: &[path("file_id", "A file id (`file-…`).")],
        ok: &[(200, Answer::Json(schema::<crate::domain::files::FileObject>))],
        errors: &[401, 404],
        ..DEFAULT
    },
    Operation {
        method: "DELETE",
        path: "/v1/files/{file_id}",
        id: "DeleteFile",
        tag: "files",
        summary: "Delete a file and its bytes",
        params: &[path("file_id", "A file id (`file-…`).")],
        ok: &[(200, Answer::Json(schema::<crate::api::envelope::Deleted>))],
        errors: &[401, 404],
        ..DEFAULT
    },
    Operation {
        path: "/v1/files/{file_id}/content",
        id: "DownloadFileContent",
        tag: "files",
        summary: "The file's bytes (byte ranges supported)",
        params: &[path("file_id", "A file id (`file-…`)."), RANGE],
        ok: &[
            (200, Answer::Bytes(&["*/*"])),
            (206, Answer::Bytes(&["*/*"])),
            (302, Answer::Redirect),
        ],
        errors: &[401, 404, 416],
        ..DEFAULT
    },
    // ---- direct uploads
    Operation {
        method: "POST",
        path: "/v1/uploads",
        id: "CreateUpload",
        tag: "uploads",
        summary: "Reserve a direct upload: PUT the bytes to `upload_url`, then complete it",
        params: &[IDEMPOTENCY_KEY],
        body: Body::Json(schema::<crate::domain::files::uploads::UploadCreateRequest>),
        ok: &[(200, Answer::Json(schema::<crate::domain::files::uploads::Upload>))],
        errors: &[400, 401, 409, 413],
        links: &[link("CompleteUpload", "CompleteUpload", "upload_id")],
        ..DEFAULT
    },
    Operation {
        method: "POST",
        path: "/v1/uploads/{upload_id}/complete",
        id: "CompleteUpload",
        tag: "uploads",
        summary: "Register the uploaded bytes as a file (checked as POST /v1/files checks them)",
        params: &[path("upload_id", "An upload id (`upload_…`).")],
        ok: &[(200, Answer::Json(schema::<crate::domain::files::FileObject>))],
        errors: &[400, 401, 404, 409, 413],
        links: FILE_LINKS,
        ..DEFAULT
    },
    // ---- videos
    Operation {
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
    },
    Operation {
        path: "/v1/videos",
        id: "ListVideos",
        tag: "videos",
        summary: "List the organization's video jobs, optionally filtered by status, model or prompt text",
        params: VIDEO_LIST_PARAMS,
        ok: &[(200, Answer::Json(list_of::<crate::domain::videos::Video>))],
        errors: &[400, 401],
        ..DEFAULT
    },
    Operation {
        path: "/v1/videos/models",
        id: "ListVideoModels",
        tag: "videos",
        summary: "The video models the plan is entitled to, with prices per second",
        ok: &[(200, Answer::Json(list_of::<crate::domain::videos::queries::VideoModelObject>))],
        ..DEFAULT
    },
    Operation {
        path: "/v1/videos/acceptance",
        id: "RetrieveVideoTermsAcceptance",
        tag: "videos",
        summary: "Whether the key's person agreed to the current Video Service Terms",
        ok: &[(200, Answer::Json(schema::<crate::domain::accounts::agreement::AgreementStatus>))],
        ..DEFAULT
    },
    Operation {
        method: "POST",
        path: "/v1/videos/acceptance",
        id: "AcceptVideoTerms",
        tag: "videos",
        summary: "Always refused for API keys: agreement is recorded in the console only",
        ok: &[],
        errors: &[401, 403],
        ..DEFAULT
    },
    Operation {
        path: "/v1/videos/{video_id}",
        id: "RetrieveVideo",
        tag: "videos",
        summary: "A video job (poll it: `openai-poll-after-ms` while it runs)",
        params: &[path("video_id", "A video id (`video_…`).")],
        ok: &[(200, Answer::PolledVideo)],
        errors: &[401, 404],
        ..DEFAULT
    },
    Operation {
        method: "DELETE",
        path: "/v1/videos/{video_id}",
        id: "DeleteVideo",
        tag: "videos",
        summary: "Delete a finished job and its outputs",
        params: &[path("video_id", "A video id (`video_…`).")],
        ok: &[(200, Answer::Json(schema::<crate::api::envelope::Deleted>))],
        errors: &[401, 404, 409],
        ..DEFAULT
    },
    Operation {
        path: "/v1/videos/{video_id}/content",
        id: "DownloadVideoContent",
        tag: "videos",
        summary: "The MP4 of a completed job (`variant=thumbnail`: its JPEG thumbnail; \
                  `variant=spritesheet`: 16 frames in one JPEG grid of 4 columns)",
        params: &[
            path("video_id", "A video id (`video_…`)."),
            query(
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
    },
    Operation {
        path: "/v1/videos/{video_id}/thumbnail",
        id: "DownloadVideoThumbnail",
        tag: "videos",
        summary: "The JPEG thumbnail (480 px wide) of a completed job",
        params: &[path("video_id", "A video id (`video_…`)."), RANGE],
        ok: &[
            (200, Answer::Bytes(&["image/jpeg"])),
            (206, Answer::Bytes(&["image/jpeg"])),
            (302, Answer::Redirect),
        ],
        errors: &[400, 401, 404, 416],
        ..DEFAULT
    },
    Operation {
        method: "POST",
        path: "/v1/videos/{video_id}/cancel",
        id: "CancelVideo",
        tag: "videos",
        summary: "Cancel a running job: unbilled, its reservation released",
        params: &[path("video_id", "A video id (`video_…`).")],
        ok: &[(200, Answer::Json(schema::<crate::domain::videos::Video>))],
        errors: &[401, 404, 409],
        ..DEFAULT
    },
    Operation {
        method: "POST",
        path: "/v1/videos/{video_id}/remix",
        id: "RemixVideo",
        tag: "videos",
        summary: "A new job on a completed video's model, seconds, aspect ratio and inputs, \
                  with a new prompt (quoted, reserved and billed as a create)",
        params: &[
            path("video_id", "The completed video to remix (`video_…`)."),
            IDEMPOTENCY_KEY,
        ],
        body: Body::JsonOrForm(schema::<crate::domain::videos::remix::VideoRemixRequest>),
        ok: &[(200, Answer::PolledVideo)],
        errors: &[400, 401, 402, 403, 404, 409, 413, 429, 503],
        links: VIDEO_LINKS,
        ..DEFAULT
    },
    Operation {
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
    },
    Operation {
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
    },
    Operation {
        method: "POST",
        path: "/v1/videos/characters",
        id: "CreateVideoCharacter",
        tag: "videos",
        summary: "A named set of reference frames, from a short H.264 MP4 or an image \
                  (`characters: [id]` on a create or remix adds them as reference images)",
        body: Body::JsonOrForm(schema::<crate::domain::videos::characters::CharacterCreateRequest>),
        ok: &[(200, Answer::Json(schema::<crate::domain::videos::characters::Character>))],
        errors: &[400, 401, 404, 413],
        links: CHARACTER_LINKS,
        ..DEFAULT
    },
    Operation {
        path: "/v1/videos/characters",
        id: "ListVideoCharacters",
        tag: "videos",
        summary: "The organization's characters",
        params: &[
            query("limit", Kind::Int(1, crate::domain::videos::characters::MAX_PAGE as i64), "Page size (default 20)."),
            query("after", Kind::Str, "A character id: the page starts after it."),
            ORDER,
        ],
        ok: &[(200, Answer::Json(list_of::<crate::domain::videos::characters::Character>))],
        errors: &[400, 401],
        ..DEFAULT
    },
    Operation {
        path: "/v1/videos/characters/{character_id}",
        id: "RetrieveVideoCharacter",
        tag: "videos",
        summary: "A character",
        params: &[path("character_id", "A character id (`char_…`).")],
        ok: &[(200, Answer::Json(schema::<crate::domain::videos::characters::Character>))],
        errors: &[401, 404],
        ..DEFAULT
    },
    Operation {
        method: "DELETE",
        path: "/v1/videos/characters/{character_id}",
        id: "DeleteVideoCharacter",
        tag: "videos",
        summary: "Delete a character and its frames (jobs that named it keep their copies)",
        params: &[path("character_id", "A character id (`char_…`).")],
        ok: &[(200, Answer::Json(schema::<crate::api::envelope::Deleted>))],
        errors: &[401, 404],
        ..DEFAULT
    },
    // ---- webhooks
    Operation {
        method: "POST",
        path: "/v1/webhooks",
        id: "CreateWebhook",
        tag: "webhooks",
        summary:
            "Register an endpoint for video events (its signing secret is in this answer only)",
        body: Body::Json(schema::<crate::domain::webhooks::WebhookCreateRequest>),
        ok: &[(200, Answer::Json(schema::<crate::domain::webhooks::Endpoint>))],
        errors: &[400, 401],
        links: WEBHOOK_LINKS,
        ..DEFAULT
    },
    Operation {
        path: "/v1/webhooks",
        id: "ListWebhooks",
        tag: "webhooks",
        summary: "The organization's webhook endpoints with their delivery records",
        ok: &[(200, Answer::Json(list_of::<crate::domain::webhooks::Endpoint>))],
        ..DEFAULT
    },
    Operation {
        path: "/v1/webhooks/{webhook_id}",
        id: "RetrieveWebhook",
        tag: "webhooks",
        summary: "A webhook endpoint, its status and last delivery attempts",
        params: &[path("webhook_id", "A webhook endpoint id (`wh_…`).")],
        ok: &[(200, Answer::Json(schema::<crate::domain::webhooks::Endpoint>))],
        errors: &[401, 404],
        ..DEFAULT
    },
    Operation {
        method: "DELETE",
        path: "/v1/webhooks/{webhook_id}",
        id: "DeleteWebhook",
        tag: "webhooks",
        summary: "Delete a webhook endpoint",
        params: &[path("webhook_id", "A webhook endpoint id (`wh_…`).")],
        ok: &[(200, Answer::Json(schema::<crate::api::envelope::Deleted>))],
        errors: &[401, 404],
        ..DEFAULT
    },
    Operation {
        method: "POST",
        path: "/v1/webhooks/{webhook_id}/rotate_secret",
        id: "RotateWebhookSecret",
        tag: "webhooks",
        summary: "A new signing secret (shown once); the old one keeps signing for 24 hours",
        params: &[path("webhook_id", "A webhook endpoint id (`wh_…`).")],
        ok: &[(200, Answer::Json(schema::<crate::domain::webhooks::Endpoint>))],
        errors: &[401, 404],
        ..DEFAULT
    },
    // ---- usage
    Operation {
        path: "/v1/usage",
        id: "GetUsage",
        tag: "usage",
        summary: "The organization's spend in daily UTC buckets (any member's key)",
        params: &[
            Param {
                name: "start_time",
                at: In::Query,
                kind: Kind::Int(0, crate::domain::billing::usage_report::MAX_TIME),
                required: true,
                about: "Unix seconds; the report starts at the UTC midnight on or before it.",
            },
            query(
                "end_time",
                Kind::Int(0, crate::domain::billing::usage_report::MAX_TIME),
                "Unix seconds (default now, exclusive); the report ends at the UTC midnight on or after it.",
            ),
            query(
                "group_by",
                Kind::Str,
                "`model`, `api_key`, `kind` (repeat it, or a comma-separated list).",
            ),
            query("limit", Kind::Int(1, crate::domain::billing::usage_report::MAX_DAYS as i64), "Days per page (default 7)."),
            query("page", Kind::Str, "A previous answer's `next_page`."),
        ],
        ok: &[(200, Answer::Json(schema::<crate::domain::billing::usage_report::UsagePage>))],
        errors: &[400, 401],
        ..DEFAULT
    },
    // ---- text models
    Operation {
        path: "/v1/models",
        id: "ListModels",
        tag: "models",
        summary: "The chat models (video models are at /v1/videos/models)",
        ok: &[(200, Answer::Json(list_of::<crate::domain::chat::models::ModelObject>))],
        ..DEFAULT
    },
    Operation {
        path: "/v1/models/{model}",
        id: "RetrieveModel",
        tag: "models",
        summary: "One chat model",
        params: &[path("model", "A chat model id.")],
        ok: &[(200, Answer::Json(schema::<crate::domain::chat::models::ModelObject>))],
        errors: &[401, 404],
        ..DEFAULT
    },
    Operation {
        method: "POST",
        path: "/v1/chat/completions",
        id: "CreateChatCompletion",
        tag: "chat",
        summary: "A chat completion (server-sent events with `stream: true`)",
        body: Body::Json(schema::<crate::domain::chat::request::ChatCompletionRequest>),
        ok: &[(200, Answer::JsonOrStream(schema::<crate::domain::chat::completion::ChatCompletion>))],
        errors: &[400, 401, 402, 404, 413, 429, 502, 503, 504],
        ..DEFAULT
    },
    Operation {
        method: "POST",
        path: "/v1/messages",
        id: "CreateMessage",
        tag: "messages",
        summary: "A message in Anthropic's Messages API shape (Anthropic's server-sent events with `stream: true`; the key also as `x-api-key`; errors in Anthropic's envelope; docs/messages.md)",
        body: Body::Json(schema::<crate::domain::messages::body::MessageCreateRequest>),
        ok: &[(200, Answer::JsonOrStream(schema::<crate::domain::messages::reply::Message>))],
        errors: &[400, 401, 402, 404, 413, 429, 502, 504, 529],
        ..DEFAULT
    },
    Operation {
        method: "POST",
        path: "/v1/messages/count_tokens",
        id: "CountMessageTokens",
        tag: "messages",
        summary: "The estimated input tokens of a Messages API request, admitted as a message is \
                  (a funded organization, the key's budget, the rate limits) and not billed \
                  (docs/messages.md)",
        body: Body::Json(schema::<crate::domain::messages::body::MessageCountTokensRequest>),
        ok: &[(200, Answer::Json(schema::<crate::domain::messages::reply::MessageTokensCount>))],
        errors: &[400, 401, 402, 404, 413, 429],
        ..DEFAULT
    },
    Operation {
        method: "POST",
        path: "/v1/responses",
        id: "CreateResponse",
        tag: "responses",
        summary: "A model response (typed server-sent events with `stream: true`)",
        body: Body::Json(schema::<crate::domain::responses::request::ResponseCreateBody>),
        ok: &[(200, Answer::JsonOrStream(schema::<crate::domain::responses::output::ResponseObject>))],
        errors: &[400, 401, 402, 404, 413, 429, 502, 503, 504],
        links: RESPONSE_LINKS,
        ..DEFAULT
    },
    Operation {
        path: "/v1/responses/{response_id}",
        id: "RetrieveResponse",
        tag: "responses",
        summary: "A stored response of this person",
        params: &[path("response_id", "A response id (`resp_…`).")],
        ok: &[(200, Answer::Json(schema::<crate::domain::responses::output::ResponseObject>))],
        errors: &[401, 404],
        ..DEFAULT
    },
    Operation {
        method: "DELETE",
        path: "/v1/responses/{response_id}",
        id: "DeleteResponse",
        tag: "responses",
        summary: "Delete a stored response",
        params: &[path("response_id", "A response id (`resp_…`).")],
        ok: &[(200, Answer::Json(schema::<crate::api::envelope::Deleted>))],
        errors: &[401, 404],
        ..DEFAULT
    },
    Operation {
        path: "/v1/responses/{response_id}/input_items",
        id: "ListResponseInputItems",
        tag: "responses",
        summary: "The input items of a stored response",
        params: &[
            path("response_id", "A response id (`resp_…`)."),
            query("limit", Kind::Int(1, crate::domain::responses::MAX_ITEMS_PAGE as i64), "Page size (default 20)."),
            query("after", Kind::Str, "An item id: the page starts after it."),
            query("before", Kind::Str, "An item id: the page ends before it."),
            ORDER,
        ],
        ok: &[(200, Answer::Json(list_of::<serde_json::Value>))],
        errors: &[400, 401, 404],
        ..DEFAULT
    },
    // ---- the console (a browser application; its JSON routes take the session cookie)
    Operation {
        path: "/console",
        id: "ConsolePage",
        tag: "console",
        summary: "The console's single page",
        auth: Auth::None,
        ok: &[(200, Answer::Html)],
        errors: &[],
        ..DEFAULT
    },
    Operation {
        path: "/console/",
        id: "ConsolePageSlash",
        tag: "console",
        summary: "The console's single page",
        auth: Auth::None,
        ok: &[(200, Answer::Html)],
        errors: &[],
        ..DEFAULT
    },
    Operation {
        path: "/console/videos/{video_id}",
        id: "ConsoleVideoPage",
        tag: "console",
        summary: "The console's single page, opened on one video's page",
        auth: Auth::None,
        params: &[path("video_id", "A video id (`video_…`).")],
        ok: &[(200, Answer::Html)],
        errors: &[],
        ..DEFAULT
    },
    Operation {
        path: "/console/signin",
        id: "ConsoleSignIn",
        tag: "console",
        summary:
            "Redeem a one-time sign-in link: sets the session cookie, redirects to the console",
        auth: Auth::None,
        params: &[query("token", Kind::Str, "The link's one-time token.")],
        // A used, expired or unknown link gets a page saying so (a browser opened it).
        ok: &[(303, Answer::Redirect), (401, Answer::Html)],
        errors: &[],
        ..DEFAULT
    },
    Operation {
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
    },
    Operation {
        path: "/console/oidc/callback",
        id: "ConsoleOidcCallback",
        tag: "console",
        summary: "The issuer's return: signs the person in (or asks which organization)",
        auth: Auth::None,
        params: &[
            query("code", Kind::Str, "The authorization code."),
            query("state", Kind::Str, "The flow's state."),
            query("error", Kind::Str, "The issuer's refusal, if it refused."),
            query(
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
    },
    Operation {
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
    },
    Operation {
        path: "/console/assets/console.css",
        id: "ConsoleStylesheet",
        tag: "console",
        summary: "The console's stylesheet",
        auth: Auth::None,
        ok: &[(200, Answer::Text("text/css; charset=utf-8"))],
        errors: &[],
        ..DEFAULT
    },
    Operation {
        path: "/console/assets/console.js",
        id: "ConsoleScript",
        tag: "console",
        summary: "The console's script",
        auth: Auth::None,
        ok: &[(200, Answer::Text("text/javascript; charset=utf-8"))],
        errors: &[],
        ..DEFAULT
    },
    Operation {
        path: "/console/api/session",
        id: "ConsoleSession",
        tag: "console",
        summary: "Who is signed in, and the session's CSRF token",
        auth: Auth::Console,
        ok: &[(200, Answer::Json(schema::<crate::api::console::answers::SessionInfo>))],
        ..DEFAULT
    },
    Operation {
        method: "POST",
        path: "/console/api/signout",
        id: "ConsoleSignOut",
        tag: "console",
        summary: "Revoke the session and clear its cookie",
        auth: Auth::ConsoleCsrf,
        ok: &[(200, Answer::Json(schema::<crate::api::console::answers::SignedOut>))],
        errors: &[401, 403],
        ..DEFAULT
    },
    Operation {
        path: "/console/api/terms",
        id: "ConsoleTerms",
        tag: "console",
        summary: "The current Video Service Terms and whether this person agreed",
        auth: Auth::Console,
        ok: &[(200, Answer::Json(schema::<crate::api::console::answers::Terms>))],
        ..DEFAULT
    },
    Operation {
        method: "POST",
        path: "/console/api/terms/agree",
        id: "ConsoleAgreeToTerms",
        tag: "console",
        summary: "Record agreement to the current terms (the only way to record it)",
        auth: Auth::ConsoleCsrf,
        ok: &[(200, Answer::Json(schema::<crate::domain::accounts::agreement::AgreementStatus>))],
        errors: &[401, 403],
        ..DEFAULT
    },
    Operation {
        path: "/console/api/models",
        id: "ConsoleVideoModels",
        tag: "console",
        summary: "The plan's video models with prices and the create form's limits",
        auth: Auth::Console,
        ok: &[(200, Answer::Json(schema::<crate::api::console::answers::ConsoleVideoModels>))],
        ..DEFAULT
    },
    Operation {
        path: "/console/api/chat/models",
        id: "ConsoleChatModels",
        tag: "console",
        summary: "The chat models",
        auth: Auth::Console,
        ok: &[(200, Answer::Json(list_of::<crate::domain::chat::models::ModelObject>))],
        ..DEFAULT
    },
    Operation {
        method: "POST",
        path: "/console/api/videos/quote",
        id: "ConsoleQuoteVideo",
        tag: "console",
        summary: "The exact quote of a create request",
        auth: Auth::ConsoleCsrf,
        body: Body::Json(schema::<crate::domain::videos::create_request::VideoCreateRequest>),
        ok: &[(200, Answer::Json(schema::<crate::domain::videos::create::Quote>))],
        errors: &[400, 401, 403, 404, 413],
        ..DEFAULT
    },
    Operation {
        path: "/console/api/videos",
        id: "ConsoleListVideos",
        tag: "console",
        summary: "The organization's video jobs, optionally filtered by status, model or prompt text",
        auth: Auth::Console,
        params: VIDEO_LIST_PARAMS,
        ok: &[(200, Answer::Json(list_of::<crate::domain::videos::Video>))],
        errors: &[400, 401],
        ..DEFAULT
    },
    Operation {
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
    },
    Operation {
        path: "/console/api/videos/{video_id}",
        id: "ConsoleRetrieveVideo",
        tag: "console",
        summary: "A video job with its page's details (the rendered prompt, inputs, timings)",
        auth: Auth::Console,
        params: &[path("video_id", "A video id (`video_…`).")],
        ok: &[(200, Answer::Json(schema::<crate::domain::videos::object::VideoDetail>))],
        errors: &[401, 404],
        ..DEFAULT
    },
    Operation {
        method: "DELETE",
        path: "/console/api/videos/{video_id}",
        id: "ConsoleDeleteVideo",
        tag: "console",
        summary: "Delete a finished job and its outputs",
        auth: Auth::ConsoleCsrf,
        params: &[path("video_id", "A video id (`video_…`).")],
        ok: &[(200, Answer::Json(schema::<crate::api::envelope::Deleted>))],
        errors: &[401, 403, 404, 409],
        ..DEFAULT
    },
    Operation {
        path: "/console/api/videos/{video_id}/media",
        id: "ConsoleVideoMedia",
        tag: "console",
        summary: "Short-lived signed URLs of a completed job's MP4 and thumbnail",
        auth: Auth::Console,
        params: &[path("video_id", "A video id (`video_…`).")],
        ok: &[(200, Answer::Json(schema::<crate::api::console::answers::VideoMedia>))],
        errors: &[400, 401, 404],
        ..DEFAULT
    },
    Operation {
        method: "POST",
        path: "/console/api/videos/{video_id}/cancel",
        id: "ConsoleCancelVideo",
        tag: "console",
        summary: "Cancel a running job: unbilled, its reservation released",
        auth: Auth::ConsoleCsrf,
        params: &[path("video_id", "A video id (`video_…`).")],
        ok: &[(200, Answer::Json(schema::<crate::domain::videos::Video>))],
        errors: &[401, 403, 404, 409],
        ..DEFAULT
    },
    Operation {
        method: "POST",
        path: "/console/api/videos/{video_id}/remix",
        id: "ConsoleRemixVideo",
        tag: "console",
        summary: "Remix a completed video as the signed-in person",
        auth: Auth::ConsoleCsrf,
        params: &[path("video_id", "The completed video to remix (`video_…`).")],
        body: Body::Json(schema::<crate::domain::videos::remix::VideoRemixRequest>),
        ok: &[(200, Answer::Json(schema::<crate::domain::videos::Video>))],
        errors: &[400, 401, 402, 403, 404, 409, 413, 429, 503],
        links: CONSOLE_VIDEO_LINKS,
    },
    Operation {
        method: "POST",
        path: "/console/api/videos/{video_id}/extend",
        id: "ConsoleExtendVideo",
        tag: "console",
        summary: "Extend a completed video as the signed-in person",
        auth: Auth::ConsoleCsrf,
        params: &[path("video_id", "The completed video to extend (`video_…`).")],
        body: Body::Json(schema::<crate::api::console::api::ConsoleVideoExtendRequest>),
        ok: &[(200, Answer::Json(schema::<crate::domain::videos::Video>))],
        errors: &[400, 401, 402, 403, 404, 409, 413, 429, 503],
        links: CONSOLE_VIDEO_LINKS,
    },
    Operation {
        method: "POST",
        path: "/console/api/videos/{video_id}/edit",
        id: "ConsoleEditVideo",
        tag: "console",
        summary: "Edit a completed video as the signed-in person",
        auth: Auth::ConsoleCsrf,
        params: &[path("video_id", "The completed video to edit (`video_…`).")],
        body: Body::Json(schema::<crate::api::console::api::ConsoleVideoEditRequest>),
        ok: &[(200, Answer::Json(schema::<crate::domain::videos::Video>))],
        errors: &[400, 401, 402, 403, 404, 409, 413, 429, 503],
        links: CONSOLE_VIDEO_LINKS,
    },
    Operation {
        method: "POST",
        path: "/console/api/chat/completions",
        id: "ConsoleChatCompletion",
        tag: "console",
        summary: "A chat completion as the signed-in person",
        auth: Auth::ConsoleCsrf,
        body: Body::Json(schema::<crate::domain::chat::request::ChatCompletionRequest>),
        ok: &[(200, Answer::JsonOrStream(schema::<crate::domain::chat::completion::ChatCompletion>))],
        errors: &[400, 401, 402, 403, 404, 413, 502, 503, 504],
        ..DEFAULT
    },
    Operation {
        path: "/console/api/keys",
        id: "ConsoleListKeys",
        tag: "console",
        summary: "The signed-in person's API keys (never their secrets)",
        auth: Auth::Console,
        ok: &[(200, Answer::Json(list_of::<crate::domain::accounts::ApiKeyInfo>))],
        ..DEFAULT
    },
    Operation {
        method: "POST",
        path: "/console/api/keys",
        id: "ConsoleCreateKey",
        tag: "console",
        summary: "Create an API key; its secret is in this answer only",
        auth: Auth::ConsoleCsrf,
        ok: &[(200, Answer::Json(schema::<crate::api::console::answers::ApiKeyCreated>))],
        errors: &[401, 403],
        links: &[link("RevokeKey", "ConsoleRevokeKey", "key_id")],
        ..DEFAULT
    },
    Operation {
        method: "DELETE",
        path: "/console/api/keys/{key_id}",
        id: "ConsoleRevokeKey",
        tag: "console",
        summary: "Revoke one of the signed-in person's API keys",
        auth: Auth::ConsoleCsrf,
        params: &[path("key_id", "An API key id.")],
        ok: &[(200, Answer::Json(schema::<crate::api::console::answers::ApiKeyRevoked>))],
        errors: &[401, 403, 404],
        ..DEFAULT
    },
    Operation {
        path: "/console/api/keys/{key_id}/limits",
        id: "ConsoleKeyLimits",
        tag: "console",
        summary: "One of the signed-in person's keys: its effective rate limits (overrides over \
                  the plan's per-key limits) and its monthly budget with this month's committed amount",
        auth: Auth::Console,
        params: &[path("key_id", "An API key id.")],
        ok: &[(200, Answer::Json(schema::<crate::domain::accounts::key_controls::KeyControls>))],
        errors: &[401, 404],
        ..DEFAULT
    },
    Operation {
        method: "POST",
        path: "/console/api/keys/{key_id}/limits",
        id: "ConsoleSetKeyLimits",
        tag: "console",
        summary: "Set or clear one of the signed-in person's keys' rate-limit overrides and monthly \
                  budget, never above the plan's per-key limits",
        auth: Auth::ConsoleCsrf,
        params: &[path("key_id", "An API key id.")],
        body: Body::Json(schema::<crate::domain::accounts::key_controls::KeyLimitsRequest>),
        ok: &[(200, Answer::Json(schema::<crate::domain::accounts::key_controls::KeyControls>))],
        errors: &[400, 401, 403, 404],
        ..DEFAULT
    },
    Operation {
        path: "/console/api/usage",
        id: "ConsoleUsage",
        tag: "console",
        summary: "Balance, reservations of renders in flight, recent charges",
        auth: Auth::Console,
        ok: &[(200, Answer::Json(schema::<crate::api::console::answers::ConsoleUsage>))],
        ..DEFAULT
    },
    Operation {
        method: "POST",
        path: "/console/api/uploads",
        id: "ConsoleCreateUpload",
        tag: "console",
        summary: "Reserve a direct upload for a new video's frame or reference: PUT, then complete",
        auth: Auth::ConsoleCsrf,
        params: &[IDEMPOTENCY_KEY],
        body: Body::Json(schema::<crate::domain::files::uploads::UploadCreateRequest>),
        ok: &[(200, Answer::Json(schema::<crate::domain::files::uploads::Upload>))],
        errors: &[400, 401, 403, 409, 413],
        links: &[link("CompleteUpload", "ConsoleCompleteUpload", "upload_id")],
    },
    Operation {
        method: "POST",
        path: "/console/api/uploads/{upload_id}/complete",
        id: "ConsoleCompleteUpload",
        tag: "console",
        summary: "Register the uploaded bytes as a file (checked as POST /v1/files checks them)",
        auth: Auth::ConsoleCsrf,
        params: &[path("upload_id", "An upload id (`upload_…`).")],
        ok: &[(200, Answer::Json(schema::<crate::domain::files::FileObject>))],
        errors: &[400, 401, 403, 404, 409, 413],
        ..DEFAULT
    },
    Operation {
        path: "/console/api/webhooks",
        id: "ConsoleListWebhooks",
        tag: "console",
        summary: "The organization's webhook endpoints with their delivery records",
        auth: Auth::Console,
        ok: &[(200, Answer::Json(list_of::<crate::domain::webhooks::Endpoint>))],
        ..DEFAULT
    },
    Operation {
        method: "POST",
        path: "/console/api/webhooks",
        id: "ConsoleCreateWebhook",
        tag: "console",
        summary:
            "Register an endpoint for video events (its signing secret is in this answer only)",
        auth: Auth::ConsoleCsrf,
        body: Body::Json(schema::<crate::domain::webhooks::WebhookCreateRequest>),
        ok: &[(200, Answer::Json(schema::<crate::domain::webhooks::Endpoint>))],
        errors: &[400, 401, 403],
        links: &[
            link(
                "RotateWebhookSecret",
                "ConsoleRotateWebhookSecret",
                "webhook_id",
            ),
            link("DeleteWebhook", "ConsoleDeleteWebhook", "webhook_id"),
        ],
        ..DEFAULT
    },
    Operation {
        method: "DELETE",
        path: "/console/api/webhooks/{webhook_id}",
        id: "ConsoleDeleteWebhook",
        tag: "console",
        summary: "Delete a webhook endpoint",
        auth: Auth::ConsoleCsrf,
        params: &[path("webhook_id", "A webhook endpoint id (`wh_…`).")],
        ok: &[(200, Answer::Json(schema::<crate::api::envelope::Deleted>))],
        errors: &[401, 403, 404],
        ..DEFAULT
    },
    Operation {
        method: "POST",
        path: "/console/api/webhooks/{webhook_id}/rotate_secret",
        id: "ConsoleRotateWebhookSecret",
        tag: "console",
        summary: "A new signing secret (shown once); the old one keeps signing for 24 hours",
        auth: Auth::ConsoleCsrf,
        params: &[path("webhook_id", "A webhook endpoint id (`wh_…`).")],
        ok: &[(200, Answer::Json(schema::<crate::domain::webhooks::Endpoint>))],
        errors: &[401, 403, 404],
        ..DEFAULT
    },
    Operation {
        method: "POST",
        path: "/console/api/webhooks/{webhook_id}/test",
        id: "ConsoleSendWebhookTestEvent",
        tag: "console",
        summary: "Send one signed `webhook.test` event to the endpoint now and answer what the \
                  receiver did (its status or the error, and how long it took); one test per \
                  endpoint every 5 seconds",
        auth: Auth::ConsoleCsrf,
        params: &[path("webhook_id", "A webhook endpoint id (`wh_…`).")],
        ok: &[(200, Answer::Json(schema::<crate::domain::webhooks::test_event::TestDelivery>))],
        errors: &[401, 403, 404, 429],
        ..DEFAULT
    },
];

/// The component schemas, collected with everything they refer to.
#[derive(utoipa::OpenApi)]
#[openapi(components(schemas(
    crate::api::envelope::ErrorResponse,
    crate::api::envelope::ErrorBody,
    crate::api::Health,
    crate::domain::files::FileObject,
    crate::api::envelope::List<crate::domain::files::FileObject>,
    crate::api::envelope::Deleted,
    crate::domain::files::form_upload::FileUploadForm,
    crate::domain::files::uploads::UploadCreateRequest,
    crate::domain::files::uploads::Upload,
    crate::domain::videos::create_request::VideoCreateRequest,
    // Named by the create request's array schemas (built from the rules' limits).
    crate::domain::videos::create_request::FrameReference,
    crate::domain::videos::create_request::FrameRole,
    crate::domain::videos::create_request::FileRef,
    crate::domain::videos::create::Quote,
    crate::domain::videos::remix::VideoRemixRequest,
    crate::domain::videos::extensions::VideoExtensionRequest,
    crate::domain::videos::edits::VideoEditRequest,
    crate::api::console::api::ConsoleVideoExtendRequest,
    crate::api::console::api::ConsoleVideoEditRequest,
    crate::domain::videos::object::VideoDetail,
    crate::domain::videos::object::VideoInputs,
    crate::domain::videos::source_request::VideoReference,
    crate::domain::videos::characters::Character,
    crate::domain::videos::characters::CharacterCreateRequest,
    crate::api::envelope::List<crate::domain::videos::characters::Character>,
    crate::domain::videos::Video,
    crate::api::envelope::List<crate::domain::videos::Video>,
    crate::api::envelope::List<crate::domain::videos::queries::VideoModelObject>,
    crate::domain::accounts::agreement::AgreementStatus,
    crate::domain::chat::models::ModelObject,
    crate::api::envelope::List<crate::domain::chat::models::ModelObject>,
    crate::api::envelope::List<serde_json::Value>,
    crate::domain::chat::request::ChatCompletionRequest,
    crate::domain::chat::request::ChatMessage,
    crate::domain::chat::request::Role,
    crate::domain::chat::request::StreamOptions,
    crate::domain::chat::completion::ChatCompletion,
    crate::domain::messages::body::MessageCreateRequest,
    crate::domain::messages::body::MessageCountTokensRequest,
    crate::domain::messages::body::Metadata,
    crate::domain::messages::reply::Message,
    crate::domain::messages::reply::Usage,
    crate::domain::messages::reply::MessageTokensCount,
    crate::api::messages::AnthropicErrorResponse,
    crate::api::messages::AnthropicErrorBody,
    crate::domain::responses::request::ResponseCreateBody,
    crate::domain::responses::request::Reasoning,
    crate::domain::responses::request::Text,
    crate::domain::responses::request::Truncation,
    crate::domain::responses::output::ResponseObject,
    crate::domain::responses::output::ResponseError,
    crate::domain::responses::output::IncompleteDetails,
    crate::api::chat_answers::EventStream,
    crate::api::console::answers::SessionInfo,
    crate::api::console::answers::SignedOut,
    crate::api::console::answers::Terms,
    crate::api::console::answers::ConsoleVideoModels,
    crate::api::console::answers::VideoMedia,
    crate::api::console::answers::ApiKeyCreated,
    crate::api::console::answers::ApiKeyRevoked,
    crate::api::console::answers::ConsoleUsage,
    crate::api::envelope::List<crate::domain::accounts::ApiKeyInfo>,
    crate::domain::accounts::key_controls::KeyControls,
    crate::domain::accounts::key_controls::KeyLimitsRequest,
    crate::domain::webhooks::WebhookCreateRequest,
    crate::domain::webhooks::Endpoint,
    crate::domain::webhooks::DeliveryRecord,
    crate::domain::webhooks::Attempt,
    crate::domain::webhooks::test_event::TestDelivery,
    crate::api::envelope::List<crate::domain::webhooks::Endpoint>,
    crate::api::console::oidc::OidcChooseForm,
    crate::domain::billing::usage_report::UsagePage,
)))]
struct Components;

fn schema_ref(name: &str) -> RefOr<Schema> {
    RefOr::Ref(Ref::from_schema_name(name))
}

fn string_schema() -> Schema {
    ObjectBuilder::new().schema_type(Type::String).into()
}

fn param_schema(kind: Kind) -> Schema {
    match kind {
        Kind::Str => string_schema(),
        Kind::Int(min, max) => ObjectBuilder::new()
            .schema_type(Type::Integer)
            .minimum(Some(min))
            .maximum(Some(max))
            .into(),
        Kind::OneOf(values) => ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(values.iter().copied()))
            .into(),
    }
}

/// An error answer; the Messages API's routes answer Anthropic's envelope.
fn error_response(status: u16, path: &str) -> utoipa::openapi::Response {
    let envelope = if path.starts_with("/v1/messages") {
        schema::<crate::api::messages::AnthropicErrorResponse>()
    } else {
        schema::<crate::api::envelope::ErrorResponse>()
    };
    let about = match status {
        400 => "The request is invalid; `param` names the offending parameter.",
        401 => "No valid credential (API key, or console session on console routes).",
        402 => "The organization's balance, or the API key's monthly budget, does not cover the request.",
        403 => "Not permitted (agreement missing, console-only action, CSRF token missing).",
        404 => "No such resource in the caller's organization (or no such model).",
        409 => "Conflicts with the resource's state or with an earlier Idempotency-Key.",
        413 => "The body is larger than this endpoint accepts.",
        416 => "The Range is outside the content.",
        429 => "A rate limit of the key or the organization is reached (`rate_limit_exceeded`, with `Retry-After`), or the plan's concurrent renders are all in use.",
        502 => "The model provider refused the request or broke the protocol.",
        503 => "A provider (video engine or model upstream) is unavailable.",
        504 => "The model provider did not answer in time.",
        529 => "The model provider is unreachable or overloaded (Anthropic's `overloaded_error`).",
        _ => "An error.",
    };
    ResponseBuilder::new()
        .description(about)
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(schema_ref(&envelope)))
                .build(),
        )
        .build()
}

fn ok_response(answer: Answer, links: &[Link]) -> utoipa::openapi::Response {
    let json = |name: SchemaName| {
        ContentBuilder::new()
            .schema(Some(schema_ref(&name())))
            .build()
    };
    let bytes = || {
        ContentBuilder::new()
            .schema(Some(
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(
                        utoipa::openapi::KnownFormat::Binary,
                    )))
                    .build(),
            ))
            .build()
    };
    let mut r = ResponseBuilder::new();
    r = match answer {
        Answer::Json(name) => r.description("OK").content("application/json", json(name)),
        Answer::JsonOrStream(name) => r
            .description("The object, or with `stream: true` server-sent events")
            .content("application/json", json(name))
            .content("text/event-stream", json(schema::<crate::api::chat_answers::EventStream>)),
        Answer::PolledVideo => r
            .description("The video job")
            .content("application/json", json(schema::<crate::domain::videos::Video>))
            .header(
                "openai-poll-after-ms",
                HeaderBuilder::new()
                    .schema(param_schema(Kind::Int(10_000, 30_000)))
                    .description(Some(
                        "While the job is not finished: milliseconds to wait before reading it again.",
                    ))
                    .build(),
            ),
        Answer::Bytes(types) => {
            let mut r = r.description("The content").header(
                "accept-ranges",
                HeaderBuilder::new().schema(string_schema()).build(),
            );
            for t in types {
                r = r.content(*t, bytes());
            }
            r
        }
        Answer::Html => r
            .description("An HTML page")
            .content("text/html; charset=utf-8", ContentBuilder::new().schema(Some(string_schema())).build()),
        Answer::OpenApiDocument => r.description("An OpenAPI 3.1 document").content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(
                    ObjectBuilder::new()
                        .schema_type(Type::Object)
                        .required("openapi")
                        .required("info")
                        .required("paths"),
                ))
                .build(),
        ),
        Answer::Text(t) => r
            .description("The file")
            .content(t, ContentBuilder::new().schema(Some(string_schema())).build()),
        Answer::Redirect => r.description("Redirect to the content").header(
            "location",
            HeaderBuilder::new().schema(string_schema()).build(),
        ),
    };
    for l in links {
        r = r.link(
            l.name,
            LinkBuilder::new()
                .operation_id(l.op)
                .parameter(l.param, l.expr)
                .build(),
        );
    }
    r.build()
}

fn method_of(m: &str) -> HttpMethod {
    match m {
        "POST" => HttpMethod::Post,
        "DELETE" => HttpMethod::Delete,
        "PUT" => HttpMethod::Put,
        "PATCH" => HttpMethod::Patch,
        _ => HttpMethod::Get,
    }
}

fn operation(op: &Operation) -> utoipa::openapi::path::Operation {
    let mut b = OperationBuilder::new()
        .operation_id(Some(op.id))
        .summary(Some(op.summary))
        .tag(op.tag);
    for p in op.params {
        b = b.parameter(
            ParameterBuilder::new()
                .name(p.name)
                .parameter_in(match p.at {
                    In::Path => ParameterIn::Path,
                    In::Query => ParameterIn::Query,
                    In::Header => ParameterIn::Header,
                })
                .required(if p.required {
                    Required::True
                } else {
                    Required::False
                })
                .description(Some(p.about))
                .schema(Some(param_schema(p.kind))),
        );
    }
    let body: Option<(&[&str], SchemaName)> = match op.body {
        Body::None => None,
        Body::Json(name) => Some((&["application/json"], name)),
        Body::JsonOrForm(name) => Some((&["application/json", "multipart/form-data"], name)),
        Body::Form(name) => Some((&["application/x-www-form-urlencoded"], name)),
        Body::Multipart(name) => Some((&["multipart/form-data"], name)),
    };
    if let Some((media_types, name)) = body {
        let mut request = RequestBodyBuilder::new().required(Some(Required::True));
        for media_type in media_types {
            request = request.content(
                *media_type,
                ContentBuilder::new()
                    .schema(Some(schema_ref(&name())))
                    .build(),
            );
        }
        b = b.request_body(Some(request.build()));
    }
    let mut responses = ResponsesBuilder::new();
    for (status, answer) in op.ok {
        responses = responses.response(status.to_string(), ok_response(*answer, op.links));
    }
    for status in op.errors {
        responses = responses.response(status.to_string(), error_response(*status, op.path));
    }
    b = b.responses(responses.build());
    let none: [&str; 0] = [];
    b = match op.auth {
        Auth::None => b.securities(Some(Vec::<SecurityRequirement>::new())),
        Auth::ApiKey => b.security(SecurityRequirement::new("api_key", none)),
        Auth::Console => b.security(SecurityRequirement::new("console_session", none)),
        Auth::ConsoleCsrf => {
            b.security(SecurityRequirement::new("console_session", none).add("csrf_token", none))
        }
    };
    b.build()
}

/// The whole document.
pub fn document() -> OpenApi {
    let mut doc = Components::openapi();
    doc.info = InfoBuilder::new()
        .title("reelgate")
        .version(env!("CARGO_PKG_VERSION"))
        .description(Some(
            "Video generation and an OpenAI-compatible text-model gateway. Every error answers \
             OpenAI's envelope `{\"error\": {message, type, param, code}}`; every answer carries \
             `x-request-id`. Routes under /v1 take `Authorization: Bearer <API key>`; routes under \
             /console/api take the console's session cookie, and the state-changing ones its \
             `X-CSRF-Token`. On AWS, a request that did not come through the service's public \
             base URL is refused before routing with 403 `origin_forbidden`.",
        ))
        .build();
    doc.servers = Some(vec![ServerBuilder::new().url("/").build()]);
    let mut by_path: BTreeMap<usize, (&str, PathItemBuilder)> = BTreeMap::new();
    let mut order: Vec<&str> = Vec::new();
    for op in OPERATIONS {
        if !order.contains(&op.path) {
            order.push(op.path);
        }
        let i = order.iter().position(|p| *p == op.path).unwrap_or_default();
        let (_, item) = by_path
            .remove(&i)
            .unwrap_or((op.path, PathItemBuilder::new()));
        by_path.insert(
            i,
            (op.path, item.operation(method_of(op.method), operation(op))),
        );
    }
    let mut paths = PathsBuilder::new();
    for (_, (p, item)) in by_path {
        paths = paths.path(p, item.build());
    }
    doc.paths = paths.build();
    let mut components = doc.components.take().unwrap_or_default();
    components.add_security_scheme(
        "api_key",
        SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
    );
    components.add_security_scheme(
        "console_session",
        SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::new(
            crate::api::console::COOKIE_NAME,
        ))),
    );
    components.add_security_scheme(
        "csrf_token",
        SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("X-CSRF-Token"))),
    );
    doc.components = Some(components);
    doc.tags = Some(
        [
            "service",
            "files",
            "uploads",
            "videos",
            "models",
            "chat",
            "messages",
            "responses",
            "webhooks",
            "usage",
            "console",
        ]
        .iter()
        .map(|t| TagBuilder::new().name(*t).build())
        .collect(),
    );
    doc
}

/// The document as served and committed: pretty JSON with a final newline.
pub fn document_json() -> String {
    let mut doc = serde_json::to_value(document()).unwrap_or_default();
    spell_links(&mut doc);
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_else(|_| "{}".into());
    s.push('\n');
    s
}

/// utoipa 5 writes a link's `operationId` as `operation_id`; OpenAPI spells it in camel case.
fn spell_links(doc: &mut serde_json::Value) {
    let Some(paths) = doc.get_mut("paths").and_then(|p| p.as_object_mut()) else {
        return;
    };
    for item in paths.values_mut().filter_map(|i| i.as_object_mut()) {
        for op in item.values_mut() {
            let Some(responses) = op.get_mut("responses").and_then(|r| r.as_object_mut()) else {
                continue;
            };
            for response in responses.values_mut() {
                let Some(links) = response.get_mut("links").and_then(|l| l.as_object_mut()) else {
                    continue;
                };
                for link in links.values_mut().filter_map(|l| l.as_object_mut()) {
                    for (snake, camel) in [
                        ("operation_id", "operationId"),
                        ("operation_ref", "operationRef"),
                    ] {
                        if let Some(v) = link.remove(snake) {
                            link.insert(camel.to_owned(), v);
                        }
                    }
                }
            }
        }
    }
}
