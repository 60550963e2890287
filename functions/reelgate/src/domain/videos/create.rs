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
use serde_json::Value;
use utoipa::ToSchema;

/// The resolution every render is priced and produced at.
pub const RESOLUTION: &str = "768p";

const MIB: u64 = 1024 * 1024;
/// Images must be under 30 MiB (the engine rejects 30 MiB or more).
pub const MAX_IMAGE_BYTES: u64 = 30 * MIB;
pub const MAX_REFERENCE_VIDEO_BYTES: u64 = 50 * MIB;
pub const MAX_REFERENCE_AUDIO_BYTES: u64 = 15 * MIB;
/// How long a reference video or audio file may last, in seconds (the spec's limits table).
pub const REFERENCE_MEDIA_SECS: (f64, f64) = (2.0, 15.0);
pub use super::create_request::{
    FileRef, FrameReference, FrameRole, References, VideoCreateRequest, ASPECT_RATIOS, MAX_FRAMES,
    MAX_PROMPT_CHARS, MAX_REFERENCE_AUDIO, MAX_REFERENCE_IMAGES, MAX_REFERENCE_VIDEOS, MAX_SECONDS,
    MIN_SECONDS,
};

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
pub async fn quote(cx: Context<'_>, caller: &Caller, req: &VideoCreateRequest) -> ApiResult<Quote> {
    priced(cx, caller, req).await
}

async fn priced(cx: Context<'_>, caller: &Caller, req: &VideoCreateRequest) -> ApiResult<Quote> {
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
    check_capabilities(&cx.catalog.capabilities(model), &model.id, req)?;
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
    Ok(quote)
}

/// Admits a job and starts its workflow, without an idempotency claim or the create rate
/// limits (the admission step of [`create`]); returns the job as created.
pub async fn admit_job(
    cx: Context<'_>,
    workflow: Option<&dyn crate::ports::workflow::Workflow>,
    caller: &Caller,
    req: &VideoCreateRequest,
) -> ApiResult<Video> {
    create_with(cx, workflow, caller, req, None, None).await
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
    req: &VideoCreateRequest,
) -> ApiResult<CreateAnswer> {
    create_from(cx, workflow, caller, idempotency_key, req, None).await
}

/// [`create`] of a job made from `source` (a remix: `req` is the create request its use case
/// made of the source and the new prompt), or of a new video when `source` is None. One
/// `Idempotency-Key` names one request: the same key on a create and a remix is a conflict.
pub async fn create_from(
    cx: Context<'_>,
    workflow: Option<&dyn crate::ports::workflow::Workflow>,
    caller: &Caller,
    idempotency_key: Option<&[u8]>,
    req: &VideoCreateRequest,
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
    let fingerprint = fingerprint.json(req)?.clone().finish();
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
    let result = match create_with(cx, workflow, caller, req, claim.as_ref(), source).await {
        Ok(video) => idem::finish(cx, claim, &video).await.map(|()| video),
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
    req: &VideoCreateRequest,
    claim: Option<&crate::domain::idempotency::Claim>,
    source: Option<&Source>,
) -> ApiResult<Video> {
    let priced = priced(cx, caller, req).await?;
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
    check_files(cx, &caller.org, req, engine_image_limit).await?;
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
}
