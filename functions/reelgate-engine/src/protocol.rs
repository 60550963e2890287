//! Wire types of reelgate's HTTP engine protocol (see `docs/engine-protocol.md`).
//!
//! Unknown JSON fields are ignored everywhere so either side can add fields.

use serde::{Deserialize, Serialize};

/// The header a `POST /v1/renders` may carry: an engine that sees a key again answers the render
/// the first submission started instead of starting (and billing) a second one. reelgate sends
/// the job id, so a redelivered render message never starts a second paid render.
pub const IDEMPOTENCY_KEY_HEADER: &str = "idempotency-key";

/// `POST /v1/renders` body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenderRequest {
    /// The model the caller selected; engines may serve several.
    pub model: String,
    /// English prompt (the service translates before submitting).
    pub prompt: String,
    /// Clip length in whole seconds.
    pub seconds: u32,
    /// `Auto`, `21:9`, `16:9`, `4:3`, `1:1`, `3:4` or `9:16`.
    pub aspect_ratio: String,
    /// Output width in pixels (768p sizes, see the protocol document).
    pub width: u32,
    /// Output height in pixels.
    pub height: u32,
    /// Media to condition on; all URLs are short-lived signed GET URLs.
    #[serde(default)]
    pub inputs: RenderInputs,
    /// Where to POST the Render object on status changes and progress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callback_url: Option<String>,
    /// Opaque caller reference, echoed in nothing but logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_reference: Option<String>,
}

/// Conditioning media of a [`RenderRequest`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenderInputs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_frame_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_frame_url: Option<String>,
    #[serde(default)]
    pub reference_image_urls: Vec<String>,
    #[serde(default)]
    pub reference_video_urls: Vec<String>,
    #[serde(default)]
    pub reference_audio_urls: Vec<String>,
    /// The video the render is made from, for an engine that declares the operation
    /// natively; absent on every other render.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<RenderSource>,
}

/// What [`RenderInputs::source`] asks of the engine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenderSource {
    /// `remix` or `edit`: re-render the source guided by the prompt, at the request's
    /// seconds and size (video-to-video); `extension`: render the request's seconds of new
    /// footage that continue the source from its last frame (the segment only: the caller
    /// joins it after the source).
    pub operation: String,
    /// A signed GET URL of the source MP4 (H.264, at most 1920x1080 and 60 s).
    pub video_url: String,
    /// The engine's own id of the render that made the source, sent only to an engine that
    /// extends only its own renders (a hosted provider's adapter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub render_id: Option<String>,
}

/// The operations of [`RenderSource::operation`].
pub mod operations {
    pub const REMIX: &str = "remix";
    pub const EDIT: &str = "edit";
    pub const EXTENSION: &str = "extension";
    pub const ALL: &[&str] = &[REMIX, EDIT, EXTENSION];
}

/// Lifecycle of a render. `queued` → `rendering` → one of the terminal states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RenderStatus {
    Queued,
    Rendering,
    Succeeded,
    Failed,
    Canceled,
    /// Any status this client does not know (a newer engine's); treat it as still running.
    #[serde(other)]
    Unknown,
}

impl RenderStatus {
    /// `succeeded`, `failed` and `canceled` never change again.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed | Self::Canceled)
    }

    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Rendering => "rendering",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Canceled => "canceled",
            Self::Unknown => "unknown",
        }
    }
}

/// Why a render failed (`error` of a failed Render).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenderError {
    /// `input_unreadable`, `input_invalid` or `engine_failure` (more may be added).
    pub code: String,
    pub message: String,
}

/// Failure codes the reference engine uses in [`RenderError::code`].
pub mod codes {
    /// An input URL could not be downloaded or decoded.
    pub const INPUT_UNREADABLE: &str = "input_unreadable";
    /// An input was readable but outside the limits (duration, size).
    pub const INPUT_INVALID: &str = "input_invalid";
    /// The engine itself failed.
    pub const ENGINE_FAILURE: &str = "engine_failure";
}

/// The state of one render, as returned by every endpoint and sent to callbacks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Render {
    /// `rnd_` followed by 24 lowercase hex digits.
    pub id: String,
    pub status: RenderStatus,
    /// 0–100; 100 once succeeded.
    pub progress: u8,
    /// Set when `status` is `failed`.
    #[serde(default)]
    pub error: Option<RenderError>,
    /// Absolute URL of the MP4 once `status` is `succeeded`.
    #[serde(default)]
    pub result_url: Option<String>,
    /// Unix time (seconds) the render was accepted.
    pub created_at: i64,
}

/// Error response body: `{"error": {...}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

/// The object inside [`ErrorBody`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorDetail {
    pub message: String,
    /// `invalid_request_error`, `authentication_error`, `not_found_error`, `conflict_error` or `server_error`.
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub param: Option<String>,
    #[serde(default)]
    pub code: Option<String>,
}

/// Fault injection switches of the reference engine (`PUT /v1/faults` body).
/// Missing fields are `false`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FaultSwitches {
    /// Renders fail with code `engine_failure`.
    pub fail: bool,
    /// Renders are accepted, then stay `rendering` at a fixed progress forever and never call back.
    pub hang: bool,
    /// Every `/v1/renders…` request gets its connection closed without a response.
    pub drop_connection: bool,
    /// Renders succeed but the result is 640x360 instead of the requested size, and lasts half
    /// the seconds asked (at least 1): a clip too short for any conform to deliver.
    pub bad_output: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_round_trip_and_unknown_status() {
        let json = r#"{"id":"rnd_1","status":"rendering","progress":12,"error":null,"result_url":null,"created_at":5}"#;
        let r: Render = serde_json::from_str(json).expect("parse");
        assert_eq!(r.status, RenderStatus::Rendering);
        assert_eq!(serde_json::to_string(&r).expect("json"), json);
        let r: Render = serde_json::from_str(
            r#"{"id":"rnd_1","status":"upscaling","progress":1,"created_at":5,"extra":1}"#,
        )
        .expect("parse");
        assert_eq!(r.status, RenderStatus::Unknown);
        assert!(!r.status.is_terminal());
    }

    #[test]
    fn request_defaults() {
        let req: RenderRequest = serde_json::from_str(
            r#"{"model":"m","prompt":"p","seconds":4,"aspect_ratio":"16:9","width":1366,"height":768}"#,
        )
        .expect("parse");
        assert_eq!(req.inputs, RenderInputs::default());
        let out = serde_json::to_value(&req).expect("json");
        assert_eq!(out["inputs"]["reference_image_urls"], serde_json::json!([]));
        assert!(out.get("callback_url").is_none());
        let faults: FaultSwitches = serde_json::from_str(r#"{"hang":true}"#).expect("parse");
        assert_eq!(
            faults,
            FaultSwitches {
                hang: true,
                ..Default::default()
            }
        );
    }
}
