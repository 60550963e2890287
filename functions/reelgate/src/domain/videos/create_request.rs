//! `POST /v1/videos` as it arrives (and the console's create and quote, and the create a
//! remix, extension or edit composes): the request type, read by serde at the edge with each
//! value refused by its own path, and every rule that needs no lookup ([`RequestBody::check`]).
//! The files, the model's capabilities, the quote and admission are `create.rs`'s.

use super::JobInputs;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::params::{
    optional_object, optional_objects, FaultKind, RequestBody, ShapeFault,
};
use serde::{Deserialize, Deserializer, Serialize};
use utoipa::openapi::schema::{
    ArrayBuilder, ObjectBuilder, OneOfBuilder, Schema, SchemaType, Type,
};
use utoipa::openapi::Ref;
use utoipa::ToSchema;

pub const MAX_PROMPT_CHARS: usize = 7000;
pub const MIN_SECONDS: i64 = crate::domain::catalog::native_renders::CONTRACT_SECONDS.0 as i64;
pub const MAX_SECONDS: i64 = crate::domain::catalog::native_renders::CONTRACT_SECONDS.1 as i64;
pub use crate::domain::catalog::ASPECT_RATIOS;
/// An image-to-video job's frames: the first, and optionally the last.
pub const MAX_FRAMES: usize = 2;
pub const MAX_REFERENCE_IMAGES: usize = crate::domain::videos::record::MAX_CHARACTER_FRAMES;
pub const MAX_REFERENCE_VIDEOS: usize = 2;
pub const MAX_REFERENCE_AUDIO: usize = 3;

/// `POST /v1/videos` (and the console's create and quote): either `image_reference` (frames)
/// or `references`, not both. An unknown parameter is refused by name.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"model": "reel-1", "prompt": "a paper boat on a rainy street", "seconds": 4, "aspect_ratio": "16:9"}))]
pub struct VideoCreateRequest {
    /// A video model id of `GET /v1/videos/models`.
    #[schema(min_length = 1)]
    pub model: String,
    #[schema(schema_with = prompt_schema)]
    pub prompt: String,
    /// OpenAI's SDK sends it as a string (`"8"`), which is accepted too.
    #[schema(schema_with = seconds_schema)]
    #[serde(deserialize_with = "seconds_in_range")]
    pub seconds: u32,
    #[schema(schema_with = aspect_ratio_schema)]
    pub aspect_ratio: String,
    /// OpenAI's SDK parameter. Optional; when given it must be the 768p size of
    /// `aspect_ratio` (`16:9` → `1366x768`, `9:16` → `768x1366`, `21:9` → `1792x768`,
    /// `4:3` → `1024x768`, `1:1` → `768x768`, `3:4` → `768x1024`); with `Auto` it is refused.
    #[serde(default)]
    pub size: Option<String>,
    /// Image-to-video.
    #[schema(schema_with = frames_schema)]
    #[serde(default, deserialize_with = "optional_objects")]
    pub image_reference: Option<Vec<FrameReference>>,
    /// Reference-to-video.
    #[serde(default, deserialize_with = "optional_object")]
    pub references: Option<References>,
    /// Characters of the organization (`POST /v1/videos/characters`) whose frames the render
    /// takes as reference images (`characters[]` in a form).
    #[schema(max_items = 2)]
    #[serde(default)]
    pub characters: Option<Vec<String>>,
}

/// An image-to-video frame. Other members are ignored.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, ToSchema)]
pub struct FrameReference {
    pub file_id: String,
    pub role: FrameRole,
}

// Read from a string: serde_json reads a unit enum from anything else as broken JSON.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case", try_from = "String")]
pub enum FrameRole {
    FirstFrame,
    LastFrame,
}

impl TryFrom<String> for FrameRole {
    type Error = &'static str;

    fn try_from(role: String) -> Result<Self, Self::Error> {
        match role.as_str() {
            "first_frame" => Ok(FrameRole::FirstFrame),
            "last_frame" => Ok(FrameRole::LastFrame),
            _ => Err("role must be first_frame or last_frame."),
        }
    }
}

impl FrameRole {
    fn as_str(self) -> &'static str {
        match self {
            FrameRole::FirstFrame => "first_frame",
            FrameRole::LastFrame => "last_frame",
        }
    }
}

