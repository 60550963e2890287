//! The video job record (`ORG#<org>` / `VIDEO#<video id>`, docs/table-design.md): its status and
//! reservation enums, its inputs, and every read and write of its attributes.

use crate::ports::store::{Attr, Condition, Item, ItemExt, Key, Update, EXPIRES_AT};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

/// A job's status, stored and shown as its snake_case name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    Moderating,
    Translating,
    Queued,
    InProgress,
    Completed,
    Failed,
    Canceled,
}

impl JobStatus {
    pub const ALL: [JobStatus; 7] = [
        JobStatus::Moderating,
        JobStatus::Translating,
        JobStatus::Queued,
        JobStatus::InProgress,
        JobStatus::Completed,
        JobStatus::Failed,
        JobStatus::Canceled,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            JobStatus::Moderating => "moderating",
            JobStatus::Translating => "translating",
            JobStatus::Queued => "queued",
            JobStatus::InProgress => "in_progress",
            JobStatus::Completed => "completed",
            JobStatus::Failed => "failed",
            JobStatus::Canceled => "canceled",
        }
    }

    pub fn parse(s: &str) -> Option<JobStatus> {
        JobStatus::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// Completed, failed or canceled: nothing changes the job any more.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            JobStatus::Completed | JobStatus::Failed | JobStatus::Canceled
        )
    }

    pub fn is_running(self) -> bool {
        !self.is_terminal()
    }
}

pub const STATUS_MODERATING: &str = JobStatus::Moderating.as_str();
pub const STATUS_TRANSLATING: &str = JobStatus::Translating.as_str();
pub const STATUS_QUEUED: &str = JobStatus::Queued.as_str();
pub const STATUS_IN_PROGRESS: &str = JobStatus::InProgress.as_str();
pub const STATUS_COMPLETED: &str = JobStatus::Completed.as_str();
pub const STATUS_FAILED: &str = JobStatus::Failed.as_str();
pub const STATUS_CANCELED: &str = JobStatus::Canceled.as_str();

pub const TERMINAL: &[&str] = &[STATUS_COMPLETED, STATUS_FAILED, STATUS_CANCELED];
/// Every status, in the order a job moves through them (a list's `status` filter takes one).
pub const STATUSES: &[&str] = &[
    STATUS_MODERATING,
    STATUS_TRANSLATING,
    STATUS_QUEUED,
    STATUS_IN_PROGRESS,
    STATUS_COMPLETED,
    STATUS_FAILED,
    STATUS_CANCELED,
];
pub const RUNNING: &[&str] = &[
    STATUS_MODERATING,
    STATUS_TRANSLATING,
    STATUS_QUEUED,
    STATUS_IN_PROGRESS,
];

/// The reservation of a job's quote: held from admission until charged or released, once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reservation {
    Held,
    Charged,
    Released,
}

impl Reservation {
    pub const fn as_str(self) -> &'static str {
        match self {
            Reservation::Held => "held",
            Reservation::Charged => "charged",
            Reservation::Released => "released",
        }
    }

    pub fn parse(s: &str) -> Option<Reservation> {
        [
            Reservation::Held,
            Reservation::Charged,
            Reservation::Released,
        ]
        .into_iter()
        .find(|v| v.as_str() == s)
    }
}

pub const RESERVATION_HELD: &str = Reservation::Held.as_str();
pub const RESERVATION_CHARGED: &str = Reservation::Charged.as_str();
pub const RESERVATION_RELEASED: &str = Reservation::Released.as_str();

