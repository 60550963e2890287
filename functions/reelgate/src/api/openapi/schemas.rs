//! Wire shapes for the OpenAPI document that no single Rust type carries: request bodies the
//! handlers read as JSON values (validated field by field in the domain, which names the
//! offending `param`), and answers they build with `json!`. The typed answers (`Video`,
//! `FileObject`, `AgreementStatus`) derive their schemas on the domain types themselves.
//!
//! Response shapes list the fields every answer carries and leave room for more (clients must
//! ignore unknown fields); request shapes list every parameter the service reads.

#![allow(dead_code)] // Read by the `ToSchema` derives only.

use crate::domain::videos::create::{
    MAX_FRAMES, MAX_PROMPT_CHARS, MAX_REFERENCE_AUDIO, MAX_REFERENCE_IMAGES, MAX_REFERENCE_VIDEOS,
    MAX_SECONDS, MIN_SECONDS,
};
use serde_json::Value;
use utoipa::openapi::schema::{
    ArrayBuilder, ObjectBuilder, OneOfBuilder, Schema, SchemaType, Type,
};
use utoipa::openapi::Ref;
use utoipa::ToSchema;

// The create rules' limits come from the constants the rules check (`domain::videos::create`).

/// An integer from `MIN_SECONDS` to `MAX_SECONDS`, or the same number as a string.
fn seconds_schema() -> Schema {
    let numbers: Vec<String> = (MIN_SECONDS..=MAX_SECONDS).map(|n| n.to_string()).collect();
    OneOfBuilder::new()
        .item(
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .minimum(Some(MIN_SECONDS))
                .maximum(Some(MAX_SECONDS)),
        )
        .item(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .pattern(Some(format!("^({})$", numbers.join("|")))),
        )
        .into()
}

fn prompt_schema() -> Schema {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .description(Some(format!("At most {MAX_PROMPT_CHARS} characters.")))
        .min_length(Some(1))
        .max_length(Some(MAX_PROMPT_CHARS))
        .into()
}

/// An optional array of `item` (a schema name) holding `min` to `max` entries.
fn optional_array(item: &str, min: Option<usize>, max: usize, about: Option<&str>) -> Schema {
    ArrayBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .items(Ref::from_schema_name(item))
        .description(about)
        .min_items(min)
        .max_items(Some(max))
        .into()
}

fn frames_schema() -> Schema {
    optional_array(
        "FrameReference",
        Some(1),
        MAX_FRAMES,
        Some("Image-to-video: one or two frames."),
    )
}

fn reference_images_schema() -> Schema {
    optional_array("FileRef", None, MAX_REFERENCE_IMAGES, None)
}

fn reference_videos_schema() -> Schema {
    optional_array("FileRef", None, MAX_REFERENCE_VIDEOS, None)
}

fn reference_audio_schema() -> Schema {
    optional_array("FileRef", None, MAX_REFERENCE_AUDIO, None)
}

/// `{object: "list", data, first_id, last_id, has_more}` of videos.
#[derive(ToSchema)]
pub struct VideoList {
    #[schema(pattern = "^list$")]
    pub object: String,
    pub data: Vec<crate::domain::videos::Video>,
    #[schema(required = true)]
    pub first_id: Option<String>,
    #[schema(required = true)]
    pub last_id: Option<String>,
    pub has_more: bool,
}

/// `{object: "list", data, first_id, last_id, has_more}` of files.
#[derive(ToSchema)]
pub struct FileList {
    #[schema(pattern = "^list$")]
    pub object: String,
    pub data: Vec<crate::domain::files::FileObject>,
    #[schema(required = true)]
    pub first_id: Option<String>,
    #[schema(required = true)]
    pub last_id: Option<String>,
    pub has_more: bool,
}

/// A list envelope whose items are free-form objects (models, input items, ...).
#[derive(ToSchema)]
pub struct ObjectList {
    #[schema(pattern = "^list$")]
    pub object: String,
    pub data: Vec<Value>,
    pub first_id: Option<String>,
    pub last_id: Option<String>,
    pub has_more: Option<bool>,
}