/// Reference-to-video: the files the render should draw on.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct References {
    #[schema(schema_with = reference_images_schema)]
    #[serde(default, deserialize_with = "optional_objects")]
    pub images: Option<Vec<FileRef>>,
    #[schema(schema_with = reference_videos_schema)]
    #[serde(default, deserialize_with = "optional_objects")]
    pub videos: Option<Vec<FileRef>>,
    #[schema(schema_with = reference_audio_schema)]
    #[serde(default, deserialize_with = "optional_objects")]
    pub audio: Option<Vec<FileRef>>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, ToSchema)]
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
    pub(super) fn file_params(&self) -> Vec<(String, &str, &'static str)> {
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
pub(crate) fn seconds_schema() -> Schema {
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

/// An optional array of `T` holding `min` to `max` entries.
fn optional_array<T: utoipa::ToSchema>(
    min: Option<usize>,
    max: usize,
    about: Option<&str>,
) -> Schema {
    ArrayBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .items(Ref::from_schema_name(T::name()))
        .description(about)
        .min_items(min)
        .max_items(Some(max))
        .into()
}

fn frames_schema() -> Schema {
    optional_array::<FrameReference>(
        Some(1),
        MAX_FRAMES,
        Some("Image-to-video: one or two frames."),
    )
}

fn reference_images_schema() -> Schema {
    optional_array::<FileRef>(None, MAX_REFERENCE_IMAGES, None)
}

fn reference_videos_schema() -> Schema {
    optional_array::<FileRef>(None, MAX_REFERENCE_VIDEOS, None)
}

fn reference_audio_schema() -> Schema {
    optional_array::<FileRef>(None, MAX_REFERENCE_AUDIO, None)
}

/// An integer from `MIN_SECONDS` to `MAX_SECONDS`, or the same number as a string (OpenAI's
/// SDK sends `"8"`); the value rules are the same.
pub(crate) fn seconds_in_range<'de, D: Deserializer<'de>>(value: D) -> Result<u32, D::Error> {
    let seconds = match serde_json::Value::deserialize(value)? {
        serde_json::Value::String(s) => s.trim().parse::<i64>().ok(),
        serde_json::Value::Number(n) => n.as_i64(),
        _ => None,
    };
    match seconds {
        Some(s) if (MIN_SECONDS..=MAX_SECONDS).contains(&s) => Ok(s as u32),
        _ => Err(serde::de::Error::custom("seconds out of range")),
    }
}

pub(crate) fn seconds_expected() -> String {
    format!("seconds must be an integer from {MIN_SECONDS} to {MAX_SECONDS}.")
}

fn aspect_ratio_expected() -> String {
    format!("aspect_ratio must be one of {}.", ASPECT_RATIOS.join(", "))
}

/// The refusal of a file reference whose `file_id` is missing, empty or not a string; `at` is
/// the reference (`references.images[0]`).
fn file_id_refused(at: &str) -> ApiError {
    ApiError::invalid(
        &format!("{at}.file_id"),
        format!("{at}.file_id must be the id of an uploaded file."),
    )
}

fn role_refused(at: &str) -> ApiError {
    ApiError::invalid(at, "role must be first_frame or last_frame.")
}

fn character_refused(at: &str) -> ApiError {
    ApiError::invalid(
        at,
        "Each character is the id of one of your characters (char_…).",
    )
}

impl RequestBody for VideoCreateRequest {
    fn expected(param: &str, _path: &str) -> Option<String> {
        Some(match param {
            "model" => "model must be a video model id.".to_owned(),
            "prompt" => "prompt must be a string.".to_owned(),
            "seconds" => seconds_expected(),
            "aspect_ratio" => aspect_ratio_expected(),
            "size" => "size must be a string such as 1366x768.".to_owned(),
            _ => return None,
        })
    }

    /// A nested value is named by its own path (`image_reference[1].role`), as the create's
    /// parameters always were.
    fn refusal(fault: &ShapeFault) -> Option<ApiError> {
        let path = fault.path.as_str();
        let (parent, last) = path.rsplit_once('.').unwrap_or(("", path));
        if let Some(refusal) = characters_refusal(fault) {
            return Some(refusal);
        }
        Some(match (&fault.kind, fault.param()) {
            (FaultKind::Unknown, "input_reference") => ApiError::invalid(
                "input_reference",
                "input_reference is not supported: upload the image with POST /v1/files \
                 (purpose vision) and send image_reference: [{file_id, role: first_frame}].",
            ),
            (FaultKind::Unknown, "references") => {
                ApiError::invalid(path, "references holds images, videos and audio.")
            }
            (FaultKind::Unknown, _) => return None,
            (FaultKind::Missing, _) if parent.is_empty() => crate::domain::params::required(path),
            (_, "image_reference" | "references") if last == "file_id" => file_id_refused(parent),
            (_, "image_reference") if last == "role" => role_refused(path),
            (_, "image_reference" | "references") => {
                let object = path.ends_with(']') || path == "references";
                let what = if object { "an object" } else { "an array" };
                ApiError::invalid(path, format!("{path} must be {what}."))
            }
            _ => return None,
        })
    }

    fn check(mut self) -> ApiResult<Self> {
        if self.model.is_empty() {
            return Err(ApiError::invalid(
                "model",
                "model must be a video model id.",
            ));
        }
        if self.prompt.trim().is_empty() {
            return Err(ApiError::invalid("prompt", "prompt must not be empty."));
        }
        let chars = self.prompt.chars().count();
        if chars > MAX_PROMPT_CHARS {
            return Err(ApiError::invalid(
                "prompt",
                format!("prompt is {chars} characters; at most {MAX_PROMPT_CHARS} are allowed."),
            ));
        }
        if !ASPECT_RATIOS.contains(&self.aspect_ratio.as_str()) {
            return Err(ApiError::invalid("aspect_ratio", aspect_ratio_expected()));
        }
        self.size = check_size(self.size.as_deref(), &self.aspect_ratio)?;
        if self.image_reference.is_some() && self.references.is_some() {
            return Err(ApiError::invalid(
                "references",
                "image_reference and references cannot be used together; choose image-to-video or reference-to-video.",
            ));
        }
        if let Some(frames) = &self.image_reference {
            check_frames(frames)?;
        }
        if let Some(references) = &self.references {
            check_references(references)?;
        }
        if let Some(characters) = &self.characters {
            check_characters(characters)?;
        }
        Ok(self)
    }
}

fn check_frames(frames: &[FrameReference]) -> ApiResult<()> {
    if frames.is_empty() || frames.len() > MAX_FRAMES {
        return Err(ApiError::invalid(
            "image_reference",
            "image_reference holds one or two images.",
        ));
    }
    for (i, frame) in frames.iter().enumerate() {
        let at = format!("image_reference[{i}]");
        if frame.file_id.is_empty() {
            return Err(file_id_refused(&at));
        }
        if frames[..i].iter().any(|f| f.role == frame.role) {
            return Err(ApiError::invalid(
                &format!("{at}.role"),
                format!(
                    "Each role may be used once; {} appears twice.",
                    frame.role.as_str()
                ),
            ));
        }
    }
    Ok(())
}

fn check_references(references: &References) -> ApiResult<()> {
    for (name, max, list) in [
        ("images", MAX_REFERENCE_IMAGES, &references.images),
        ("videos", MAX_REFERENCE_VIDEOS, &references.videos),
        ("audio", MAX_REFERENCE_AUDIO, &references.audio),
    ] {
        let Some(list) = list else { continue };
        let param = format!("references.{name}");
        if list.len() > max {
            return Err(ApiError::invalid(
                &param,
                format!("{param} holds at most {max} files."),
            ));
        }
        if let Some(i) = list.iter().position(|r| r.file_id.is_empty()) {
            return Err(file_id_refused(&format!("{param}[{i}]")));
        }
    }
    let none = |list: &Option<Vec<FileRef>>| list.as_ref().is_none_or(Vec::is_empty);
    if none(&references.images) && none(&references.videos) {
        return Err(ApiError::invalid(
            "references",
            "references needs at least one image or video; audio alone is not accepted.",
        ));
    }
    Ok(())
}

/// The refusal of a `characters` value serde could not read (the create's, and a remix's or an
/// extension's); None for a fault elsewhere in the body.
pub fn characters_refusal(fault: &ShapeFault) -> Option<ApiError> {
    match fault.path.as_str() {
        _ if fault.param() != "characters" || fault.kind == FaultKind::Unknown => None,
        "characters" => Some(ApiError::invalid(
            "characters",
            "characters must be an array.",
        )),
        path => Some(character_refused(path)),
    }
}

/// `characters`: ids of the organization's characters (checked when admitted).
pub fn check_characters(characters: &[String]) -> ApiResult<()> {
    use crate::domain::videos::characters::MAX_CHARACTERS_PER_JOB;
    if characters.len() > MAX_CHARACTERS_PER_JOB {
        return Err(ApiError::invalid(
            "characters",
            format!("characters holds at most {MAX_CHARACTERS_PER_JOB} ids."),
        ));
    }
    match characters.iter().position(String::is_empty) {
        Some(i) => Err(character_refused(&format!("characters[{i}]"))),
        None => Ok(()),
    }
}

/// `size` (OpenAI's SDK parameter) is honoured only as what it means here: the 768p size of the
/// requested aspect ratio (`1366x768` for `16:9`, ...). Any other size, or a size with `Auto`
/// (whose size follows the first frame), is refused naming `size` rather than ignored.
fn check_size(size: Option<&str>, aspect_ratio: &str) -> ApiResult<Option<String>> {
    let Some(size) = size.map(str::trim) else {
        return Ok(None);
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn parse(body: &Value) -> ApiResult<VideoCreateRequest> {
        if !body.is_object() {
            return Err(ApiError::bad_request(
                "The request body must be a JSON object.",
            ));
        }
        crate::domain::params::read_from(body.clone())
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

    #[test]
    fn each_refusal_names_its_path_in_the_create_s_own_words() {
        let file_id = |at: &str| format!("{at}.file_id must be the id of an uploaded file.");
        let cases: Vec<(Value, &str, String)> = vec![
            (json!([1]), "", "The request body must be a JSON object.".into()),
            (json!({"model": "reel-1", "prompt": "a", "seconds": 4, "aspect_ratio": "16:9", "colour": 1}), "colour", "Unknown parameter: colour.".into()),
            (json!({"model": "reel-1", "prompt": "a", "seconds": 4, "aspect_ratio": "16:9", "input_reference": "f"}), "input_reference", "input_reference is not supported: upload the image with POST /v1/files (purpose vision) and send image_reference: [{file_id, role: first_frame}].".into()),
            (json!({"prompt": "a", "seconds": 4, "aspect_ratio": "16:9"}), "model", "model is required.".into()),
            (json!({"model": "", "prompt": "a", "seconds": 4, "aspect_ratio": "16:9"}), "model", "model must be a video model id.".into()),
            (json!({"model": null, "prompt": "a", "seconds": 4, "aspect_ratio": "16:9"}), "model", "model must be a video model id.".into()),
            (json!({"model": "reel-1", "seconds": 4, "aspect_ratio": "16:9"}), "prompt", "prompt is required.".into()),
            (json!({"model": "reel-1", "prompt": 3, "seconds": 4, "aspect_ratio": "16:9"}), "prompt", "prompt must be a string.".into()),
            (json!({"model": "reel-1", "prompt": "  ", "seconds": 4, "aspect_ratio": "16:9"}), "prompt", "prompt must not be empty.".into()),
            (json!({"model": "reel-1", "prompt": "a", "aspect_ratio": "16:9"}), "seconds", "seconds is required.".into()),
            (json!({"model": "reel-1", "prompt": "a", "seconds": "16", "aspect_ratio": "16:9"}), "seconds", "seconds must be an integer from 4 to 15.".into()),
            (json!({"model": "reel-1", "prompt": "a", "seconds": null, "aspect_ratio": "16:9"}), "seconds", "seconds must be an integer from 4 to 15.".into()),
            (json!({"model": "reel-1", "prompt": "a", "seconds": 4, "aspect_ratio": 1}), "aspect_ratio", format!("aspect_ratio must be one of {}.", ASPECT_RATIOS.join(", "))),
            (json!({"model": "reel-1", "prompt": "a", "seconds": 4}), "aspect_ratio", "aspect_ratio is required.".into()),
            (with("size", json!(true)), "size", "size must be a string such as 1366x768.".into()),
            (with("image_reference", json!("f")), "image_reference", "image_reference must be an array.".into()),
            (with("image_reference", json!([])), "image_reference", "image_reference holds one or two images.".into()),
            (with("image_reference", json!(["f"])), "image_reference[0]", "image_reference[0] must be an object.".into()),
            (with("image_reference", json!([{"role": "first_frame"}])), "image_reference[0].file_id", file_id("image_reference[0]")),
            (with("image_reference", json!([{"file_id": "", "role": "first_frame"}])), "image_reference[0].file_id", file_id("image_reference[0]")),
            (with("image_reference", json!([{"file_id": 7, "role": "first_frame"}])), "image_reference[0].file_id", file_id("image_reference[0]")),
            (with("image_reference", json!([{"file_id": "f", "role": "middle"}])), "image_reference[0].role", "role must be first_frame or last_frame.".into()),
            (with("image_reference", json!([{"file_id": "f"}])), "image_reference[0].role", "role must be first_frame or last_frame.".into()),
            (with("image_reference", json!([{"file_id": "f", "role": "last_frame"}, {"file_id": "g", "role": "last_frame"}])), "image_reference[1].role", "Each role may be used once; last_frame appears twice.".into()),
            (with("references", json!([])), "references", "references must be an object.".into()),
            (with("references", json!({"clips": []})), "references.clips", "references holds images, videos and audio.".into()),
            (with("references", json!({"images": {}})), "references.images", "references.images must be an array.".into()),
            (with("references", json!({"images": [3]})), "references.images[0]", "references.images[0] must be an object.".into()),
            (with("references", json!({"videos": [{"file_id": ""}]})), "references.videos[0].file_id", file_id("references.videos[0]")),
            (with("references", json!({"audio": [{"file_id": "a"}]})), "references", "references needs at least one image or video; audio alone is not accepted.".into()),
            (with("characters", json!("char_1")), "characters", "characters must be an array.".into()),
            (with("characters", json!(["char_1", 2])), "characters[1]", "Each character is the id of one of your characters (char_…).".into()),
            (with("characters", json!(["char_1", ""])), "characters[1]", "Each character is the id of one of your characters (char_…).".into()),
            (with("characters", json!(["a", "b", "c"])), "characters", "characters holds at most 2 ids.".into()),
        ];
        for (body, param, message) in cases {
            let e = parse(&body).expect_err(&body.to_string());
            assert_eq!(
                (e.param.as_deref().unwrap_or_default(), e.message.as_str()),
                (param, message.as_str()),
                "{body}"
            );
        }
    }

    /// serde_json reads a unit enum from a number as broken JSON: the role is read through a
    /// string, so a JSON body (the console's, read from its bytes) names the role instead.
    #[test]
    fn a_role_of_another_type_is_named_not_called_broken_json() {
        for role in [json!(3), json!(true), json!(["first_frame"]), json!({})] {
            let body = with("image_reference", json!([{"file_id": "f", "role": role}]));
            let bytes = body.to_string();
            for e in [
                crate::domain::params::read_body::<VideoCreateRequest>(bytes.as_bytes())
                    .expect_err("bytes"),
                parse(&body).expect_err("value"),
            ] {
                assert_eq!(
                    (e.param.as_deref(), e.message.as_str()),
                    (
                        Some("image_reference[0].role"),
                        "role must be first_frame or last_frame."
                    ),
                    "{bytes}"
                );
            }
        }
    }

    fn with(name: &str, value: Value) -> Value {
        let mut b = base();
        b[name] = value;
        b
    }

    #[test]
    fn a_form_s_strings_read_as_json_s_values() {
        let form = json!({"model": "reel-1", "prompt": "a cat", "seconds": " 8 ", "aspect_ratio": "16:9", "characters": ["char_1"], "size": null});
        let req = parse(&form).expect("form");
        assert_eq!(
            (req.seconds, req.size, req.characters),
            (8, None, Some(vec!["char_1".to_owned()]))
        );
    }
}
