//! `POST /v1/videos`: validation of every create rule, the quote, and admission in one atomic
//! write (balance covers the quote plus reservations in flight; a render slot is free).

use super::*;
use crate::domain::accounts::Caller;
use crate::domain::billing::rate_limits::{self, RateLimited, RateStatus};
use crate::domain::catalog::native_renders::NativeRenders;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::files::FileObject;
use crate::domain::ids::new_id;
use crate::domain::Context;
use crate::ports::store::{now_secs, Condition, TransactOp};
use rust_decimal::Decimal;
use serde_json::{Map, Value};
use utoipa::openapi::schema::{
    ArrayBuilder, ObjectBuilder, OneOfBuilder, Schema, SchemaType, Type,
};
use utoipa::openapi::Ref;
use utoipa::ToSchema;

pub const MAX_PROMPT_CHARS: usize = 7000;
pub const MIN_SECONDS: i64 = crate::domain::catalog::native_renders::CONTRACT_SECONDS.0 as i64;
pub const MAX_SECONDS: i64 = crate::domain::catalog::native_renders::CONTRACT_SECONDS.1 as i64;
pub use crate::domain::catalog::ASPECT_RATIOS;
/// The resolution every render is priced and produced at.
pub const RESOLUTION: &str = "768p";

const MIB: u64 = 1024 * 1024;
/// Images must be under 30 MiB (the engine rejects 30 MiB or more).
pub const MAX_IMAGE_BYTES: u64 = 30 * MIB;
pub const MAX_REFERENCE_VIDEO_BYTES: u64 = 50 * MIB;
pub const MAX_REFERENCE_AUDIO_BYTES: u64 = 15 * MIB;
/// How long a reference video or audio file may last, in seconds (the spec's limits table).
pub const REFERENCE_MEDIA_SECS: (f64, f64) = (2.0, 15.0);
/// An image-to-video job's frames: the first, and optionally the last.
pub const MAX_FRAMES: usize = 2;
pub const MAX_REFERENCE_IMAGES: usize = crate::domain::videos::record::MAX_CHARACTER_FRAMES;
pub const MAX_REFERENCE_VIDEOS: usize = 2;
pub const MAX_REFERENCE_AUDIO: usize = 3;

/// `POST /v1/videos` (and the console's create and quote), as [`parse`] reads it: either
/// `image_reference` (frames) or `references`, not both.
#[derive(Debug, Clone, PartialEq, ToSchema)]
#[schema(example = json!({"model": "reel-1", "prompt": "a paper boat on a rainy street", "seconds": 4, "aspect_ratio": "16:9"}))]
pub struct VideoCreateRequest {
    /// A video model id of `GET /v1/videos/models`.
    #[schema(min_length = 1)]
    pub model: String,
    #[schema(schema_with = prompt_schema)]
    pub prompt: String,
    /// OpenAI's SDK sends it as a string (`"8"`), which is accepted too.
    #[schema(schema_with = seconds_schema)]
    pub seconds: u32,
    #[schema(schema_with = aspect_ratio_schema)]
    pub aspect_ratio: String,
    /// OpenAI's SDK parameter. Optional; when given it must be the 768p size of
    /// `aspect_ratio` (`16:9` → `1366x768`, `9:16` → `768x1366`, `21:9` → `1792x768`,
    /// `4:3` → `1024x768`, `1:1` → `768x768`, `3:4` → `768x1024`); with `Auto` it is refused.
    pub size: Option<String>,
    /// Image-to-video.
    #[schema(schema_with = frames_schema)]
    pub image_reference: Option<Vec<FrameReference>>,
    /// Reference-to-video.
    pub references: Option<References>,
    /// Characters of the organization (`POST /v1/videos/characters`) whose frames the render
    /// takes as reference images (`characters[]` in a form).
    #[schema(max_items = 2)]
    pub characters: Option<Vec<String>>,
}

/// An image-to-video frame.
#[derive(Debug, Clone, PartialEq, ToSchema)]
pub struct FrameReference {
    pub file_id: String,
    pub role: FrameRole,
}

#[derive(Debug, Clone, Copy, PartialEq, ToSchema)]
#[schema(rename_all = "snake_case")]
pub enum FrameRole {
    FirstFrame,
    LastFrame,
}

impl FrameRole {
    fn parse(role: Option<&str>) -> Option<FrameRole> {
        match role {
            Some("first_frame") => Some(FrameRole::FirstFrame),
            Some("last_frame") => Some(FrameRole::LastFrame),
            _ => None,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            FrameRole::FirstFrame => "first_frame",
            FrameRole::LastFrame => "last_frame",
        }
    }
}

/// Reference-to-video: the files the render should draw on.
#[derive(Debug, Clone, Default, PartialEq, ToSchema)]
pub struct References {
    #[schema(schema_with = reference_images_schema)]
    pub images: Option<Vec<FileRef>>,
    #[schema(schema_with = reference_videos_schema)]
    pub videos: Option<Vec<FileRef>>,
    #[schema(schema_with = reference_audio_schema)]
    pub audio: Option<Vec<FileRef>>,
}

#[derive(Debug, Clone, PartialEq, ToSchema)]
pub struct FileRef {
    pub file_id: String,
}

impl VideoCreateRequest {
    /// The job's inputs: the frames by role, the references by kind.
    pub fn inputs(&self) -> JobInputs {
        let mut inputs = JobInputs::default();
        for frame in self.image_reference.iter().flatten() {
            let slot = match frame.role {
                FrameRole::FirstFrame => &mut inputs.first_frame,
                FrameRole::LastFrame => &mut inputs.last_frame,
            };
            *slot = Some(frame.file_id.clone());
        }
        if let Some(refs) = &self.references {
            let ids = |list: &Option<Vec<FileRef>>| {
                list.iter()
                    .flatten()
                    .map(|r| r.file_id.clone())
                    .collect::<Vec<_>>()
            };
            inputs.reference_images = ids(&refs.images);
            inputs.reference_videos = ids(&refs.videos);
            inputs.reference_audio = ids(&refs.audio);
        }
        inputs
    }