/// `POST /v1/videos` (and the console's create and quote). Either `image_reference` (frames)
/// or `references`, not both.
#[derive(ToSchema)]
#[schema(example = json!({"model": "reel-1", "prompt": "a paper boat on a rainy street", "seconds": 4, "aspect_ratio": "16:9"}))]
pub struct VideoCreateRequest {
    /// A video model id of `GET /v1/videos/models`.
    #[schema(min_length = 1)]
    pub model: String,
    #[schema(schema_with = prompt_schema)]
    pub prompt: String,
    /// `MIN_SECONDS` to `MAX_SECONDS`; OpenAI's SDK sends it as a string (`"8"`), which is
    /// accepted too.
    #[schema(schema_with = seconds_schema)]
    pub seconds: Value,
    pub aspect_ratio: AspectRatio,
    /// OpenAI's SDK parameter. Optional; when given it must be the 768p size of
    /// `aspect_ratio` (`16:9` → `1366x768`, `9:16` → `768x1366`, `21:9` → `1792x768`,
    /// `4:3` → `1024x768`, `1:1` → `768x768`, `3:4` → `768x1024`); with `Auto` it is refused.
    pub size: Option<String>,
    #[schema(schema_with = frames_schema)]
    pub image_reference: Option<Vec<FrameReference>>,
    /// Reference-to-video.
    pub references: Option<References>,
}

#[derive(ToSchema)]
pub enum AspectRatio {
    Auto,
    #[schema(rename = "21:9")]
    R21x9,
    #[schema(rename = "16:9")]
    R16x9,
    #[schema(rename = "4:3")]
    R4x3,
    #[schema(rename = "1:1")]
    R1x1,
    #[schema(rename = "3:4")]
    R3x4,
    #[schema(rename = "9:16")]
    R9x16,
}

#[derive(ToSchema)]
pub struct FrameReference {
    pub file_id: String,
    pub role: FrameRole,
}

#[derive(ToSchema)]
#[schema(rename_all = "snake_case")]
pub enum FrameRole {
    FirstFrame,
    LastFrame,
}

#[derive(ToSchema)]
pub struct References {
    #[schema(schema_with = reference_images_schema)]
    pub images: Option<Vec<FileRef>>,
    #[schema(schema_with = reference_videos_schema)]
    pub videos: Option<Vec<FileRef>>,
    #[schema(schema_with = reference_audio_schema)]
    pub audio: Option<Vec<FileRef>>,
}

#[derive(ToSchema)]
pub struct FileRef {
    pub file_id: String,
}

/// `POST /v1/files`: a multipart form.
#[derive(ToSchema)]
pub struct FileUploadForm {
    /// `vision`, `video`, `audio` or `user_data`.
    #[schema(example = "vision")]
    pub purpose: String,
    #[schema(value_type = String, format = Binary)]
    pub file: Vec<u8>,
}

/// An upload: PUT the bytes to `upload_url` with `upload_headers`, then complete it.
#[derive(ToSchema)]
pub struct Upload {
    pub id: String,
    pub object: String,
    pub status: String,
    pub purpose: String,
    pub filename: String,
    pub bytes: u64,
    pub created_at: i64,
    pub expires_at: i64,
    pub upload_url: String,
    pub upload_method: String,
    pub upload_headers: std::collections::BTreeMap<String, String>,
}

/// A chat model (`GET /v1/models`).
#[derive(ToSchema)]
pub struct Model {
    pub id: String,
    pub object: String,
    pub created: Option<i64>,
    pub owned_by: Option<String>,
}

/// `GET /v1/models`: the chat models.
#[derive(ToSchema)]
pub struct ModelList {
    #[schema(pattern = "^list$")]
    pub object: String,
    pub data: Vec<Model>,
}

/// `GET /v1/usage`: a page of daily buckets.
#[derive(ToSchema)]
pub struct UsagePage {
    #[schema(pattern = "^page$")]
    pub object: String,
    pub data: Vec<UsageBucket>,
    pub has_more: bool,
    /// Pass as `page` for the next days; null on the last page.
    pub next_page: Option<String>,
}

/// One UTC day.
#[derive(ToSchema)]
pub struct UsageBucket {
    #[schema(pattern = "^bucket$")]
    pub object: String,
    /// The day's UTC midnight (Unix seconds).
    pub start_time: i64,
    /// The next day's UTC midnight.
    pub end_time: i64,
    pub results: Vec<UsageResult>,
}

