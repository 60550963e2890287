//! The reads and the delete of a caller's jobs (`GET /v1/videos`, `GET`/`DELETE
//! /v1/videos/{id}`, and the console's same actions): every query of job items outside the
//! workflow, each scoped by the caller's organization through the key.

use crate::domain::accounts::Caller;
use crate::domain::catalog::Catalog;
use crate::domain::catalog::OperationSupport;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::ids::is_valid;
use crate::domain::params::{ListQuery, Page};
use crate::domain::table_keys;
use crate::domain::videos::record::STATUSES;
use crate::domain::videos::{JobRecord, JobStatus, SourceOperation, Video, STATUS_COMPLETED};
use crate::domain::Context;
use crate::ports::store::{Query, StoreError};

/// The largest page `GET /v1/videos` returns.
pub const MAX_PAGE: usize = 100;

pub fn not_found(video_id: &str) -> ApiError {
    ApiError::not_found(
        "video_not_found",
        format!("No video found with id '{video_id}'."),
    )
    .with_param("video_id")
}

/// A job of `org`; another organization's job does not exist.
pub async fn retrieve(cx: Context<'_>, org: &str, video_id: &str) -> ApiResult<Video> {
    if !is_valid(video_id, "video") {
        return Err(not_found(video_id));
    }
    crate::domain::videos::record::load(cx.store, org, video_id)
        .await?
        .map(|job| Video::of(&job))
        .ok_or_else(|| not_found(video_id))
}

/// A job of `org` with the details the console's video page shows.
pub async fn retrieve_detail(
    cx: Context<'_>,
    org: &str,
    video_id: &str,
) -> ApiResult<crate::domain::videos::object::VideoDetail> {
    if !is_valid(video_id, "video") {
        return Err(not_found(video_id));
    }
    crate::domain::videos::record::load(cx.store, org, video_id)
        .await?
        .map(|job| crate::domain::videos::object::VideoDetail::of(&job))
        .ok_or_else(|| not_found(video_id))
}

/// A completed job of `org`, for its `what` (content, thumbnail).
pub async fn retrieve_completed(
    cx: Context<'_>,
    org: &str,
    video_id: &str,
    what: &str,
) -> ApiResult<Video> {
    let video = retrieve(cx, org, video_id).await?;
    if video.status != STATUS_COMPLETED {
        return Err(ApiError::invalid(
            "video_id",
            format!(
                "The {what} is available once the video has completed; it is {}.",
                video.status
            ),
        ));
    }
    Ok(video)
}

/// Links to a completed video's MP4 and thumbnail, each valid for `ttl` (the console's player
/// fetches the bytes straight from the blob store).
pub struct MediaLinks {
    pub content_url: String,
    pub thumbnail_url: Option<String>,
    pub ttl: std::time::Duration,
}

/// [`MediaLinks`] for a completed video of `org`, valid for `ttl` or the host's presign limit,
/// whichever is shorter.
pub async fn media_links(
    cx: Context<'_>,
    org: &str,
    video_id: &str,
    ttl: std::time::Duration,
) -> ApiResult<MediaLinks> {
    let video = retrieve_completed(cx, org, video_id, "content").await?;
    let ttl = ttl.min(cx.settings.presign_ttl);
    let content_url = cx
        .blobs
        .presign_get(&crate::domain::videos::output_blob_key(org, video_id), ttl)
        .await?;
    let thumbnail_url = if video.thumbnail {
        let key = crate::domain::videos::thumbnail_blob_key(org, video_id);
        Some(cx.blobs.presign_get(&key, ttl).await?)
    } else {
        None
    };
    Ok(MediaLinks {
        content_url,
        thumbnail_url,
        ttl,
    })
}

/// The completed job of `org` a new job is made from by `operation` (`param` names the source
/// in errors): another organization's id is not found, a job that has not completed is a 400,
/// and so is one whose model cannot do the operation, natively or by chaining. A model gone
/// from the catalog is left to the create rules.
pub async fn completed_source(
    cx: Context<'_>,
    org: &str,
    source_id: &str,
    param: &str,
    operation: SourceOperation,
) -> ApiResult<crate::domain::videos::JobRecord> {
    let not_found = || self::not_found(source_id).with_param(param);
    if !is_valid(source_id, "video") {
        return Err(not_found());
    }
    let source = crate::domain::videos::record::load(cx.store, org, source_id)
        .await?
        .ok_or_else(not_found)?;
    let verb = match operation {
        SourceOperation::Remix => "remixed",
        SourceOperation::Edit => "edited",
        SourceOperation::Extension => "extended",
    };
    if source.status != crate::domain::videos::JobStatus::Completed {
        return Err(ApiError::invalid(
            param,
            format!(
                "Only a completed video can be {verb}; video {source_id} is {}.",
                source.status.as_str()
            ),
        ));
    }
    if cx.catalog.video_model(&source.model).is_some() {
        check_operation(cx, &source.model, operation, param)?;
    }
    Ok(source)
}

