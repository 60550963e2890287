//! Video jobs: the `video` resource, its storage, and its HTTP surface. Rendering itself is the
//! workflow's (`crate::ports::workflow`); this module admits jobs and serves their results.

pub mod create;

use crate::ports::store::{Attr, Item, ItemExt};
use serde::Serialize;

pub use crate::domain::keys::{
    RESERVATION_CHARGED, RESERVATION_HELD, RESERVATION_RELEASED, RUNNING, STATUS_CANCELED,
    STATUS_COMPLETED, STATUS_FAILED, STATUS_IN_PROGRESS, STATUS_MODERATING, STATUS_QUEUED,
    STATUS_TRANSLATING, TERMINAL,
};

pub fn output_blob_key(org: &str, video_id: &str) -> String {
    format!("{org}/videos/{video_id}/video.mp4")
}

pub fn thumbnail_blob_key(org: &str, video_id: &str) -> String {
    format!("{org}/videos/{video_id}/thumbnail.jpg")
}

pub use crate::domain::video_object::{JobError, Video};

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
