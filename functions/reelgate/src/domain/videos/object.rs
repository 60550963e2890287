//! The `video` object as the API returns it (`GET /v1/videos/{id}`, webhook payloads) and the
//! documented failure codes and sentences it shows. A leaf: `videos` (the routes' use cases),
//! `jobs` (state changes) and `webhooks` (events) all read it, and it reads none of them.

use crate::domain::videos::record::{JobRecord, TERMINAL};
use crate::ports::store::Item;
use rust_decimal::Decimal;
use serde::Serialize;

/// The stored cause of a `translation_unavailable` failure on a server with no translator
/// configured: the API shows the code `translation_unavailable` with a sentence that says the
/// prompt can never be translated there (not "resubmit later").
pub const TRANSLATION_NOT_CONFIGURED: &str = "translation_not_configured";

/// The job failure codes of docs/errors.md; anything else a step reports is `engine_unavailable`.
pub fn failure_code(code: &str) -> &'static str {
    match code {
        "moderation_blocked" => "moderation_blocked",
        "moderation_unavailable" => "moderation_unavailable",
        "translation_unavailable" | TRANSLATION_NOT_CONFIGURED => "translation_unavailable",
        _ => "engine_unavailable",
    }
}

/// The code a failed job's record keeps: [`failure_code`]'s, except that the cause
/// [`TRANSLATION_NOT_CONFIGURED`] is kept so the job's message can say so.
pub fn stored_failure_code(code: &str) -> &'static str {
    if code == TRANSLATION_NOT_CONFIGURED {
        TRANSLATION_NOT_CONFIGURED
    } else {
        failure_code(code)
    }
}

/// The one sentence a failed job's `error.message` carries for its code (docs/security.md):
/// never a workflow cause, an engine's answer or anything else raw.
pub fn failure_message(code: &str) -> &'static str {
    if code == TRANSLATION_NOT_CONFIGURED {
        return "This server has no translator for Japanese prompts, so this prompt cannot be \
                rendered here. Write the prompt in English (dialogue between <d> and </d> may \
                stay in Japanese). You were not charged.";
    }
    match failure_code(code) {
        "moderation_blocked" => "The prompt or a reference was blocked by moderation. You were not charged.",
        "moderation_unavailable" => "Moderation was unavailable, so the job was not rendered. You were not charged; resubmit later.",
        "translation_unavailable" => "The Japanese prompt could not be translated. You were not charged; resubmit later.",
        _ => "The video engine was unavailable or failed during the render. You were not charged; resubmit later.",
    }
}

#[derive(Clone, Debug, Serialize, PartialEq, utoipa::ToSchema)]
pub struct JobError {
    pub code: String,
    pub message: String,
}

/// The `video` object exactly as the API returns it.
#[derive(Clone, Debug, Serialize, PartialEq, utoipa::ToSchema)]
pub struct Video {
    pub id: String,
    #[schema(value_type = String, pattern = "^video$")]
    pub object: &'static str,
    pub model: String,
    pub prompt: String,
    pub seconds: u32,
    pub aspect_ratio: String,
    /// `queued`, `moderating`, `translating`, `in_progress`, `completed`, `failed`, `canceled`
    /// (docs/table-design.md); only the terminal ones stop a poller.
    pub status: String,
    /// Render progress 0–100 while rendering, 100 when completed (as OpenAI's video object).
    pub progress: u32,
    pub error: Option<JobError>,
    /// A decimal string in `currency`.
    #[serde(with = "rust_decimal::serde::str")]
    #[schema(value_type = String, example = "0.40")]
    pub cost: Decimal,
    pub currency: String,
    pub created_at: i64,
    pub completed_at: Option<i64>,
    /// When the finished job and its outputs are deleted.
    pub expires_at: Option<i64>,
    pub thumbnail: bool,
    /// Output size, e.g. `1366x768`, once known.
    pub size: Option<String>,
    /// The video this one remixes (`POST /v1/videos/{id}/remix`).
    pub remixed_from_video_id: Option<String>,
    /// The video this one extends (`POST /v1/videos/extensions`); its `seconds` are the
    /// source's and the new segment's together.
    pub extended_from_video_id: Option<String>,
    /// The video this one edits (`POST /v1/videos/edits`).
    pub edited_from_video_id: Option<String>,
    /// What this video was made from a source by (`remix`, `edit` or `extension`), the source
    /// being a video above or a file the caller sent; null for a plain create.
    #[schema(value_type = Option<String>, example = "extension")]
    pub source_operation: Option<&'static str>,
}

