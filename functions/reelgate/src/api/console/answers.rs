//! What the console's JSON routes answer, where no domain type is the whole answer: the types
//! the handlers serialize, and so the schemas of the OpenAPI document.

use crate::api::envelope::List;
use crate::domain::accounts::agreement::AgreementStatus;
use crate::domain::billing::usage_report::{UsageBucket, UsageResult};
use crate::domain::videos::create::{
    ASPECT_RATIOS, MAX_IMAGE_BYTES, MAX_PROMPT_CHARS, MAX_REFERENCE_AUDIO_BYTES,
    MAX_REFERENCE_VIDEO_BYTES, MAX_SECONDS, MIN_SECONDS, REFERENCE_MEDIA_SECS,
};
use crate::domain::videos::queries::VideoModelObject;
use serde::Serialize;
use utoipa::ToSchema;

/// `GET /console/api/session`: who is signed in, and the CSRF token the page sends with every
/// state-changing request.
#[derive(Serialize, ToSchema)]
pub struct SessionInfo {
    #[schema(value_type = String, pattern = "^console\\.session$")]
    pub object: &'static str,
    pub user: SessionUser,
    pub organization: SessionOrganization,
    pub csrf_token: String,
    pub expires_at: i64,
}

#[derive(Serialize, ToSchema)]
pub struct SessionUser {
    pub id: String,
    pub email: String,
}

#[derive(Serialize, ToSchema)]
pub struct SessionOrganization {
    pub id: String,
    pub name: String,
}

/// `POST /console/api/signout`.
#[derive(Serialize, ToSchema)]
pub struct SignedOut {
    #[schema(value_type = String, pattern = "^console\\.session$")]
    pub object: &'static str,
    pub signed_out: bool,
}

/// `GET /console/api/terms`: the person's agreement status and the terms' text.
#[derive(Serialize, ToSchema)]
pub struct Terms {
    #[serde(flatten)]
    pub status: AgreementStatus,
    pub text: TermsText,
}

/// The terms in English and Japanese (null when the catalog has no text for the version).
#[derive(Serialize, ToSchema)]
pub struct TermsText {
    pub en: Option<String>,
    pub ja: Option<String>,
}

/// `GET /console/api/models`: the plan's video models, with the create rules' limits for the
/// form and whether Japanese prompts can be translated.
#[derive(Serialize, ToSchema)]
pub struct ConsoleVideoModels {
    #[serde(flatten)]
    pub list: List<VideoModelObject>,
    pub limits: CreateLimits,
    /// Without a translator a Japanese prompt fails `translation_unavailable`.
    pub translator: bool,
}

/// The create rules' limits, from the constants the rules check.
#[derive(Serialize, ToSchema)]
pub struct CreateLimits {
    pub min_seconds: i64,
    pub max_seconds: i64,
    #[schema(value_type = Vec<String>)]
    pub aspect_ratios: &'static [&'static str],
    pub max_prompt_chars: usize,
    /// Images (frames and references) must be smaller than this many bytes.
    pub image_bytes_under: u64,
    pub reference_video_max_bytes: u64,
    pub reference_audio_max_bytes: u64,
    /// How long a reference video or audio file may last, in seconds: `[min, max]`.
    pub reference_media_seconds: [f64; 2],
}

impl CreateLimits {
    pub const CURRENT: CreateLimits = CreateLimits {
        min_seconds: MIN_SECONDS,
        max_seconds: MAX_SECONDS,
        aspect_ratios: ASPECT_RATIOS,
        max_prompt_chars: MAX_PROMPT_CHARS,
        image_bytes_under: MAX_IMAGE_BYTES,
        reference_video_max_bytes: MAX_REFERENCE_VIDEO_BYTES,
        reference_audio_max_bytes: MAX_REFERENCE_AUDIO_BYTES,
        reference_media_seconds: [REFERENCE_MEDIA_SECS.0, REFERENCE_MEDIA_SECS.1],
    };
}

/// `GET /console/api/videos/{video_id}/media`: short-lived signed URLs of a completed video.
#[derive(Serialize, ToSchema)]
pub struct VideoMedia {
    #[schema(value_type = String, pattern = "^video\\.media$")]
    pub object: &'static str,
    pub id: String,
    pub content_url: String,
    /// Null when the render produced no thumbnail.
    pub thumbnail_url: Option<String>,
    /// Seconds the URLs stay valid.
    pub expires_in: u64,
}

/// `POST /console/api/keys`: the new key; the secret is shown in this answer only.
#[derive(Serialize, ToSchema)]
pub struct ApiKeyCreated {
    #[schema(value_type = String, pattern = "^api_key$")]
    pub object: &'static str,
    pub id: String,
    pub name: Option<String>,
    pub secret: String,
    pub organization: String,
}

/// `DELETE /console/api/keys/{key_id}`.
#[derive(Serialize, ToSchema)]
pub struct ApiKeyRevoked {
    #[schema(value_type = String, pattern = "^api_key$")]
    pub object: &'static str,
    pub id: String,
    pub revoked: bool,
}

/// `GET /console/api/usage`: balance, reservations for renders in flight, recent charges, and
/// the last 30 UTC days per day (`days`, the chart) and summed (`last_30_days`).
#[derive(Serialize, ToSchema)]
pub struct ConsoleUsage {
    #[schema(value_type = String, pattern = "^console\\.usage$")]
    pub object: &'static str,
    pub organization: String,
    pub currency: String,
    /// Exact decimal strings.
    pub balance: String,
    pub reserved: String,
    pub available: String,
    pub renders_in_flight: i64,
    /// The newest charges (renders and token usage), newest first.
    pub recent_charges: Vec<crate::domain::billing::ledger::ChargeSummary>,
    pub last_30_days: Vec<UsageResult>,
    pub days: Vec<UsageBucket>,
}