    /// Each file id with its `param` path (for errors found when the files are looked up) and
    /// the purpose its file must have.
    fn file_params(&self) -> Vec<(String, &str, &'static str)> {
        let mut out = Vec::new();
        for (i, frame) in self.image_reference.iter().flatten().enumerate() {
            out.push((
                format!("image_reference[{i}].file_id"),
                frame.file_id.as_str(),
                "vision",
            ));
        }
        if let Some(refs) = &self.references {
            for (name, list, purpose) in [
                ("images", &refs.images, "vision"),
                ("videos", &refs.videos, "video"),
                ("audio", &refs.audio, "audio"),
            ] {
                for (i, r) in list.iter().flatten().enumerate() {
                    out.push((
                        format!("references.{name}[{i}].file_id"),
                        r.file_id.as_str(),
                        purpose,
                    ));
                }
            }
        }
        out
    }
}

// The schemas' limits come from the constants the rules check.

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

fn aspect_ratio_schema() -> Schema {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(ASPECT_RATIOS.iter().copied()))
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

fn expect_object<'a>(v: &'a Value, param: &str) -> ApiResult<&'a Map<String, Value>> {
    v.as_object()
        .ok_or_else(|| ApiError::invalid(param, format!("{param} must be an object.")))
}

fn expect_array<'a>(v: &'a Value, param: &str) -> ApiResult<&'a Vec<Value>> {
    v.as_array()
        .ok_or_else(|| ApiError::invalid(param, format!("{param} must be an array.")))
}

fn file_id_of(entry: &Value, param: &str) -> ApiResult<String> {
    let obj = expect_object(entry, param)?;
    match obj.get("file_id") {
        Some(Value::String(id)) if !id.is_empty() => Ok(id.clone()),
        _ => Err(ApiError::invalid(
            &format!("{param}.file_id"),
            format!("{param}.file_id must be the id of an uploaded file."),
        )),
    }
}

/// `size` (OpenAI's SDK parameter) is honoured only as what it means here: the 768p size of the
/// requested aspect ratio (`1366x768` for `16:9`, ...). Any other size, or a size with `Auto`
/// (whose size follows the first frame), is refused naming `size` rather than ignored.
fn check_size(size: Option<&Value>, aspect_ratio: &str) -> ApiResult<Option<String>> {
    let size = match size {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(s)) => s.trim(),
        Some(_) => {
            return Err(ApiError::invalid(
                "size",
                "size must be a string such as 1366x768.",
            ))
        }
    };
    let ratio = reelgate_media::AspectRatio::parse(aspect_ratio)
        .unwrap_or(reelgate_media::AspectRatio::Auto);
    if ratio == reelgate_media::AspectRatio::Auto {
        return Err(ApiError::invalid(
            "size",
            "size cannot be combined with aspect_ratio Auto (its size follows the first frame); \
             leave size out or give a fixed aspect_ratio.",
        ));
    }
    let (w, h) = reelgate_media::output_dimensions(ratio, None);
    let expected = format!("{w}x{h}");
    if size != expected {
        return Err(ApiError::invalid(
            "size",
            format!(
                "Videos render at 768p: with aspect_ratio {ratio} the size is {expected}; \
                 '{size}' is not available. Leave size out or send {expected}."
            ),
        ));
    }
    Ok(Some(expected))
}

/// Checks the body's shape and every rule that needs no lookup.
pub fn parse(body: &Value) -> ApiResult<VideoCreateRequest> {
    let obj = crate::domain::params::Params::of(body)?.object();
    const KNOWN: &[&str] = &[
        "model",
        "prompt",
        "seconds",
        "aspect_ratio",
        "image_reference",
        "references",
        "size",
        "characters",
    ];
    if obj.contains_key("input_reference") {
        return Err(ApiError::invalid(
            "input_reference",
            "input_reference is not supported: upload the image with POST /v1/files \
             (purpose vision) and send image_reference: [{file_id, role: first_frame}].",
        ));
    }
    if let Some(unknown) = obj.keys().find(|k| !KNOWN.contains(&k.as_str())) {
        return Err(ApiError::invalid(
            unknown,
            format!("Unknown parameter: {unknown}."),
        ));
    }
    let model = match obj.get("model") {
        Some(Value::String(m)) if !m.is_empty() => m.clone(),
        Some(_) => {
            return Err(ApiError::invalid(
                "model",
                "model must be a video model id.",
            ))
        }
        None => return Err(crate::domain::params::required("model")),
    };
    let prompt = match obj.get("prompt") {
        Some(Value::String(p)) if !p.trim().is_empty() => p.clone(),
        Some(Value::String(_)) => {
            return Err(ApiError::invalid("prompt", "prompt must not be empty."))
        }
        Some(_) => return Err(crate::domain::params::wrong_type("prompt", "a string")),
        None => return Err(crate::domain::params::required("prompt")),
    };
    let chars = prompt.chars().count();
    if chars > MAX_PROMPT_CHARS {
        return Err(ApiError::invalid(
            "prompt",
            format!("prompt is {chars} characters; at most {MAX_PROMPT_CHARS} are allowed."),
        ));
    }
    let seconds = match obj.get("seconds") {
        None => return Err(crate::domain::params::required("seconds")),
        // Accept "8" as OpenAI's SDK sends seconds as a string; the value rules are the same.
        Some(Value::String(s)) => s.trim().parse::<i64>().ok(),
        Some(Value::Number(n)) => n.as_i64(),
        Some(_) => None,
    };
    let seconds = match seconds {
        Some(s) if (MIN_SECONDS..=MAX_SECONDS).contains(&s) => s as u32,
        _ => {
            return Err(ApiError::invalid(
                "seconds",
                format!("seconds must be an integer from {MIN_SECONDS} to {MAX_SECONDS}."),
            ))
        }
    };
    let aspect_ratio = match obj.get("aspect_ratio") {
        Some(Value::String(a)) if ASPECT_RATIOS.contains(&a.as_str()) => a.clone(),
        None => return Err(crate::domain::params::required("aspect_ratio")),
        Some(_) => {
            return Err(ApiError::invalid(
                "aspect_ratio",
                format!("aspect_ratio must be one of {}.", ASPECT_RATIOS.join(", ")),
            ))
        }
    };
    let size = check_size(obj.get("size"), &aspect_ratio)?;
    let has_frames = obj.get("image_reference").is_some_and(|v| !v.is_null());
    let has_refs = obj.get("references").is_some_and(|v| !v.is_null());
    if has_frames && has_refs {
        return Err(ApiError::invalid(
            "references",
            "image_reference and references cannot be used together; choose image-to-video or reference-to-video.",
        ));
    }
    let mut image_reference = None;
    let mut references = None;
    if has_frames {
        let frames = expect_array(&obj["image_reference"], "image_reference")?;
        if frames.is_empty() || frames.len() > MAX_FRAMES {
            return Err(ApiError::invalid(
                "image_reference",
                "image_reference holds one or two images.",
            ));
        }
        let mut parsed: Vec<FrameReference> = Vec::with_capacity(frames.len());
        for (i, frame) in frames.iter().enumerate() {
            let param = format!("image_reference[{i}]");
            let file_id = file_id_of(frame, &param)?;
            let Some(role) = FrameRole::parse(frame.get("role").and_then(Value::as_str)) else {
                return Err(ApiError::invalid(
                    &format!("{param}.role"),
                    "role must be first_frame or last_frame.",
                ));
            };
            if parsed.iter().any(|f| f.role == role) {
                return Err(ApiError::invalid(
                    &format!("{param}.role"),
                    format!(
                        "Each role may be used once; {} appears twice.",
                        role.as_str()
                    ),
                ));
            }
            parsed.push(FrameReference { file_id, role });
        }
        image_reference = Some(parsed);
    }
    if has_refs {
        let refs = expect_object(&obj["references"], "references")?;
        if let Some(unknown) = refs
            .keys()
            .find(|k| !["images", "videos", "audio"].contains(&k.as_str()))
        {
            return Err(ApiError::invalid(
                &format!("references.{unknown}"),
                "references holds images, videos and audio.",
            ));
        }
        let mut parsed = References::default();
        let groups: [(&str, usize, &mut Option<Vec<FileRef>>); 3] = [
            ("images", MAX_REFERENCE_IMAGES, &mut parsed.images),
            ("videos", MAX_REFERENCE_VIDEOS, &mut parsed.videos),
            ("audio", MAX_REFERENCE_AUDIO, &mut parsed.audio),
        ];
        for (name, max, into) in groups {
            let Some(list) = refs.get(name).filter(|v| !v.is_null()) else {
                continue;
            };
            let param = format!("references.{name}");
            let list = expect_array(list, &param)?;
            if list.len() > max {
                return Err(ApiError::invalid(
                    &param,
                    format!("{param} holds at most {max} files."),
                ));
            }
            let mut files = Vec::with_capacity(list.len());
            for (i, entry) in list.iter().enumerate() {
                files.push(FileRef {
                    file_id: file_id_of(entry, &format!("{param}[{i}]"))?,
                });
            }
            *into = Some(files);
        }
        let none = |list: &Option<Vec<FileRef>>| list.as_ref().is_none_or(Vec::is_empty);
        if none(&parsed.images) && none(&parsed.videos) {
            return Err(ApiError::invalid(
                "references",
                "references needs at least one image or video; audio alone is not accepted.",
            ));
        }
        references = Some(parsed);
    }
    Ok(VideoCreateRequest {
        model,
        prompt,
        seconds,
        aspect_ratio,
        size,
        image_reference,
        references,
        characters: parse_characters(obj.get("characters"))?,
    })
}