/// Refuses `operation` on `model` when the model can do it neither natively nor by chaining,
/// naming the models that can (a 400 on `param`).
pub fn check_operation(
    cx: Context<'_>,
    model: &str,
    operation: SourceOperation,
    param: &str,
) -> ApiResult<()> {
    let support = |m: &crate::domain::catalog::VideoModel| {
        let ops = cx.catalog.capabilities(m).operations();
        match operation {
            SourceOperation::Remix => ops.remix,
            SourceOperation::Edit => ops.edit,
            SourceOperation::Extension => ops.extension,
        }
    };
    let Some(found) = cx.catalog.video_model(model) else {
        return Ok(());
    };
    if support(found) != OperationSupport::Unavailable {
        return Ok(());
    }
    let able: Vec<&str> = cx
        .catalog
        .video_models
        .iter()
        .filter(|m| support(m) != OperationSupport::Unavailable)
        .map(|m| m.id.as_str())
        .collect();
    let why = match operation {
        SourceOperation::Edit => "does not re-render a source video (no video-to-video)",
        _ => "takes neither a source video nor a first frame",
    };
    let able = if able.is_empty() {
        "no model of this service does".to_owned()
    } else {
        format!("models that do: {}", able.join(", "))
    };
    Err(ApiError::invalid(
        param,
        format!(
            "The video model '{model}' {why}, so it cannot make a{} {} ({able}).",
            if operation == SourceOperation::Extension {
                "n"
            } else {
                ""
            },
            operation.as_str()
        ),
    ))
}

/// The longest prompt search (`q`) a list takes, in characters.
pub const MAX_SEARCH_CHARS: usize = 200;

/// The most job items one filtered list request reads looking for matches. Past it the page
/// comes back with what was found, `has_more` true and `last_id` at the last job read, so the
/// client's next request continues the scan there.
pub const MAX_SCANNED: usize = 5_000;

/// The store page a filtered list reads at a time (an unfiltered one reads `limit + 1`).
const SCAN_PAGE: usize = 100;

/// The query of `GET /v1/videos` and of the console's list, as sent: a page (`after`, `limit`,
/// `order`) and reelgate's filters `status`, `model` and `q`.
#[derive(serde::Deserialize, Default, Clone)]
pub struct VideoListQuery {
    #[serde(flatten)]
    pub page: ListQuery,
    pub status: Option<String>,
    pub model: Option<String>,
    pub q: Option<String>,
}

/// The `status` a listed job must have: one status, or `running`, any before the end (what a
/// person watching their renders means by "rendering").
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StatusFilter {
    Is(JobStatus),
    Running,
}

/// The value of `status` that takes every job that has not ended.
pub const STATUS_RUNNING: &str = "running";

/// Every value `status` takes: the job statuses, then [`STATUS_RUNNING`].
pub const STATUS_FILTERS: &[&str] = &[
    crate::domain::videos::record::STATUS_MODERATING,
    crate::domain::videos::record::STATUS_TRANSLATING,
    crate::domain::videos::record::STATUS_QUEUED,
    crate::domain::videos::record::STATUS_IN_PROGRESS,
    crate::domain::videos::record::STATUS_COMPLETED,
    crate::domain::videos::record::STATUS_FAILED,
    crate::domain::videos::record::STATUS_CANCELED,
    STATUS_RUNNING,
];

/// What a listed job must be; the default takes every job.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VideoFilter {
    pub status: Option<StatusFilter>,
    /// A video model id, exactly.
    pub model: Option<String>,
    /// Lower-cased, trimmed: a substring of the lower-cased prompt the caller sent.
    pub text: Option<String>,
}