/// The job item's attribute names: written here and nowhere else.
mod attr {
    pub const KIND: &str = "kind";
    pub const ID: &str = "id";
    pub const ORG: &str = "org";
    pub const PERSON: &str = "person";
    pub const KEY: &str = "key";
    pub const MODEL: &str = "model";
    pub const ENGINE: &str = "engine";
    pub const PROMPT: &str = "prompt";
    pub const SECONDS: &str = "seconds";
    pub const ASPECT_RATIO: &str = "aspect_ratio";
    pub const STATUS: &str = "status";
    pub const PROGRESS: &str = "progress";
    pub const COST: &str = "cost";
    pub const CURRENCY: &str = "currency";
    pub const CREATED_AT: &str = "created_at";
    pub const COMPLETED_AT: &str = "completed_at";
    pub const THUMBNAIL: &str = "thumbnail";
    pub const RESERVATION: &str = "reservation";
    pub const INPUTS: &str = "inputs";
    pub const BUDGET_MONTH: &str = "budget_month";
    pub const ENGINE_PROMPT: &str = "engine_prompt";
    pub const RENDER_ID: &str = "render_id";
    pub const RENDER_STARTED_MS: &str = "render_started_ms";
    /// Unix time a delivery of the render message claimed the submission (see
    /// [`super::submit_claim`]).
    pub const RENDER_CLAIM: &str = "render_claim";
    pub const SIZE: &str = "size";
    pub const ERROR_CODE: &str = "error_code";
    pub const ERROR_MESSAGE: &str = "error_message";
    pub const REMIXED_FROM: &str = "remixed_from";
    pub const EXTENDED_FROM: &str = "extended_from";
    pub const EXTENSION_BASE_SECONDS: &str = "extension_base_seconds";
    pub const EDITED_FROM: &str = "edited_from";
    pub const SOURCE_OPERATION: &str = "source_operation";
}

/// What a job made from a source video does with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceOperation {
    /// A new video on the source's model, seconds and ratio, with a new prompt.
    Remix,
    /// The source re-rendered, guided by the prompt, at its seconds and ratio.
    Edit,
    /// A segment continuing the source, joined after it by the stitch step.
    Extension,
}

impl SourceOperation {
    pub fn as_str(self) -> &'static str {
        match self {
            SourceOperation::Remix => "remix",
            SourceOperation::Edit => "edit",
            SourceOperation::Extension => "extension",
        }
    }
    pub fn parse(s: &str) -> Option<SourceOperation> {
        [
            SourceOperation::Remix,
            SourceOperation::Edit,
            SourceOperation::Extension,
        ]
        .into_iter()
        .find(|o| o.as_str() == s)
    }
}

/// How the render takes the job's source video (its copy, `source_video_blob_key`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceUse {
    /// The engine takes the video itself (its native operation).
    Video,
    /// Chained: the render opens with the source's first frame (`source_frame_blob_key`,
    /// taken by the moderate step), a remix on an engine without video-to-video.
    FirstFrame,
    /// Chained: the render opens with the source's last frame, an extension's segment.
    LastFrame,
    /// The engine takes the video and answers it with its continuation as one video (a native
    /// extension on Veo or xAI): conformed whole, never joined after the source.
    VideoWithContinuation,
}

impl SourceUse {
    pub fn as_str(self) -> &'static str {
        match self {
            SourceUse::Video => "video",
            SourceUse::FirstFrame => "first_frame",
            SourceUse::LastFrame => "last_frame",
            SourceUse::VideoWithContinuation => "video_with_continuation",
        }
    }
    pub fn parse(s: &str) -> Option<SourceUse> {
        [
            SourceUse::Video,
            SourceUse::FirstFrame,
            SourceUse::LastFrame,
            SourceUse::VideoWithContinuation,
        ]
        .into_iter()
        .find(|u| u.as_str() == s)
    }
    /// Whether the render opens with a frame of the source the moderate step keeps.
    pub fn takes_frame(self) -> bool {
        matches!(self, SourceUse::FirstFrame | SourceUse::LastFrame)
    }
}

/// The item's `kind`.
pub const KIND: &str = "video";

/// The most character frames one job copies (the create rules keep every job's reference
/// images, characters' frames included, within `create::MAX_REFERENCE_IMAGES`, this number).
pub const MAX_CHARACTER_FRAMES: usize = 8;

