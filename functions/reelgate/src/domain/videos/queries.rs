//! The reads and the delete of a caller's jobs (`GET /v1/videos`, `GET`/`DELETE
//! /v1/videos/{id}`, and the console's same actions): every query of job items outside the
//! workflow, each scoped by the caller's organization through the key.

use crate::domain::accounts::Caller;
use crate::domain::catalog::OperationSupport;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::ids::is_valid;
use crate::domain::params::{ListQuery, Page};
use crate::domain::table_keys;
use crate::domain::videos::{SourceOperation, Video, STATUS_COMPLETED};
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

/// A page of the caller's organization's jobs, newest first unless `order=asc`.
pub async fn list(cx: Context<'_>, caller: &Caller, params: &ListQuery) -> ApiResult<Page<Video>> {
    let limit = params.limit(MAX_PAGE)?;
    let descending = params.descending()?;
    let after = params.after("video")?.map(table_keys::video_sk);
    let mut q = Query::partition(table_keys::org_pk(&caller.org))
        .prefix(table_keys::VIDEO_PREFIX)
        .limit(limit)
        .after(after);
    if descending {
        q = q.descending();
    }
    let page = cx.store.query(q).await?;
    Ok(Page {
        data: page.items.iter().filter_map(Video::from_item).collect(),
        has_more: page.last_sk.is_some(),
    })
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
