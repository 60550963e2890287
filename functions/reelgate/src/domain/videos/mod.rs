//! Video jobs: the `video` resource, its storage, and its HTTP surface. Rendering itself is the
//! workflow's (`crate::ports::workflow`); this module admits jobs and serves their results.

pub mod create;

use crate::ports::store::{Attr, Item, ItemExt};
use rust_decimal::Decimal;
use serde::Serialize;

pub use crate::domain::keys::{
    job_key, RESERVATION_CHARGED, RESERVATION_HELD, RESERVATION_RELEASED, RUNNING, STATUS_CANCELED,
    STATUS_COMPLETED, STATUS_FAILED, STATUS_IN_PROGRESS, STATUS_MODERATING, STATUS_QUEUED,
    STATUS_TRANSLATING, TERMINAL,
};

pub fn output_blob_key(org: &str, video_id: &str) -> String {
    format!("{org}/videos/{video_id}/video.mp4")
}

pub fn thumbnail_blob_key(org: &str, video_id: &str) -> String {
    format!("{org}/videos/{video_id}/thumbnail.jpg")
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
    /// `queued`, `moderating`, `translating`, `in_progress`, `completed`, `failed` (and the
    /// other states of docs/table-design.md); only the terminal ones stop a poller.
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
}

impl Video {
    pub fn from_item(it: &Item) -> Option<Video> {
        // The documented sentence for the code, whatever a writer stored (docs/security.md).
        let error = it.str_attr("error_code").map(|code| {
            let code = crate::domain::jobs::failure_code(code);
            JobError {
                code: code.to_owned(),
                message: crate::domain::jobs::failure_message(code).to_owned(),
            }
        });
        Some(Video {
            id: it.str_attr("id")?.to_owned(),
            object: "video",
            model: it.str_attr("model")?.to_owned(),
            prompt: it.str_attr("prompt").unwrap_or_default().to_owned(),
            seconds: it.i64_attr("seconds").unwrap_or_default() as u32,
            aspect_ratio: it.str_attr("aspect_ratio").unwrap_or_default().to_owned(),
            status: it.str_attr("status")?.to_owned(),
            progress: it.i64_attr("progress").unwrap_or_default().clamp(0, 100) as u32,
            error,
            cost: it.decimal_attr("cost").unwrap_or_default(),
            currency: it.str_attr("currency").unwrap_or("usd").to_owned(),
            created_at: it.i64_attr("created_at").unwrap_or_default(),
            completed_at: it.i64_attr("completed_at"),
            expires_at: it.i64_attr(crate::ports::store::EXPIRES_AT),
            thumbnail: it.bool_attr("thumbnail").unwrap_or(false),
            size: it.str_attr("size").map(str::to_owned),
        })
    }

    pub fn is_terminal(&self) -> bool {
        TERMINAL.contains(&self.status.as_str())
    }
}

/// The job's inputs as the workflow needs them (stored on the job item).
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize, PartialEq)]
pub struct JobInputs {
    #[serde(default)]
    pub first_frame: Option<String>,
    #[serde(default)]
    pub last_frame: Option<String>,
    #[serde(default)]
    pub reference_images: Vec<String>,
    #[serde(default)]
    pub reference_videos: Vec<String>,
    #[serde(default)]
    pub reference_audio: Vec<String>,
}

impl JobInputs {
    pub fn to_attr(&self) -> Attr {
        let list = |ids: &[String]| Attr::L(ids.iter().map(|s| Attr::S(s.clone())).collect());
        let mut m = Item::new();
        m.insert("first_frame".into(), self.first_frame.clone().into());
        m.insert("last_frame".into(), self.last_frame.clone().into());
        m.insert("reference_images".into(), list(&self.reference_images));
        m.insert("reference_videos".into(), list(&self.reference_videos));
        m.insert("reference_audio".into(), list(&self.reference_audio));
        Attr::M(m)
    }

    pub fn from_attr(attr: Option<&Attr>) -> JobInputs {
        let Some(Attr::M(m)) = attr else {
            return JobInputs::default();
        };
        let list = |name: &str| match m.get(name) {
            Some(Attr::L(v)) => v
                .iter()
                .filter_map(|a| a.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        };
        JobInputs {
            first_frame: m.str_attr("first_frame").map(str::to_owned),
            last_frame: m.str_attr("last_frame").map(str::to_owned),
            reference_images: list("reference_images"),
            reference_videos: list("reference_videos"),
            reference_audio: list("reference_audio"),
        }
    }

    pub fn all_file_ids(&self) -> Vec<&str> {
        self.first_frame
            .iter()
            .chain(self.last_frame.iter())
            .chain(self.reference_images.iter())
            .chain(self.reference_videos.iter())
            .chain(self.reference_audio.iter())
            .map(String::as_str)
            .collect()
    }

    /// Image inputs (frames and reference images), which moderation checks.
    pub fn image_file_ids(&self) -> Vec<&str> {
        self.first_frame
            .iter()
            .chain(self.last_frame.iter())
            .chain(self.reference_images.iter())
            .map(String::as_str)
            .collect()
    }
}