/// The job's inputs as the workflow needs them (stored on the job item as a map).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
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
    /// How the render takes the job's source video, when the job has one. A frame of it is
    /// never set together with `first_frame`.
    #[serde(default)]
    pub source_use: Option<SourceUse>,
    /// The provider's id of the render that made the source, for an engine that extends only
    /// its own videos.
    #[serde(default)]
    pub source_render: Option<String>,
    /// The characters the job names (their ids, as sent).
    #[serde(default)]
    pub characters: Vec<String>,
    /// How many of their frames the job copied (`character_frame_blob_key` 0..n): reference
    /// images of the render, moderated with the job's other images.
    #[serde(default)]
    pub character_frames: u32,
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
        if let Some(source_use) = self.source_use {
            m.insert("source_use".into(), source_use.as_str().into());
        }
        if let Some(render) = &self.source_render {
            m.insert("source_render".into(), render.clone().into());
        }
        if !self.characters.is_empty() {
            m.insert("characters".into(), list(&self.characters));
            m.insert(
                "character_frames".into(),
                i64::from(self.character_frames).into(),
            );
        }
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
            source_use: m.str_attr("source_use").and_then(SourceUse::parse),
            source_render: m.str_attr("source_render").map(str::to_owned),
            characters: list("characters"),
            character_frames: m
                .i64_attr("character_frames")
                .unwrap_or_default()
                .clamp(0, MAX_CHARACTER_FRAMES as i64) as u32,
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

/// A video job as stored. Admission writes the first block of fields; the workflow and the
/// worker add the optional ones as the job moves on.
#[derive(Clone, Debug, PartialEq)]
pub struct JobRecord {
    pub id: String,
    pub org: String,
    pub person: String,
    /// The key the job is attributed to (`console` for the console playground).
    pub key: String,
    pub model: String,
    /// The engine the model renders on (null when the catalog names none).
    pub engine: Option<String>,
    pub prompt: String,
    pub seconds: i64,
    pub aspect_ratio: String,
    pub status: JobStatus,
    pub progress: i64,
    /// The quote, reserved at admission.
    pub cost: Decimal,
    pub currency: String,
    pub created_at: i64,
    pub completed_at: Option<i64>,
    pub thumbnail: bool,
    pub reservation: Reservation,
    pub inputs: JobInputs,
    /// The month of the key's budget the quote was committed to, if the key has one.
    pub budget_month: Option<String>,
    /// The English prompt the engine renders (set by the translate step).
    pub engine_prompt: Option<String>,
    pub render_id: Option<String>,
    pub render_started_ms: Option<i64>,
    /// Output size (`1366x768`) once known.
    pub size: Option<String>,
    pub error_code: Option<String>,
    pub error_message: Option<String>,
    pub expires_at: Option<i64>,
    /// The completed video of the organization this job remixes (its output copied to the
    /// job's `source_video_blob_key` at admission).
    pub remixed_from: Option<String>,
    /// The completed video of the organization this job extends (its output copied to the
    /// job's `source_video_blob_key` at admission; the segment rendered from its last frame is
    /// joined after it by the stitch step).
    pub extended_from: Option<String>,
    /// An extension's source length in seconds: the output lasts it plus `seconds`.
    pub extension_base_seconds: Option<i64>,
    /// The completed video of the organization this job edits (copied like a remix's).
    pub edited_from: Option<String>,
    /// What the job does with its source video (copied to `source_video_blob_key` at
    /// admission: a completed video's output, or the caller's uploaded file).
    pub source_operation: Option<SourceOperation>,
}

impl JobRecord {
    /// How long the output lasts: the seconds rendered, after an extension's source.
    pub fn output_seconds(&self) -> i64 {
        self.seconds + self.extension_base_seconds.unwrap_or(0)
    }