/// The day's usage of one group (one row per currency when nothing is grouped by).
#[derive(ToSchema)]
pub struct UsageResult {
    #[schema(pattern = "^organization\\.usage\\.result$")]
    pub object: String,
    /// The model, when grouped by `model`.
    pub model: Option<String>,
    /// The API key id (`console` for the console), when grouped by `api_key`.
    pub api_key_id: Option<String>,
    /// `input_tokens`, `cached_input_tokens`, `output_tokens` or `video_seconds`, when grouped
    /// by `kind`.
    pub kind: Option<String>,
    /// The billing currency.
    pub currency: String,
    /// What was charged, an exact decimal string.
    #[schema(pattern = "^-?[0-9]+(\\.[0-9]+)?$")]
    pub amount: String,
    /// Charges counted (requests and renders).
    pub requests: i64,
    /// Input tokens at the input price (cached ones not included).
    pub input_tokens: i64,
    /// Input tokens the upstream read from its prompt cache.
    pub cached_input_tokens: i64,
    pub output_tokens: i64,
    /// Seconds of completed renders.
    pub video_seconds: i64,
}

/// This document (an OpenAPI 3.1 object).
#[derive(ToSchema)]
pub struct OpenApiJson {
    pub openapi: String,
    pub info: Value,
    pub paths: Value,
}

/// The video models the caller's plan is entitled to, with prices per second.
#[derive(ToSchema)]
pub struct VideoModelList {
    pub object: String,
    pub data: Vec<Value>,
}

/// A console session (`GET /console/api/session`).
#[derive(ToSchema)]
pub struct ConsoleSessionInfo {
    pub csrf_token: String,
}

/// What the console's JSON routes answer: an object (each route's own fields).
#[derive(ToSchema)]
pub struct ConsoleObject {
    pub object: Option<String>,
}

/// `POST /console/api/keys`: the new key; the secret is shown in this answer only.
#[derive(ToSchema)]
pub struct ApiKeyCreated {
    pub object: String,
    pub id: String,
    pub secret: String,
    pub organization: String,
}

/// One limit of a key: its override (`key`), its plan's per-key limit (`plan`), and the one
/// that applies (`effective`, from `source`); null is unlimited.
#[derive(ToSchema)]
pub struct KeyLimit {
    pub effective: Option<u64>,
    /// `key` or `plan`.
    pub source: String,
    pub key: Option<u64>,
    pub plan: Option<u64>,
}

/// `GET|POST /console/api/keys/{key_id}/limits`: a key's limits and monthly budget.
#[derive(ToSchema)]
pub struct KeyLimits {
    /// `api_key.limits`.
    pub object: String,
    pub id: String,
    pub plan: String,
    pub currency: String,
    pub requests_per_minute: KeyLimit,
    pub tokens_per_minute: KeyLimit,
    pub video_creates_per_minute: KeyLimit,
    /// Decimal string in `currency`; null is no budget.
    pub monthly_budget: Option<String>,
    /// Spent plus reserved this month (UTC), a decimal string.
    pub committed: String,
    /// `YYYY_MM`.
    pub month: String,
}

/// `POST /console/api/keys/{key_id}/limits`: replaces every override and the budget; an absent
/// or null limit falls back to the plan's, an absent or null budget removes it. A limit above the
/// plan's per-key limit is refused (`above_plan_limit`, naming the field).
#[derive(ToSchema)]
#[schema(example = json!({"requests_per_minute": 60, "tokens_per_minute": null, "video_creates_per_minute": null, "monthly_budget": "25.00"}))]
pub struct KeyLimitsRequest {
    #[schema(minimum = 1)]
    pub requests_per_minute: Option<u64>,
    #[schema(minimum = 1)]
    pub tokens_per_minute: Option<u64>,
    #[schema(minimum = 1)]
    pub video_creates_per_minute: Option<u64>,
    /// A non-negative decimal string with at most 6 places.
    pub monthly_budget: Option<String>,
}

/// `{object: "list", data, first_id, last_id, has_more}` of webhook endpoints.
#[derive(ToSchema)]
pub struct WebhookList {
    #[schema(pattern = "^list$")]
    pub object: String,
    pub data: Vec<crate::domain::webhooks::Endpoint>,
    #[schema(required = true)]
    pub first_id: Option<String>,
    #[schema(required = true)]
    pub last_id: Option<String>,
    pub has_more: bool,
}

/// `POST /console/oidc/choose`: the choice page's form.
#[derive(ToSchema)]
pub struct OidcChooseForm {
    pub token: String,
    pub org: String,
}