impl VideoListQuery {
    /// The filters, checked: `status` one of the job statuses, `model` a video model of the
    /// catalog, `q` at most [`MAX_SEARCH_CHARS`] once trimmed. An empty value filters nothing.
    pub fn filter(&self, catalog: &Catalog) -> ApiResult<VideoFilter> {
        let given = |v: &Option<String>| v.clone().filter(|v| !v.is_empty());
        let status = match given(&self.status) {
            None => None,
            Some(s) if s == STATUS_RUNNING => Some(StatusFilter::Running),
            Some(s) => Some(StatusFilter::Is(JobStatus::parse(&s).ok_or_else(|| {
                ApiError::invalid(
                    "status",
                    format!(
                        "status must be one of {}, or {STATUS_RUNNING} (any of them before the end).",
                        STATUSES.join(", ")
                    ),
                )
            })?)),
        };
        let model = match given(&self.model) {
            Some(m) if catalog.video_model(&m).is_none() => {
                return Err(ApiError::invalid(
                    "model",
                    format!("model must be a video model id of this service (GET /v1/videos/models); '{m}' is not."),
                ))
            }
            m => m,
        };
        let text = match self.q.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(q) => {
                let chars = q.chars().count();
                if chars > MAX_SEARCH_CHARS {
                    return Err(ApiError::invalid(
                        "q",
                        format!("q is {chars} characters; at most {MAX_SEARCH_CHARS} are allowed."),
                    ));
                }
                Some(q.to_lowercase())
            }
        };
        Ok(VideoFilter {
            status,
            model,
            text,
        })
    }
}

impl VideoFilter {
    pub fn is_empty(&self) -> bool {
        *self == VideoFilter::default()
    }

    pub fn matches(&self, job: &JobRecord) -> bool {
        self.status.is_none_or(|s| match s {
            StatusFilter::Is(status) => status == job.status,
            StatusFilter::Running => !job.status.is_terminal(),
        }) && self.model.as_deref().is_none_or(|m| m == job.model)
            && self
                .text
                .as_deref()
                .is_none_or(|t| job.prompt.to_lowercase().contains(t))
    }
}

/// A page of the caller's organization's jobs, newest first unless `order=asc`, only those
/// that match the query's filters.
pub async fn list(
    cx: Context<'_>,
    caller: &Caller,
    params: &VideoListQuery,
) -> ApiResult<Page<Video>> {
    let filter = params.filter(cx.catalog)?;
    list_matching(cx, &caller.org, &params.page, &filter, MAX_SCANNED).await
}

/// A page of `org`'s jobs that match `filter`, reading at most `max_scanned` job items (the
/// store is DynamoDB-shaped: a filter cannot be a key condition, so jobs are read in sort-key
/// order and matched here). Every page but the last holds `limit` jobs and `has_more` is exact
/// (one match past the page is looked for), unless the budget ran out first: then the page
/// holds what was found, `has_more` is true and `resume_after` is the last job read.
pub async fn list_matching(
    cx: Context<'_>,
    org: &str,
    page: &ListQuery,
    filter: &VideoFilter,
    max_scanned: usize,
) -> ApiResult<Page<Video>> {
    let limit = page.limit(MAX_PAGE)?;
    let descending = page.descending()?;
    let mut cursor = page.after("video")?.map(table_keys::video_sk);
    let chunk = if filter.is_empty() {
        limit + 1
    } else {
        SCAN_PAGE.max(limit + 1)
    };
    let mut data = Vec::new();
    let mut scanned = 0;
    loop {
        let budget = max_scanned.saturating_sub(scanned).max(1);
        let mut q = Query::partition(table_keys::org_pk(org))
            .prefix(table_keys::VIDEO_PREFIX)
            .limit(chunk.min(budget))
            .after(cursor.take());
        if descending {
            q = q.descending();
        }
        let read = cx.store.query(q).await?;
        for item in &read.items {
            scanned += 1;
            let Some(job) = JobRecord::from_item(item) else {
                continue;
            };
            if !filter.matches(&job) {
                continue;
            }
            if data.len() == limit {
                // A match past the page: more follow, after this page's last job.
                return Ok(Page::new(data, true));
            }
            data.push(Video::of(&job));
        }
        match read.last_sk {
            None => return Ok(Page::new(data, false)),
            Some(sk) if scanned >= max_scanned => {
                // The budget is spent; every job read after the page's last match did not
                // match, so the next page starts after the last job read.
                let mut page = Page::new(data, true);
                page.resume_after = sk.strip_prefix(table_keys::VIDEO_PREFIX).map(str::to_owned);
                return Ok(page);
            }
            Some(sk) => cursor = Some(sk),
        }
    }
}