    /// The completed video this job was made from (a remix's, an edit's or an extension's
    /// source; None for one made from an uploaded file).
    pub fn source_video(&self) -> Option<&str> {
        self.remixed_from
            .as_deref()
            .or(self.extended_from.as_deref())
            .or(self.edited_from.as_deref())
    }

    /// Whether the output is the source followed by the rendered segment.
    pub fn is_extension(&self) -> bool {
        self.source_operation == Some(SourceOperation::Extension)
    }

    pub fn key(&self) -> Key {
        crate::domain::table_keys::job(&self.org, &self.id)
    }

    /// The item to put. Optional fields are written only when set, except `completed_at`,
    /// which a job always carries (null until it ends).
    pub fn to_item(&self) -> Item {
        let mut it = crate::ports::store::item(&self.key());
        let mut put = |name: &str, value: Attr| {
            it.insert(name.to_owned(), value);
        };
        put(attr::KIND, KIND.into());
        put(attr::ID, self.id.clone().into());
        put(attr::ORG, self.org.clone().into());
        put(attr::PERSON, self.person.clone().into());
        put(attr::KEY, self.key.clone().into());
        put(attr::MODEL, self.model.clone().into());
        put(attr::ENGINE, self.engine.clone().into());
        put(attr::PROMPT, self.prompt.clone().into());
        put(attr::SECONDS, self.seconds.into());
        put(attr::ASPECT_RATIO, self.aspect_ratio.clone().into());
        put(attr::STATUS, self.status.as_str().into());
        put(attr::PROGRESS, self.progress.into());
        put(attr::COST, Attr::N(self.cost));
        put(attr::CURRENCY, self.currency.clone().into());
        put(attr::CREATED_AT, self.created_at.into());
        put(
            attr::COMPLETED_AT,
            self.completed_at.map_or(Attr::Null, Attr::from),
        );
        put(attr::THUMBNAIL, self.thumbnail.into());
        put(attr::RESERVATION, self.reservation.as_str().into());
        put(attr::INPUTS, self.inputs.to_attr());
        let optional: [(&str, Option<Attr>); 13] = [
            (
                attr::BUDGET_MONTH,
                self.budget_month.clone().map(Attr::from),
            ),
            (
                attr::ENGINE_PROMPT,
                self.engine_prompt.clone().map(Attr::from),
            ),
            (attr::RENDER_ID, self.render_id.clone().map(Attr::from)),
            (
                attr::RENDER_STARTED_MS,
                self.render_started_ms.map(Attr::from),
            ),
            (attr::SIZE, self.size.clone().map(Attr::from)),
            (attr::ERROR_CODE, self.error_code.clone().map(Attr::from)),
            (
                attr::ERROR_MESSAGE,
                self.error_message.clone().map(Attr::from),
            ),
            (EXPIRES_AT, self.expires_at.map(Attr::from)),
            (
                attr::REMIXED_FROM,
                self.remixed_from.clone().map(Attr::from),
            ),
            (
                attr::EXTENDED_FROM,
                self.extended_from.clone().map(Attr::from),
            ),
            (
                attr::EXTENSION_BASE_SECONDS,
                self.extension_base_seconds.map(Attr::from),
            ),
            (attr::EDITED_FROM, self.edited_from.clone().map(Attr::from)),
            (
                attr::SOURCE_OPERATION,
                self.source_operation.map(|o| Attr::from(o.as_str())),
            ),
        ];
        for (name, value) in optional {
            if let Some(value) = value {
                put(name, value);
            }
        }
        it
    }