impl Video {
    pub fn from_item(it: &Item) -> Option<Video> {
        JobRecord::from_item(it).map(|job| Video::of(&job))
    }

    /// The job as the API shows it.
    pub fn of(job: &JobRecord) -> Video {
        // The documented sentence for the code, whatever a writer stored (docs/security.md).
        let error = job.error_code.as_deref().map(|stored| {
            let code = failure_code(stored);
            JobError {
                code: code.to_owned(),
                message: failure_message(stored_failure_code(stored)).to_owned(),
            }
        });
        Video {
            id: job.id.clone(),
            object: "video",
            model: job.model.clone(),
            prompt: job.prompt.clone(),
            seconds: job.output_seconds() as u32,
            aspect_ratio: job.aspect_ratio.clone(),
            status: job.status.as_str().to_owned(),
            progress: job.progress.clamp(0, 100) as u32,
            error,
            cost: job.cost,
            currency: job.currency.clone(),
            created_at: job.created_at,
            completed_at: job.completed_at,
            expires_at: job.expires_at,
            thumbnail: job.thumbnail,
            size: job.size.clone(),
            remixed_from_video_id: job.remixed_from.clone(),
            extended_from_video_id: job.extended_from.clone(),
            edited_from_video_id: job.edited_from.clone(),
            source_operation: job.source_operation.map(|o| o.as_str()),
        }
    }

    pub fn is_terminal(&self) -> bool {
        TERMINAL.contains(&self.status.as_str())
    }
}

/// A video with what the console's video page shows beyond the API's object: the prompt the
/// engine rendered, the inputs by id and when the render started.
#[derive(Clone, Debug, Serialize, PartialEq, utoipa::ToSchema)]
pub struct VideoDetail {
    #[serde(flatten)]
    pub video: Video,
    /// The English prompt the engine renders, once the translate step has run (the prompt
    /// itself when it needed no translation).
    pub engine_prompt: Option<String>,
    pub inputs: VideoInputs,
    /// When the engine took the render (Unix seconds).
    pub render_started_at: Option<i64>,
    /// An extension's source length: `seconds` less this is what the extension added.
    pub source_seconds: Option<i64>,
}

/// The inputs a job names, by id as the request sent them.
#[derive(Clone, Debug, Serialize, PartialEq, utoipa::ToSchema)]
pub struct VideoInputs {
    pub first_frame: Option<String>,
    pub last_frame: Option<String>,
    pub reference_images: Vec<String>,
    pub reference_videos: Vec<String>,
    pub reference_audio: Vec<String>,
    pub characters: Vec<String>,
}

impl VideoDetail {
    pub fn of(job: &JobRecord) -> VideoDetail {
        let i = &job.inputs;
        VideoDetail {
            video: Video::of(job),
            engine_prompt: job.engine_prompt.clone(),
            inputs: VideoInputs {
                first_frame: i.first_frame.clone(),
                last_frame: i.last_frame.clone(),
                reference_images: i.reference_images.clone(),
                reference_videos: i.reference_videos.clone(),
                reference_audio: i.reference_audio.clone(),
                characters: i.characters.clone(),
            },
            render_started_at: job.render_started_ms.map(|ms| ms / 1000),
            source_seconds: job.extension_base_seconds,
        }
    }
}