/// Deletes a finished job of the caller's organization with its output and thumbnail; a job
/// still running is refused (409), so nothing in flight loses its record.
pub async fn delete(cx: Context<'_>, caller: &Caller, video_id: &str) -> ApiResult<()> {
    let video = retrieve(cx, &caller.org, video_id).await?;
    if !video.is_terminal() {
        return Err(ApiError::conflict(format!(
            "Video {video_id} is still {}; it can be deleted once it has completed, failed or been canceled.",
            video.status
        )));
    }
    match cx
        .store
        .delete(
            &table_keys::job(&caller.org, video_id),
            Some(crate::domain::videos::record::is_terminal()),
        )
        .await
    {
        Ok(_) => {}
        Err(StoreError::ConditionFailed) => {
            return Err(ApiError::conflict(format!(
                "Video {video_id} changed state; try again."
            )))
        }
        Err(e) => return Err(e.into()),
    }
    for key in crate::domain::videos::job_blob_keys(&caller.org, video_id) {
        cx.blobs.delete(&key).await?;
    }
    tracing::info!(%video_id, org = %caller.org, key = %caller.key_id(), "video deleted");
    Ok(())
}

/// The video models the caller's plan is entitled to, with what a create may send and their
/// prices per second (`GET /v1/videos/models`).
pub async fn models(cx: Context<'_>, caller: &Caller) -> ApiResult<Vec<VideoModelObject>> {
    let org = cx.accounts().org(&caller.org).await?;
    Ok(cx
        .catalog
        .video_models_for_plan(&org.plan)
        .map(|m| {
            let caps = cx.catalog.capabilities(m);
            let operations = caps.operations();
            VideoModelObject {
                id: m.id.clone(),
                object: "video_model",
                name: m.name.clone(),
                description: m.description.clone(),
                seconds: caps.seconds.map(|(min, max)| SecondsRange { min, max }),
                native_audio: caps.native.audio,
                inputs: caps.inputs,
                operations,
                aspect_ratios: caps.aspect_ratios,
                pricing: m.pricing.clone(),
            }
        })
        .collect())
}

/// A video model of `GET /v1/videos/models`: the spec's fields, then (clients ignore unknown
/// fields) what a create may send to it.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct VideoModelObject {
    pub id: String,
    #[schema(value_type = String, pattern = "^video_model$")]
    pub object: &'static str,
    pub name: String,
    pub description: String,
    /// `text`, `first_frame`, `last_frame`, `reference_images`, ...
    pub inputs: Vec<String>,
    pub aspect_ratios: Vec<String>,
    /// The `seconds` a create may ask for; null when the engine renders no clip the API allows.
    pub seconds: Option<SecondsRange>,
    /// Whether the engine renders the audio track itself.
    pub native_audio: bool,
    /// The operations on an earlier video (remix) the model offers: natively, by chaining, or not.
    pub operations: crate::domain::catalog::VideoOperations,
    pub pricing: Vec<crate::domain::catalog::PricingRow>,
}