    /// The record of a stored job item; None when it is not one (no id, model or known status).
    pub fn from_item(it: &Item) -> Option<JobRecord> {
        let text = |name: &str| it.str_attr(name).unwrap_or_default().to_owned();
        let optional = |name: &str| it.str_attr(name).map(str::to_owned);
        Some(JobRecord {
            id: it.str_attr(attr::ID)?.to_owned(),
            org: text(attr::ORG),
            person: text(attr::PERSON),
            key: text(attr::KEY),
            model: it.str_attr(attr::MODEL)?.to_owned(),
            engine: optional(attr::ENGINE),
            prompt: text(attr::PROMPT),
            seconds: it.i64_attr(attr::SECONDS).unwrap_or_default(),
            aspect_ratio: text(attr::ASPECT_RATIO),
            status: JobStatus::parse(it.str_attr(attr::STATUS)?)?,
            progress: it.i64_attr(attr::PROGRESS).unwrap_or_default(),
            cost: it.decimal_attr(attr::COST).unwrap_or_default(),
            currency: it.str_attr(attr::CURRENCY).unwrap_or("usd").to_owned(),
            created_at: it.i64_attr(attr::CREATED_AT).unwrap_or_default(),
            completed_at: it.i64_attr(attr::COMPLETED_AT),
            thumbnail: it.bool_attr(attr::THUMBNAIL).unwrap_or(false),
            reservation: it
                .str_attr(attr::RESERVATION)
                .and_then(Reservation::parse)
                .unwrap_or(Reservation::Held),
            inputs: JobInputs::from_attr(it.get(attr::INPUTS)),
            budget_month: optional(attr::BUDGET_MONTH),
            engine_prompt: optional(attr::ENGINE_PROMPT),
            render_id: optional(attr::RENDER_ID),
            render_started_ms: it.i64_attr(attr::RENDER_STARTED_MS),
            size: optional(attr::SIZE),
            error_code: optional(attr::ERROR_CODE),
            error_message: optional(attr::ERROR_MESSAGE),
            expires_at: it.i64_attr(EXPIRES_AT),
            remixed_from: optional(attr::REMIXED_FROM),
            extended_from: optional(attr::EXTENDED_FROM),
            extension_base_seconds: it.i64_attr(attr::EXTENSION_BASE_SECONDS),
            edited_from: optional(attr::EDITED_FROM),
            source_operation: it
                .str_attr(attr::SOURCE_OPERATION)
                .and_then(SourceOperation::parse),
        })
    }
}

// ---- The job's state changes, as updates and conditions of its item ---------------------------

/// The condition "the job is still running".
pub fn is_running() -> Condition {
    Condition::In(
        attr::STATUS.into(),
        RUNNING.iter().map(|s| Attr::from(*s)).collect(),
    )
}

/// The condition "the job has ended" (completed, failed or canceled).
pub fn is_terminal() -> Condition {
    Condition::In(
        attr::STATUS.into(),
        TERMINAL.iter().map(|s| Attr::from(*s)).collect(),
    )
}

/// The condition "the reservation is still `r`".
pub fn reservation_is(r: Reservation) -> Condition {
    Condition::Eq(attr::RESERVATION.into(), r.as_str().into())
}

/// Sets the job's reservation (in the settlement's transaction).
pub fn set_reservation(update: Update, r: Reservation) -> Update {
    update.set(attr::RESERVATION, r.as_str())
}

/// Moves the job to `status`, with `extra` changes.
pub fn advance(extra: Update, status: JobStatus) -> Update {
    extra.set(attr::STATUS, status.as_str())
}

/// The translate step's English prompt for the engine.
pub fn translated(engine_prompt: impl Into<String>) -> Update {
    Update::new().set(attr::ENGINE_PROMPT, engine_prompt.into())
}

/// The worker started the render.
pub fn render_started(render_id: impl Into<String>, started_ms: i64, progress: i64) -> Update {
    Update::new()
        .set(attr::RENDER_ID, render_id.into())
        .set(attr::RENDER_STARTED_MS, started_ms)
        .set(attr::PROGRESS, progress)
}