/// `characters`: ids of the organization's characters (checked when admitted).
pub fn parse_characters(value: Option<&Value>) -> ApiResult<Option<Vec<String>>> {
    use crate::domain::videos::characters::MAX_CHARACTERS_PER_JOB;
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let list = expect_array(value, "characters")?;
    if list.len() > MAX_CHARACTERS_PER_JOB {
        return Err(ApiError::invalid(
            "characters",
            format!("characters holds at most {MAX_CHARACTERS_PER_JOB} ids."),
        ));
    }
    list.iter()
        .enumerate()
        .map(|(i, v)| match v {
            Value::String(id) if !id.is_empty() => Ok(id.clone()),
            _ => Err(ApiError::invalid(
                &format!("characters[{i}]"),
                "Each character is the id of one of your characters (char_…).",
            )),
        })
        .collect::<ApiResult<Vec<_>>>()
        .map(Some)
}

fn size_limit(purpose: &str) -> u64 {
    match purpose {
        "video" => MAX_REFERENCE_VIDEO_BYTES,
        "audio" => MAX_REFERENCE_AUDIO_BYTES,
        _ => MAX_IMAGE_BYTES,
    }
}

/// Every referenced file exists in the caller's organization, has the matching purpose and fits
/// (an image also within the engine's own limit, `engine_image_limit`, when it states one).
async fn check_files(
    cx: Context<'_>,
    org: &str,
    req: &VideoCreateRequest,
    engine_image_limit: Option<u64>,
) -> ApiResult<()> {
    for (param, id, purpose) in req.file_params() {
        let (param, purpose) = (param.as_str(), &purpose);
        let file: FileObject = match crate::domain::files::find(cx, org, id).await {
            Ok(f) => f,
            Err(e) if e.kind == crate::domain::error::ErrorKind::NotFound => {
                return Err(ApiError::invalid(
                    param,
                    format!("No file {id} exists in your organization."),
                ))
            }
            Err(e) => return Err(e),
        };
        if file.purpose != *purpose {
            return Err(ApiError::invalid(
                param,
                format!(
                    "File {id} has purpose '{}'; this field needs purpose '{purpose}'.",
                    file.purpose
                ),
            ));
        }
        let limit = size_limit(purpose);
        // Images must be strictly under the limit; videos and audio may reach it.
        let too_big = if *purpose == "vision" {
            file.bytes >= limit
        } else {
            file.bytes > limit
        };
        if too_big {
            return Err(ApiError::invalid(
                param,
                format!(
                    "File {id} is {} bytes; the limit for this field is {} MiB.",
                    file.bytes,
                    limit / MIB
                ),
            ));
        }
        if let Some(engine_limit) = engine_image_limit.filter(|_| *purpose == "vision") {
            if file.bytes > engine_limit {
                return Err(ApiError::invalid(
                    param,
                    format!(
                        "File {id} is {} bytes; the video model '{}' takes images of at most {engine_limit} bytes.",
                        file.bytes, req.model
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Refuses a request whose inputs or aspect ratio the model's engine would not honour (checked
/// before files, agreement and admission, so nothing is reserved for it).
pub fn check_capabilities(
    caps: &crate::domain::catalog::Capabilities,
    model: &str,
    req: &VideoCreateRequest,
) -> ApiResult<()> {
    let i = &req.inputs();
    let sent = [
        ("first_frame", i.first_frame.is_some()),
        ("last_frame", i.last_frame.is_some()),
        ("reference_images", !i.reference_images.is_empty()),
        ("reference_videos", !i.reference_videos.is_empty()),
        ("reference_audio", !i.reference_audio.is_empty()),
    ];
    for (input, present) in sent {
        if present && !caps.honours(input) {
            let param = crate::domain::catalog::INPUTS
                .iter()
                .find(|(name, _)| *name == input)
                .map_or("model", |(_, param)| *param);
            let honoured = if caps.inputs.is_empty() {
                "none (text to video only)".to_owned()
            } else {
                caps.inputs.join(", ")
            };
            return Err(ApiError::invalid(
                param,
                format!(
                    "The video model '{model}' does not use a {} input; it honours: {honoured}. \
                     Remove it or choose another model.",
                    input.replace('_', " ")
                ),
            ));
        }
    }
    if req.characters.as_ref().is_some_and(|c| !c.is_empty()) && !caps.honours("reference_images") {
        return Err(ApiError::invalid(
            "characters",
            format!(
                "The video model '{model}' takes no reference images, so it cannot draw \
                 characters. Remove characters or choose another model."
            ),
        ));
    }
    if let Some(max) = caps.native.max_reference_images {
        if i.reference_images.len() > max {
            return Err(ApiError::invalid(
                "references.images",
                format!("The video model '{model}' takes at most {max} reference images."),
            ));
        }
    }
    match caps.seconds {
        Some((min, max)) if (min..=max).contains(&req.seconds) => {}
        Some((_, max)) => {
            return Err(ApiError::invalid(
                "seconds",
                format!(
                "The video model '{model}' renders at most {max} seconds; ask for {MIN_SECONDS} \
                     to {max} seconds or choose another model."
            ),
            ))
        }
        None => {
            return Err(ApiError::invalid(
                "seconds",
                format!(
                    "The video model '{model}' renders no clip of {} seconds.",
                    req.seconds
                ),
            ))
        }
    }
    if !caps.renders(&req.aspect_ratio) {
        return Err(ApiError::invalid(
            "aspect_ratio",
            format!(
                "The video model '{model}' renders at {}; it cannot render {}.",
                caps.aspect_ratios.join(", "),
                req.aspect_ratio
            ),
        ));
    }
    Ok(())
}

/// A create request validated and priced: what the console shows before submitting, and what
/// admission reserves.
#[derive(Clone, Debug, serde::Serialize, ToSchema)]
pub struct Quote {
    #[schema(value_type = String, pattern = "^video\\.quote$")]
    pub object: &'static str,
    pub model: String,
    pub seconds: u32,
    /// Exact decimal strings in `currency`.
    #[serde(with = "rust_decimal::serde::str")]
    #[schema(value_type = String)]
    pub per_second: Decimal,
    /// The exact amount reserved at admission and charged on completion.
    #[serde(with = "rust_decimal::serde::str")]
    #[schema(value_type = String)]
    pub amount: Decimal,
    pub currency: String,
    /// The organization's available balance (balance minus reservations in flight).
    #[serde(with = "rust_decimal::serde::str")]
    #[schema(value_type = String)]
    pub available: Decimal,
    #[serde(skip)]
    engine: Option<String>,
    #[serde(skip)]
    plan: String,
}

/// Validates a create request (every rule but the files, the agreement and admission) and
/// prices it for the caller's organization.
pub async fn quote(cx: Context<'_>, caller: &Caller, body: &Value) -> ApiResult<Quote> {
    Ok(priced(cx, caller, body).await?.1)
}

async fn priced(
    cx: Context<'_>,
    caller: &Caller,
    body: &Value,
) -> ApiResult<(VideoCreateRequest, Quote)> {
    let req = parse(body)?;
    crate::observability::telemetry::note_prompt(|| req.prompt.clone());
    let org = cx.accounts().org(&caller.org).await?;
    let model = cx
        .catalog
        .video_model(&req.model)
        .filter(|m| m.plans.contains(&org.plan))
        .ok_or_else(|| {
            ApiError::not_found(
                "model_not_found",
                format!(
                    "The video model '{}' does not exist or your plan is not entitled to it.",
                    req.model
                ),
            )
            .with_param("model")
        })?;
    // Only a catalog id reaches the log line (never a caller's arbitrary string).
    crate::observability::telemetry::note_model(&model.id);
    if model
        .engine
        .as_deref()
        .and_then(|e| cx.catalog.engine(e))
        .is_none()
    {
        return Err(ApiError::unavailable(
            "provider_unavailable",
            format!(
                "No video engine is configured for '{}'. Try again later.",
                model.id
            ),
        ));
    }
    check_capabilities(&cx.catalog.capabilities(model), &model.id, &req)?;
    let pricing = model
        .pricing
        .iter()
        .find(|p| p.resolution == RESOLUTION && p.currency == org.currency)
        .ok_or_else(|| {
            ApiError::unavailable(
                "provider_unavailable",
                format!(
                    "'{}' has no {RESOLUTION} price in {}.",
                    model.id, org.currency
                ),
            )
        })?;
    let quote = Quote {
        object: "video.quote",
        model: model.id.clone(),
        seconds: req.seconds,
        per_second: pricing.per_second,
        amount: pricing.per_second * Decimal::from(req.seconds),
        currency: pricing.currency.clone(),
        available: org.available,
        engine: model.engine.clone(),
        plan: org.plan.clone(),
    };
    Ok((req, quote))
}

/// Admits a job and starts its workflow, without an idempotency claim or the create rate
/// limits (the admission step of [`create`]); returns the job as created.
pub async fn admit_job(
    cx: Context<'_>,
    workflow: Option<&dyn crate::ports::workflow::Workflow>,
    caller: &Caller,
    body: &Value,
) -> ApiResult<Video> {
    create_with(cx, workflow, caller, body, None, None).await
}

/// The video a new job is made from, as its use case checked it: a completed video of the
/// caller's organization, or a file the caller sent with the request.
#[derive(Clone, Debug)]
pub struct Source {
    pub origin: SourceOrigin,
    pub operation: SourceOperation,
    /// An extension's source length in seconds (the output lasts it and the segment).
    pub base_seconds: Option<i64>,
    /// The source's seconds, as video-to-video's bounds weigh them.
    pub seconds: f64,
    /// The render that made a source by id: an engine that extends only its own videos is
    /// sent its render id.
    pub render: Option<SourceRender>,
}

/// The engine render a completed source video came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceRender {
    pub engine: String,
    pub render_id: String,
    /// When the source completed (Unix seconds).
    pub completed_at: i64,
}

#[derive(Clone, Debug)]
pub enum SourceOrigin {
    /// A completed video of the organization, by id.
    Video(String),
    /// The caller's MP4, checked by [`crate::domain::videos::source_upload::check`].
    Upload(bytes::Bytes),
}

impl Source {
    /// A completed video of the organization as the source of `operation`.
    pub fn of_job(job: &JobRecord, operation: SourceOperation) -> Source {
        let seconds = job.output_seconds();
        Source {
            origin: SourceOrigin::Video(job.id.clone()),
            operation,
            base_seconds: (operation == SourceOperation::Extension).then_some(seconds),
            seconds: seconds as f64,
            render: match (&job.engine, &job.render_id) {
                (Some(engine), Some(render_id)) => Some(SourceRender {
                    engine: engine.clone(),
                    render_id: render_id.clone(),
                    completed_at: job.completed_at.unwrap_or(job.created_at),
                }),
                _ => None,
            },
        }
    }

    fn video_id(&self) -> Option<&str> {
        match &self.origin {
            SourceOrigin::Video(id) => Some(id),
            SourceOrigin::Upload(_) => None,
        }
    }

    /// The request parameter that names the source.
    fn param(&self) -> &'static str {
        match (&self.origin, self.operation) {
            (SourceOrigin::Video(_), SourceOperation::Remix) => "video_id",
            _ => "video",
        }
    }

    /// How the render takes the source on a model whose engine is `engine` with `native`
    /// operations (the use case has refused an operation the model cannot do at all): the
    /// video itself where the engine does the operation natively within its bounds, else a
    /// frame of it. `segment` is an extension's seconds; `now` is Unix seconds.
    fn source_use(
        &self,
        engine: Option<&str>,
        renders: &crate::domain::catalog::native_renders::NativeRenders,
        segment: u32,
        now: i64,
    ) -> SourceUse {
        let native = &renders.operations;
        match self.operation {
            SourceOperation::Remix if native.video_to_video_takes(self.seconds) => SourceUse::Video,
            SourceOperation::Remix => SourceUse::FirstFrame,
            SourceOperation::Edit => SourceUse::Video,
            SourceOperation::Extension => {
                let base = self.base_seconds.unwrap_or_default();
                // The provider continues its own render from its end: only where that render
                // lasted exactly the source's seconds (none of it trimmed away) does the
                // continuation start where the source ends.
                let untrimmed =
                    u32::try_from(base).is_ok_and(|b| renders.duration_for(b) == Some(b));
                let own = untrimmed
                    && self.render.as_ref().is_some_and(|r| {
                        Some(r.engine.as_str()) == engine
                            && native
                                .own_renders_kept_hours
                                .is_none_or(|h| now - r.completed_at < i64::from(h) * 3600)
                    });
                match native.extends(base, segment, own) {
                    true if native.extension_includes_source => SourceUse::VideoWithContinuation,
                    true => SourceUse::Video,
                    false => SourceUse::LastFrame,
                }
            }
        }
    }

    /// The provider's render id the engine is sent with the source, when it extends its own.
    fn own_render(&self, source_use: SourceUse) -> Option<String> {
        (source_use != SourceUse::LastFrame && self.operation == SourceOperation::Extension)
            .then(|| self.render.as_ref().map(|r| r.render_id.clone()))
            .flatten()
    }
}

/// The largest source a job copies: a conformed output is 768p H.264 of at most
/// `MAX_SECONDS`, far below this.
pub const MAX_SOURCE_BYTES: u64 = 256 * MIB;

/// Copies what the job takes from other records into its own folder: the source's output (or
/// the caller's uploaded source) and its characters' frames. Deleting the source or a
/// character (or its retention ending) then never takes a running job's input.
async fn copy_inputs(
    cx: Context<'_>,
    org: &str,
    source: Option<&Source>,
    character_frames: &[String],
    video_id: &str,
) -> ApiResult<()> {
    let mut copies = Vec::new();
    if let Some(source) = source {
        let to = source_video_blob_key(org, video_id);
        match &source.origin {
            SourceOrigin::Video(id) => {
                copies.push((output_blob_key(org, id), to, "video/mp4", source.param()))
            }
            SourceOrigin::Upload(bytes) => {
                cx.blobs.put_bytes(&to, "video/mp4", bytes.clone()).await?
            }
        }
    }
    copies.extend(character_frames.iter().enumerate().map(|(i, from)| {
        (
            from.clone(),
            character_frame_blob_key(org, video_id, i),
            "image/jpeg",
            "characters",
        )
    }));
    for (from, to, content_type, param) in copies {
        // Deleted since it was checked (a delete racing this request): nothing is reserved yet.
        let read = cx.blobs.get(&from, None).await.map_err(|e| match e {
            crate::ports::blobs::BlobError::NotFound => ApiError::invalid(
                param,
                "What this request is made from was deleted while it was admitted; nothing was \
                 reserved.",
            ),
            other => other.into(),
        })?;
        cx.blobs
            .put_stream(&to, content_type, read.body, MAX_SOURCE_BYTES)
            .await?;
    }
    Ok(())
}

/// What a create answers, as the route and the console render it.
pub enum CreateAnswer {
    /// The first answer to this `Idempotency-Key`, sent again as it was.
    Replayed(Value),
    /// The job this key created before (its first answer could not be recorded).
    Existing(Video),
    /// Refused by the video-create rate limits of the key or the organization.
    Limited(RateLimited),
    /// Admitted under the limits: the job, or why it could not be created; with the limits'
    /// status for the caller's headers.
    Admitted {
        result: ApiResult<Video>,
        status: RateStatus,
    },
}

/// The create use case, for `POST /v1/videos` and the console alike: the caller's
/// `Idempotency-Key` claim (`idempotency_key`, the header's raw value), the video-create rate
/// limits of the key and the organization, then the create rules, the quote and admission
/// (balance, key budget, concurrency) in one transaction that also binds the claim.
pub async fn create(
    cx: Context<'_>,
    workflow: Option<&dyn crate::ports::workflow::Workflow>,
    caller: &Caller,
    idempotency_key: Option<&[u8]>,
    body: &Value,
) -> ApiResult<CreateAnswer> {
    create_from(cx, workflow, caller, idempotency_key, body, None).await
}

/// [`create`] of a job made from `source` (a remix: `body` is the create request its use case
/// made of the source and the new prompt), or of a new video when `source` is None. One
/// `Idempotency-Key` names one request: the same key on a create and a remix is a conflict.
pub async fn create_from(
    cx: Context<'_>,
    workflow: Option<&dyn crate::ports::workflow::Workflow>,
    caller: &Caller,
    idempotency_key: Option<&[u8]>,
    body: &Value,
    source: Option<&Source>,
) -> ApiResult<CreateAnswer> {
    use crate::domain::idempotency::{self as idem, Begin};
    let key = idem::key_from(idempotency_key)?;
    let mut fingerprint = idem::Fingerprint::new("videos");
    if let Some(source) = source {
        fingerprint.part(source.operation.as_str().as_bytes());
        match &source.origin {
            SourceOrigin::Video(id) => fingerprint.part(b"of").part(id.as_bytes()),
            SourceOrigin::Upload(bytes) => fingerprint.part(b"upload").part(bytes),
        };
    }
    let fingerprint = fingerprint.json(body).clone().finish();
    let claim = match idem::begin(cx, caller, "videos", key.as_deref(), &fingerprint).await? {
        Begin::Proceed(claim) => claim,
        Begin::Replay(first) => return Ok(CreateAnswer::Replayed(first)),
        Begin::Resource(video_id) => {
            let video =
                crate::domain::videos::queries::retrieve(cx, &caller.org, &video_id).await?;
            return Ok(CreateAnswer::Existing(video));
        }
    };
    let plan = cx.accounts().org(&caller.org).await?.plan;
    let grant = match rate_limits::acquire(
        cx.store,
        caller,
        cx.catalog.plan(&plan),
        rate_limits::Kind::VideoCreate,
        0,
    )
    .await
    {
        Ok(grant) => grant,
        Err(refused) => {
            idem::release(cx, claim).await;
            return match refused {
                rate_limits::AcquireError::Limited(limited) => Ok(CreateAnswer::Limited(limited)),
                rate_limits::AcquireError::Store(e) => Err(e.into()),
            };
        }
    };
    let result = match create_with(cx, workflow, caller, body, claim.as_ref(), source).await {
        Ok(video) => match serde_json::to_value(&video) {
            Ok(first) => idem::finish(cx, claim, &first).await.map(|()| video),
            Err(e) => Err(ApiError::internal("recording an idempotent answer", e)),
        },
        Err(e) => {
            idem::release(cx, claim).await;
            Err(e)
        }
    };
    Ok(CreateAnswer::Admitted {
        result,
        status: grant.status,
    })
}

/// [`create`] for a request holding an `Idempotency-Key` claim: the admission binds the job to
/// the claim in the same transaction, so no retry can admit a second job for the key.
pub async fn create_with(
    cx: Context<'_>,
    workflow: Option<&dyn crate::ports::workflow::Workflow>,
    caller: &Caller,
    body: &Value,
    claim: Option<&crate::domain::idempotency::Claim>,
    source: Option<&Source>,
) -> ApiResult<Video> {
    let (req, priced) = priced(cx, caller, body).await?;
    let source_only = cx
        .catalog
        .video_model(&priced.model)
        .is_some_and(|m| cx.catalog.capabilities(m).native.operations.source_only);
    if source_only && source.is_none() {
        return Err(ApiError::invalid(
            "model",
            format!(
                "The video model '{}' renders only from a source video: use POST \
                 /v1/videos/edits or /v1/videos/{{video_id}}/remix.",
                priced.model
            ),
        ));
    }
    let engine_image_limit = priced
        .engine
        .as_deref()
        .and_then(|e| cx.catalog.engine(e))
        .and_then(|e| e.native_renders().max_image_bytes);
    check_files(cx, &caller.org, &req, engine_image_limit).await?;
    let most = cx
        .catalog
        .video_model(&priced.model)
        .and_then(|m| cx.catalog.capabilities(m).native.max_reference_images)
        .unwrap_or(MAX_REFERENCE_IMAGES)
        .min(MAX_REFERENCE_IMAGES);
    let own_references = req.inputs().reference_images.len();
    let character_frames = match &req.characters {
        Some(ids) if !ids.is_empty() => {
            // Each character needs one frame at least; more are spread within the room.
            let room = most.saturating_sub(own_references);
            if ids.len() > room {
                return Err(ApiError::invalid(
                    "characters",
                    format!(
                        "{} characters and {own_references} reference images need at least {} \
                         reference images; the video model '{}' takes at most {most}.",
                        ids.len(),
                        ids.len() + own_references,
                        priced.model
                    ),
                ));
            }
            crate::domain::videos::characters::frames_for_job(cx, &caller.org, ids, room).await?
        }
        _ => Vec::new(),
    };
    if !crate::domain::accounts::agreement::has_agreed(cx, &caller.org, &caller.person).await? {
        return Err(ApiError::forbidden(
            "agreement_required",
            format!(
                "Agree to the Video Service Terms (version {}) in the console playground before creating videos.",
                cx.catalog.terms_version
            ),
        ));
    }
    let plan = cx.catalog.plan(&priced.plan).ok_or_else(|| {
        ApiError::internal("admitting a video", format!("unknown plan {}", priced.plan))
    })?;
    let quote = priced.amount;
    let id = new_id("video");
    let now = now_secs();
    let source_use = source.map(|s| {
        let renders = cx
            .catalog
            .video_model(&priced.model)
            .map(|m| cx.catalog.capabilities(m).native)
            .unwrap_or_else(|| NativeRenders::kind_default("reference", None));
        s.source_use(priced.engine.as_deref(), &renders, req.seconds, now)
    });
    // A key with a monthly budget commits the quote now; an unbilled end gives it back.
    let budget = match &caller.credential {
        crate::domain::accounts::Credential::ApiKey { key_id } => {
            caller.budget.as_ref().map(|b| (key_id.clone(), b))
        }
        _ => None,
    };
    if let Some((_, b)) = &budget {
        crate::domain::billing::budgets::admit_render(b, quote)?;
    }
    let from = |operation: SourceOperation| {
        source
            .filter(|s| s.operation == operation)
            .and_then(|s| s.video_id().map(str::to_owned))
    };
    let record = JobRecord {
        id: id.clone(),
        org: caller.org.clone(),
        person: caller.person.clone(),
        // The key the job is attributed to (`console` for the console playground).
        key: caller.key_id().to_owned(),
        model: priced.model.clone(),
        engine: priced.engine.clone(),
        prompt: req.prompt.clone(),
        seconds: i64::from(req.seconds),
        aspect_ratio: req.aspect_ratio.clone(),
        status: JobStatus::Moderating,
        progress: 0,
        cost: quote,
        currency: priced.currency.clone(),
        created_at: now,
        completed_at: None,
        thumbnail: false,
        reservation: Reservation::Held,
        inputs: JobInputs {
            source_use,
            source_render: source.and_then(|s| source_use.and_then(|u| s.own_render(u))),
            characters: req.characters.clone().unwrap_or_default(),
            character_frames: character_frames.len() as u32,
            ..req.inputs()
        },
        budget_month: budget.as_ref().map(|(_, b)| b.month.clone()),
        engine_prompt: None,
        render_id: None,
        render_started_ms: None,
        size: None,
        error_code: None,
        error_message: None,
        expires_at: None,
        remixed_from: from(SourceOperation::Remix),
        extended_from: from(SourceOperation::Extension),
        edited_from: from(SourceOperation::Edit),
        extension_base_seconds: source.and_then(|s| s.base_seconds),
        source_operation: source.map(|s| s.operation),
    };
    let copied = source.is_some() || !character_frames.is_empty();
    if let Err(e) = copy_inputs(cx, &caller.org, source, &character_frames, &id).await {
        // A crash before this leaves the copies to the blobs' age rule (docs/data.md).
        crate::domain::videos::jobs::discard_blobs(cx, &caller.org, &id).await;
        return Err(e);
    }
    let job = record.to_item();
    let video = Video::of(&record);
    // The admission's writes, by position: a refused transaction names the one that refused.
    const RESERVE_AT: usize = 0;
    const CLAIM_AT: usize = 3;
    let mut ops = vec![
        crate::domain::billing::render_charges::reserve_op(
            &caller.org,
            quote,
            plan.max_concurrent_renders,
        ),
        TransactOp::Put {
            item: job,
            condition: Some(Condition::NotExists),
        },
        // Found by the recovery pass if the process dies before the workflow starts.
        TransactOp::Put {
            item: crate::domain::videos::jobs::unstarted_marker(&caller.org, &id, now),
            condition: Some(Condition::NotExists),
        },
    ];
    if let Some(claim) = claim {
        debug_assert_eq!(ops.len(), CLAIM_AT);
        ops.push(claim.bind_op(&id));
    }
    let budget_at = budget.map(|(key_id, b)| {
        ops.push(crate::domain::billing::budgets::reserve_op(
            crate::domain::accounts::api_key_key(&key_id),
            b,
            quote,
        ));
        (ops.len() - 1, b)
    });
    let admitted = cx.store.transact(ops).await;
    if let Err(e) = admitted {
        if copied {
            crate::domain::videos::jobs::discard_blobs(cx, &caller.org, &id).await;
        }
        if let Some((at, b)) = budget_at {
            if e.failed_at(at) && !e.failed_at(RESERVE_AT) {
                return Err(crate::domain::billing::budgets::exceeded(b));
            }
        }
        if claim.is_some() && e.failed_at(CLAIM_AT) {
            return Err(ApiError::new(
                crate::domain::error::ErrorKind::Conflict,
                "idempotency_key_in_use",
                "Another request took over this Idempotency-Key. Retry it later.",
            ));
        }
        if !e.failed_at(RESERVE_AT) {
            return Err(e.into());
        }
        let now_org = cx.accounts().org(&caller.org).await?;
        if now_org.available < quote {
            return Err(ApiError::insufficient_credits(format!(
                "This render is quoted at {quote} {}; your available balance is {} {} ({} is reserved for renders in flight).",
                priced.currency, now_org.available, now_org.currency, now_org.reserved
            )));
        }
        return Err(ApiError::new(
            crate::domain::error::ErrorKind::RateLimited {
                retry_after_secs: None,
            },
            "concurrency_limit_exceeded",
            format!(
                "Your plan allows {} renders in progress at once; wait for one to finish.",
                plan.max_concurrent_renders
            ),
        ));
    }
    tracing::info!(video_id = %id, org = %caller.org, %quote, "video admitted");
    crate::observability::metrics::reservations_held(1);
    crate::domain::videos::jobs::start_job(cx, workflow, &caller.org, &id).await?;
    Ok(video)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn source_of(operation: SourceOperation, seconds: i64, render: Option<(&str, i64)>) -> Source {
        Source {
            origin: SourceOrigin::Video("video_1".into()),
            operation,
            base_seconds: (operation == SourceOperation::Extension).then_some(seconds),
            seconds: seconds as f64,
            render: render.map(|(engine, completed_at)| SourceRender {
                engine: engine.into(),
                render_id: "models/veo/operations/op1".into(),
                completed_at,
            }),
        }
    }

    #[test]
    fn a_source_is_taken_natively_only_within_the_provider_s_bounds() {
        use SourceOperation::*;
        let now = 1_800_000_000;
        let veo = NativeRenders::kind_default("veo", None);
        let own = Some(("veo-1", now - 3600));
        let ext = |s: i64, render, at| {
            source_of(Extension, s, render).source_use(Some("veo-1"), &veo, 4, at)
        };
        assert_eq!(ext(4, own, now), SourceUse::VideoWithContinuation);
        assert_eq!(
            source_of(Extension, 4, own)
                .own_render(SourceUse::VideoWithContinuation)
                .as_deref(),
            Some("models/veo/operations/op1")
        );
        // Rendered at 6 s and trimmed to 5: the continuation would not start where it ends.
        assert_eq!(ext(5, own, now), SourceUse::LastFrame);
        assert_eq!(
            ext(4, Some(("other-engine", now)), now),
            SourceUse::LastFrame
        );
        assert_eq!(ext(4, None, now), SourceUse::LastFrame);
        assert_eq!(
            ext(4, own, now + 48 * 3600),
            SourceUse::LastFrame,
            "Veo keeps it two days"
        );
        // A segment longer than Veo's 7 s is chained too.
        assert_eq!(
            source_of(Extension, 4, own).source_use(Some("veo-1"), &veo, 8, now),
            SourceUse::LastFrame
        );
        assert_eq!(
            source_of(Remix, 4, own).source_use(Some("veo-1"), &veo, 4, now),
            SourceUse::FirstFrame
        );

        let xai = NativeRenders::kind_default("xai", None);
        let on_xai = |op, s: i64| source_of(op, s, None).source_use(Some("grok"), &xai, 4, now);
        assert_eq!(
            on_xai(Extension, 6),
            SourceUse::VideoWithContinuation,
            "any video"
        );
        assert_eq!(on_xai(Remix, 8), SourceUse::Video);
        assert_eq!(
            on_xai(Remix, 9),
            SourceUse::FirstFrame,
            "over the 8.7 s edits take"
        );
        assert_eq!(on_xai(Edit, 6), SourceUse::Video);
    }

    fn base() -> Value {
        json!({"model": "reel-1", "prompt": "a cat", "seconds": 4, "aspect_ratio": "16:9"})
    }

    fn param_of(body: Value) -> Option<String> {
        parse(&body).err().and_then(|e| e.param)
    }

    #[test]
    fn minimal_request_parses() {
        let req = parse(&base()).expect("valid");
        assert_eq!(req.seconds, 4);
        assert_eq!(req.inputs(), JobInputs::default());
    }

    #[test]
    fn each_rule_names_its_param() {
        let mut b = base();
        b["seconds"] = json!(3);
        assert_eq!(param_of(b), Some("seconds".into()));
        let mut b = base();
        b["seconds"] = json!(16);
        assert_eq!(param_of(b), Some("seconds".into()));
        let mut b = base();
        b["seconds"] = json!(4.5);
        assert_eq!(param_of(b), Some("seconds".into()));
        let mut b = base();
        b["prompt"] = json!("x".repeat(7001));
        assert_eq!(param_of(b), Some("prompt".into()));
        let mut b = base();
        b["prompt"] = json!("é".repeat(7000));
        assert!(parse(&b).is_ok(), "7000 characters (not bytes) are allowed");
        let mut b = base();
        b["aspect_ratio"] = json!("2:1");
        assert_eq!(param_of(b), Some("aspect_ratio".into()));
        let mut b = base();
        b.as_object_mut().expect("obj").remove("aspect_ratio");
        assert_eq!(param_of(b), Some("aspect_ratio".into()));
        let mut b = base();
        b["image_reference"] = json!([{"file_id": "file_a", "role": "first_frame"}, {"file_id": "file_b", "role": "first_frame"}]);
        assert_eq!(param_of(b), Some("image_reference[1].role".into()));
        let mut b = base();
        b["image_reference"] = json!([{"file_id": "f", "role": "first_frame"}, {"file_id": "g", "role": "last_frame"}, {"file_id": "h", "role": "last_frame"}]);
        assert_eq!(param_of(b), Some("image_reference".into()));
        let mut b = base();
        b["image_reference"] = json!([{"file_id": "f", "role": "first_frame"}]);
        b["references"] = json!({"images": [{"file_id": "g"}]});
        assert_eq!(param_of(b), Some("references".into()));
        let mut b = base();
        b["references"] = json!({"audio": [{"file_id": "g"}]});
        assert_eq!(param_of(b), Some("references".into()));
        let mut b = base();
        b["references"] = json!({"images": (0..9).map(|i| json!({"file_id": format!("f{i}")})).collect::<Vec<_>>()});
        assert_eq!(param_of(b), Some("references.images".into()));
        let mut b = base();
        b["references"] = json!({"videos": [{"file_id": "a"}, {"file_id": "b"}, {"file_id": "c"}]});
        assert_eq!(param_of(b), Some("references.videos".into()));
        let mut b = base();
        b["references"] = json!({"images": [{"file_id": "a"}], "audio": [{"file_id": "1"}, {"file_id": "2"}, {"file_id": "3"}, {"file_id": "4"}]});
        assert_eq!(param_of(b), Some("references.audio".into()));
    }

    #[test]
    fn size_is_the_768p_size_of_the_aspect_ratio_or_refused() {
        for (ratio, size) in [
            ("16:9", "1366x768"),
            ("9:16", "768x1366"),
            ("21:9", "1792x768"),
            ("4:3", "1024x768"),
            ("1:1", "768x768"),
            ("3:4", "768x1024"),
        ] {
            let mut b = base();
            b["aspect_ratio"] = json!(ratio);
            b["size"] = json!(size);
            assert!(parse(&b).is_ok(), "{ratio} with {size}");
            b["size"] = json!("1280x720");
            assert_eq!(param_of(b), Some("size".into()), "{ratio} with 1280x720");
        }
        let mut b = base();
        b["size"] = json!("768x1366");
        assert_eq!(param_of(b), Some("size".into()), "a size of another ratio");
        let mut b = base();
        b["aspect_ratio"] = json!("Auto");
        b["size"] = json!("1366x768");
        assert_eq!(param_of(b), Some("size".into()), "Auto has no fixed size");
        let mut b = base();
        b["size"] = json!(1366);
        assert_eq!(param_of(b), Some("size".into()));
        let mut b = base();
        b["size"] = Value::Null;
        assert!(parse(&b).is_ok(), "size: null is no size");
        let mut b = base();
        b["input_reference"] = json!("file_abc");
        assert_eq!(
            param_of(b),
            Some("input_reference".into()),
            "OpenAI's input_reference is refused by name (use image_reference)"
        );
    }

    #[test]
    fn last_frame_alone_and_either_order_are_fine() {
        let mut b = base();
        b["image_reference"] = json!([{"file_id": "file_l", "role": "last_frame"}]);
        let req = parse(&b).expect("last frame alone");
        assert_eq!(req.inputs().last_frame.as_deref(), Some("file_l"));
        let mut b = base();
        b["image_reference"] = json!([{"file_id": "file_l", "role": "last_frame"}, {"file_id": "file_f", "role": "first_frame"}]);
        let req = parse(&b).expect("either order");
        assert_eq!(req.inputs().first_frame.as_deref(), Some("file_f"));
    }
}