#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct SecondsRange {
    pub min: u32,
    pub max: u32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::catalog::DEFAULT_CATALOG;
    use crate::domain::error::ErrorKind;

    fn catalog() -> Catalog {
        Catalog::parse(DEFAULT_CATALOG).expect("catalog")
    }

    fn query(status: Option<&str>, model: Option<&str>, q: Option<&str>) -> VideoListQuery {
        VideoListQuery {
            page: ListQuery::default(),
            status: status.map(str::to_owned),
            model: model.map(str::to_owned),
            q: q.map(str::to_owned),
        }
    }

    fn refused(query: VideoListQuery) -> ApiError {
        query.filter(&catalog()).expect_err("refused")
    }

    #[test]
    fn no_filter_or_empty_values_filter_nothing() {
        let c = catalog();
        assert!(query(None, None, None).filter(&c).expect("ok").is_empty());
        assert!(query(Some(""), Some(""), Some("   \t"))
            .filter(&c)
            .expect("ok")
            .is_empty());
    }

    #[test]
    fn every_job_status_is_a_status_filter() {
        for (status, text) in JobStatus::ALL.into_iter().zip(STATUSES) {
            let f = query(Some(text), None, None)
                .filter(&catalog())
                .expect("ok");
            assert_eq!(f.status, Some(StatusFilter::Is(status)));
        }
    }

    #[test]
    fn the_status_filters_are_the_statuses_and_running() {
        assert_eq!(&STATUS_FILTERS[..STATUSES.len()], STATUSES);
        assert_eq!(STATUS_FILTERS[STATUSES.len()..], [STATUS_RUNNING]);
    }

    #[test]
    fn running_takes_every_job_that_has_not_ended() {
        let f = query(Some(STATUS_RUNNING), None, None)
            .filter(&catalog())
            .expect("ok");
        assert_eq!(f.status, Some(StatusFilter::Running));
        let mut job = lantern_job();
        for status in JobStatus::ALL {
            job.status = status;
            assert_eq!(f.matches(&job), !status.is_terminal(), "{status:?}");
        }
    }

    #[test]
    fn an_unknown_status_is_a_400_naming_status() {
        for bad in ["cancelled", "Completed", "done", " completed"] {
            let e = refused(query(Some(bad), None, None));
            assert_eq!(e.kind, ErrorKind::InvalidRequest, "{bad}");
            assert_eq!(e.param.as_deref(), Some("status"), "{bad}");
            assert!(
                e.message.contains("in_progress, completed"),
                "{}",
                e.message
            );
        }
    }

    #[test]
    fn model_is_a_catalog_video_model_id_exactly() {
        let f = query(None, Some("reel-1-pro"), None)
            .filter(&catalog())
            .expect("ok");
        assert_eq!(f.model.as_deref(), Some("reel-1-pro"));
        for bad in ["reel-9", "REEL-1", "reel-1 "] {
            let e = refused(query(None, Some(bad), None));
            assert_eq!(e.kind, ErrorKind::InvalidRequest, "{bad}");
            assert_eq!(e.param.as_deref(), Some("model"), "{bad}");
            assert!(e.message.contains(bad), "{}", e.message);
        }
    }

    #[test]
    fn q_is_trimmed_lower_cased_and_at_most_200_characters() {
        let c = catalog();
        let f = query(None, None, Some("  Paper LANTERN "))
            .filter(&c)
            .expect("ok");
        assert_eq!(f.text.as_deref(), Some("paper lantern"));
        // Characters, not bytes; the surrounding space does not count.
        let longest = format!("  {}  ", "灯".repeat(MAX_SEARCH_CHARS));
        assert!(query(None, None, Some(&longest)).filter(&c).is_ok());
        let e = refused(query(None, None, Some(&"a".repeat(MAX_SEARCH_CHARS + 1))));
        assert_eq!(e.kind, ErrorKind::InvalidRequest);
        assert_eq!(e.param.as_deref(), Some("q"));
        assert!(e.message.contains("201"), "{}", e.message);
    }

    /// A completed job whose prompt the search tests look for.
    fn lantern_job() -> JobRecord {
        JobRecord {
            id: "video_1".into(),
            org: "org_1".into(),
            person: "user_1".into(),
            key: "key_1".into(),
            model: "reel-1".into(),
            engine: Some("reference".into()),
            prompt: "A paper LANTERN over the river".into(),
            seconds: 4,
            aspect_ratio: "16:9".into(),
            status: JobStatus::Completed,
            progress: 100,
            cost: rust_decimal::Decimal::new(40, 2),
            currency: "usd".into(),
            created_at: 1_700_000_000,
            completed_at: Some(1_700_000_100),
            thumbnail: true,
            reservation: crate::domain::videos::Reservation::Charged,
            inputs: Default::default(),
            budget_month: None,
            // The translation is not what the caller sent: the search never looks at it.
            engine_prompt: Some("boat".into()),
            render_id: None,
            render_started_ms: None,
            size: None,
            error_code: None,
            error_message: None,
            expires_at: None,
            remixed_from: None,
            extended_from: None,
            extension_base_seconds: None,
            edited_from: None,
            source_operation: None,
        }
    }

    #[test]
    fn a_filter_matches_status_model_and_prompt_text_together() {
        let job = lantern_job();
        let c = catalog();
        let matches = |s: Option<&str>, m: Option<&str>, q: Option<&str>| {
            query(s, m, q).filter(&c).expect("ok").matches(&job)
        };
        assert!(matches(None, None, None));
        assert!(matches(
            Some("completed"),
            Some("reel-1"),
            Some("paper lantern")
        ));
        assert!(matches(None, None, Some("LANTERN OVER")));
        assert!(!matches(Some("failed"), None, None));
        assert!(!matches(None, Some("reel-1-pro"), None));
        assert!(!matches(None, None, Some("lanterns")));
        assert!(!matches(None, None, Some("boat")));
        assert!(!matches(Some("completed"), None, Some("river boat")));
    }
}