/// One delivery's claim on submitting the job's render, at `now`: written only while no render
/// is recorded and no other claim younger than `ttl_secs` stands, so two deliveries of one render
/// message never both ask the engine for a (paid) render.
pub fn submit_claim(now: i64, ttl_secs: i64) -> (Update, Condition) {
    let condition = Condition::Exists
        .and(Condition::AttrNotExists(attr::RENDER_ID.into()))
        .and(Condition::Or(vec![
            Condition::AttrNotExists(attr::RENDER_CLAIM.into()),
            Condition::Lt(attr::RENDER_CLAIM.into(), Attr::from(now - ttl_secs)),
        ]));
    (Update::new().set(attr::RENDER_CLAIM, now), condition)
}

/// Renews a delivery's claim on submitting the job's render (see [`submit_claim`]) while no
/// render is recorded.
pub fn submit_claim_renewal(now: i64) -> (Update, Condition) {
    let condition = Condition::Exists.and(Condition::AttrNotExists(attr::RENDER_ID.into()));
    (Update::new().set(attr::RENDER_CLAIM, now), condition)
}

/// The render's progress, 0–100.
pub fn progressed(progress: i64) -> Update {
    Update::new().set(attr::PROGRESS, progress)
}

/// The job ended failed with `code` and its documented `message`; kept until `expires_at`.
pub fn failed(code: &str, message: &str, now: i64, expires_at: i64) -> Update {
    Update::new()
        .set(attr::STATUS, STATUS_FAILED)
        .set(attr::ERROR_CODE, code)
        .set(attr::ERROR_MESSAGE, message)
        .set(attr::COMPLETED_AT, now)
        .set(EXPIRES_AT, expires_at)
}

/// The job ended canceled; kept until `expires_at`.
pub fn canceled(now: i64, expires_at: i64) -> Update {
    Update::new()
        .set(attr::STATUS, STATUS_CANCELED)
        .set(attr::COMPLETED_AT, now)
        .set(EXPIRES_AT, expires_at)
}

/// The job completed with its outputs; kept until `expires_at`.
pub fn completed(
    now: i64,
    expires_at: i64,
    thumbnail: bool,
    size: impl Into<String>,
    render_id: impl Into<String>,
) -> Update {
    Update::new()
        .set(attr::STATUS, STATUS_COMPLETED)
        .set(attr::PROGRESS, 100i64)
        .set(attr::COMPLETED_AT, now)
        .set(attr::THUMBNAIL, thumbnail)
        .set(attr::SIZE, size.into())
        .set(attr::RENDER_ID, render_id.into())
        .set(EXPIRES_AT, expires_at)
}

/// The job `video_id` of `org`, if it exists: the one read of a job item (the API, the
/// workflow steps, the worker, billing and webhooks all load a job through here). The key is
/// the organization's, so another tenant's job is never found.
pub async fn load(
    store: &dyn crate::ports::store::ItemStore,
    org: &str,
    video_id: &str,
) -> Result<Option<JobRecord>, crate::ports::store::StoreError> {
    Ok(store
        .get(&crate::domain::table_keys::job(org, video_id))
        .await?
        .as_ref()
        .and_then(JobRecord::from_item))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admitted() -> JobRecord {
        JobRecord {
            id: "video_1".into(),
            org: "org_1".into(),
            person: "user_1".into(),
            key: "key_1".into(),
            model: "reel-1".into(),
            engine: Some("reference".into()),
            prompt: "a cat".into(),
            seconds: 8,
            aspect_ratio: "16:9".into(),
            status: JobStatus::Moderating,
            progress: 0,
            cost: Decimal::new(40, 2),
            currency: "usd".into(),
            created_at: 1_700_000_000,
            completed_at: None,
            thumbnail: false,
            reservation: Reservation::Held,
            inputs: JobInputs {
                first_frame: Some("file_1".into()),
                ..JobInputs::default()
            },
            budget_month: None,
            engine_prompt: None,
            render_id: None,
            render_started_ms: None,
            size: None,
            error_code: None,
            error_message: None,
            expires_at: None,
            remixed_from: None,
            extended_from: None,
            edited_from: None,
            source_operation: None,
            extension_base_seconds: None,
        }
    }

    #[test]
    fn statuses_are_stored_and_serialized_as_their_old_strings() {
        let expected = [
            "moderating",
            "translating",
            "queued",
            "in_progress",
            "completed",
            "failed",
            "canceled",
        ];
        assert_eq!(STATUSES, expected);
        for (status, text) in JobStatus::ALL.into_iter().zip(expected) {
            assert_eq!(status.as_str(), text);
            assert_eq!(serde_json::to_value(status).unwrap(), text);
            assert_eq!(JobStatus::parse(text), Some(status));
            assert_eq!(status.is_terminal(), TERMINAL.contains(&text));
            assert_eq!(status.is_running(), RUNNING.contains(&text));
        }
        for (r, text) in [
            (Reservation::Held, "held"),
            (Reservation::Charged, "charged"),
            (Reservation::Released, "released"),
        ] {
            assert_eq!(r.as_str(), text);
            assert_eq!(serde_json::to_value(r).unwrap(), text);
            assert_eq!(Reservation::parse(text), Some(r));
        }
        assert_eq!(JobStatus::parse("rendering"), None);
    }

    #[test]
    fn the_admitted_item_has_exactly_the_attributes_admission_always_wrote() {
        let it = admitted().to_item();
        let names: Vec<&str> = it.keys().map(String::as_str).collect();
        let mut expected = vec![
            "pk",
            "sk",
            "kind",
            "id",
            "org",
            "person",
            "key",
            "model",
            "engine",
            "prompt",
            "seconds",
            "aspect_ratio",
            "status",
            "progress",
            "cost",
            "currency",
            "created_at",
            "completed_at",
            "thumbnail",
            "reservation",
            "inputs",
        ];
        let mut names = names;
        names.sort_unstable();
        expected.sort_unstable();
        assert_eq!(names, expected);
        assert_eq!(it.str_attr("pk"), Some("ORG#org_1"));
        assert_eq!(it.str_attr("sk"), Some("VIDEO#video_1"));
        assert_eq!(it.str_attr("kind"), Some("video"));
        assert_eq!(it.str_attr("status"), Some("moderating"));
        assert_eq!(it.str_attr("reservation"), Some("held"));
        assert_eq!(it.get("completed_at"), Some(&Attr::Null));
    }

    #[test]
    fn a_record_reads_back_what_it_wrote() {
        let mut job = admitted();
        assert_eq!(JobRecord::from_item(&job.to_item()), Some(job.clone()));
        job.status = JobStatus::Completed;
        job.reservation = Reservation::Charged;
        job.completed_at = Some(1_700_000_100);
        job.budget_month = Some("2026-11".into());
        job.engine_prompt = Some("a cat".into());
        job.render_id = Some("rnd_1".into());
        job.render_started_ms = Some(1_700_000_050_000);
        job.size = Some("1366x768".into());
        job.expires_at = Some(1_702_592_100);
        job.remixed_from = Some("video_0".into());
        job.extended_from = Some("video_00".into());
        job.extension_base_seconds = Some(4);
        job.edited_from = Some("video_000".into());
        job.source_operation = Some(SourceOperation::Extension);
        job.inputs = JobInputs {
            source_use: Some(SourceUse::LastFrame),
            characters: vec!["char_1".into()],
            character_frames: 4,
            ..JobInputs::default()
        };
        assert_eq!(JobRecord::from_item(&job.to_item()), Some(job));
    }

    #[test]
    fn an_item_without_a_known_status_is_not_a_job() {
        let mut it = admitted().to_item();
        it.insert("status".into(), "rendering".into());
        assert_eq!(JobRecord::from_item(&it), None);
        it.remove("status");
        assert_eq!(JobRecord::from_item(&it), None);
    }
}
