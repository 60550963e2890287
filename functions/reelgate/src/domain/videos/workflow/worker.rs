//! The render worker: it takes the Render state's message from the render queue, signs the
//! job's input files into short-lived URLs, submits to the engine, sets the job `in_progress`,
//! then follows the render by polling (a delayed `poll` message on the same queue, so no worker
//! waits in memory and a restarted worker carries on). Engine progress becomes the job's
//! `progress` and a workflow heartbeat; a render that stops progressing misses heartbeats and
//! the state machine ends it as `engine_unavailable`. When the engine succeeds, the worker stores
//! the MP4 and resumes the execution with SendTaskSuccess; any engine failure is SendTaskFailure.

use super::steps::{errors, RenderResult, MAX_ENGINE_OUTPUT_BYTES};
use super::Pipeline;
use crate::domain::videos;
use crate::domain::videos::record::{self as job_record, JobRecord, JobStatus};
use crate::ports::blobs::BlobError;
use crate::ports::engine::{
    EngineError, Render, RenderInputs, RenderRequest, RenderStatus, VideoEngine,
};
use crate::ports::store::now_secs;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RenderMessage {
    /// Sent by the state machine's Render state.
    Submit {
        task_token: String,
        org: String,
        video_id: String,
    },
    /// Sent by the worker to itself to follow a render.
    Poll {
        task_token: String,
        org: String,
        video_id: String,
        render_id: String,
        /// Last progress reported, to send heartbeats only on progress.
        last_progress: u32,
        /// Consecutive engine calls that found it unreachable.
        #[serde(default)]
        unreachable: u32,
        /// Unix time of the last heartbeat sent while the engine's progress cannot be observed.
        #[serde(default)]
        last_beat: i64,
    },
}

/// How often the worker heartbeats a render whose engine does not report progress, while the
/// engine says it is running: ten polls, at most 30 s (well inside the Render state's 300 s).
fn opaque_beat_interval(poll: Duration) -> i64 {
    (poll.as_secs_f64() * 10.0).clamp(1.0, 30.0) as i64
}

/// The message that follows `render_id` for the job, carrying what the last poll saw.
fn poll_message(
    token: &str,
    org: &str,
    video_id: &str,
    render_id: &str,
    last_progress: u32,
    unreachable: u32,
    last_beat: i64,
) -> RenderMessage {
    RenderMessage::Poll {
        task_token: token.to_owned(),
        org: org.to_owned(),
        video_id: video_id.to_owned(),
        render_id: render_id.to_owned(),
        last_progress,
        unreachable,
        last_beat,
    }
}

/// What to do with the queue message once handled.
#[derive(Debug, PartialEq, Eq)]
pub enum Disposition {
    /// Done with it (delete).
    Done,
    /// Leave it to be delivered again after its visibility timeout.
    Retry,
}

/// Handles one render-queue message body.
pub async fn handle(pipeline: &Pipeline, body: &str) -> Disposition {
    let message: RenderMessage = match serde_json::from_str(body) {
        Ok(m) => m,
        Err(e) => {
            tracing::error!(error = %e, body, "render message is not understood; dropping it");
            return Disposition::Done;
        }
    };
    // The job's trace context rides along in every render message (the state machine writes
    // it into the first; `enqueue` copies it into each follow-up), so every submit and poll is
    // a span of the create request's trace.
    let traceparent = serde_json::from_str::<Carrier>(body)
        .ok()
        .and_then(|c| c.traceparent);
    let span = render_span(&message, traceparent.as_deref());
    let outcome = RENDER_TRACEPARENT
        .scope(
            traceparent,
            handle_message(pipeline, message).instrument(span.clone()),
        )
        .await;
    if let Err(e) = &outcome {
        span.record("otel.status_code", "ERROR");
        span.record("error", e.as_str());
    }
    match outcome {
        Ok(()) => Disposition::Done,
        Err(e) => {
            tracing::warn!(error = %e, "render message will be retried");
            Disposition::Retry
        }
    }
}

tokio::task_local! {
    /// The `traceparent` of the render message being handled.
    static RENDER_TRACEPARENT: Option<String>;
}

/// The trace context field of a render message (absent while traces are off).
#[derive(Deserialize)]
struct Carrier {
    #[serde(default)]
    traceparent: Option<String>,
}

/// The span of one render message, created only while traces are exported.
fn render_span(message: &RenderMessage, traceparent: Option<&str>) -> tracing::Span {
    if !crate::observability::trace_context::exporting() {
        return tracing::Span::none();
    }
    let (name, video_id) = match message {
        RenderMessage::Submit { video_id, .. } => ("render submit", video_id),
        RenderMessage::Poll { video_id, .. } => ("render poll", video_id),
    };
    let span = tracing::info_span!(
        parent: None,
        "render",
        otel.name = name,
        otel.status_code = tracing::field::Empty,
        video_id = video_id.as_str(),
        error = tracing::field::Empty,
    );
    crate::observability::trace_context::adopt(&span, traceparent);
    span
}

async fn handle_message(pipeline: &Pipeline, message: RenderMessage) -> WorkerResult {
    match message {
        RenderMessage::Submit {
            task_token,
            org,
            video_id,
        } => submit(pipeline, &task_token, &org, &video_id).await,
        RenderMessage::Poll {
            task_token,
            org,
            video_id,
            render_id,
            last_progress,
            unreachable,
            last_beat,
        } => {
            let seen = Seen {
                last_progress,
                unreachable,
                last_beat,
            };
            poll(pipeline, &task_token, &org, &video_id, &render_id, seen).await
        }
    }
}

type WorkerResult = Result<(), String>;

async fn fail_task(
    pipeline: &Pipeline,
    token: &str,
    video_id: &str,
    error: &str,
    cause: &str,
) -> WorkerResult {
    tracing::warn!(%video_id, error, cause, "render failed");
    let Some(workflow) = pipeline.workflow.clone() else {
        return Err("no workflow configured".into());
    };
    match workflow.task_failure(token, error, cause).await {
        Ok(()) | Err(crate::ports::workflow::WorkflowError::InvalidToken) => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}

async fn enqueue(pipeline: &Pipeline, message: &RenderMessage, delay: Duration) -> WorkerResult {
    let mut body = serde_json::to_value(message).map_err(|e| e.to_string())?;
    if let Some(traceparent) = RENDER_TRACEPARENT.try_with(Clone::clone).ok().flatten() {
        body["traceparent"] = traceparent.into();
    }
    let body = body.to_string();
    pipeline
        .render_queue
        .send(&body, delay)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// The blob of the frame the job's render opens with: its uploaded first frame, or the source's
/// first (or last) frame of a chained remix (or extension).
fn first_frame_key(job: &JobRecord) -> Option<String> {
    match &job.inputs.first_frame {
        Some(id) => Some(crate::domain::files::blob_key(&job.org, id)),
        None if job.inputs.source_use.is_some_and(|u| u.takes_frame()) => Some(
            crate::domain::videos::source_frame_blob_key(&job.org, &job.id),
        ),
        None => None,
    }
}

async fn sign_inputs(pipeline: &Pipeline, job: &JobRecord) -> Result<RenderInputs, String> {
    let (org, inputs) = (job.org.as_str(), &job.inputs);
    let presign = |key: String| async move {
        pipeline
            .blobs
            .presign_get(&key, pipeline.settings.presign_ttl)
            .await
            .map_err(|e| format!("signing input {key}: {e}"))
    };
    let sign = |id: String| presign(crate::domain::files::blob_key(org, &id));
    let mut out = RenderInputs::default();
    if let Some(key) = first_frame_key(job) {
        out.first_frame_url = Some(presign(key).await?);
    }
    if let Some(id) = inputs.last_frame.clone() {
        out.last_frame_url = Some(sign(id).await?);
    }
    for id in &inputs.reference_images {
        out.reference_image_urls.push(sign(id.clone()).await?);
    }
    for i in 0..inputs.character_frames as usize {
        let key = crate::domain::videos::character_frame_blob_key(org, &job.id, i);
        out.reference_image_urls.push(presign(key).await?);
    }
    for id in &inputs.reference_videos {
        out.reference_video_urls.push(sign(id.clone()).await?);
    }
    for id in &inputs.reference_audio {
        out.reference_audio_urls.push(sign(id.clone()).await?);
    }
    if let (Some(source_use), Some(operation)) = (inputs.source_use, job.source_operation) {
        if !source_use.takes_frame() {
            let key = crate::domain::videos::source_video_blob_key(org, &job.id);
            out.source = Some(crate::ports::engine::RenderSource {
                operation: operation.as_str().to_owned(),
                video_url: presign(key).await?,
                render_id: inputs.source_render.clone(),
            });
        }
    }
    Ok(out)
}

/// How long one delivery's claim on submitting a job's render holds without renewal, and how
/// often the delivery renews it while it waits on the engine: a live submitter keeps it however
/// slow the provider is; one that died lets it lapse within half a minute (well before the
/// queue delivers its message again: 120 s locally, 720 s on AWS).
const SUBMIT_CLAIM_SECS: i64 = 30;
const SUBMIT_CLAIM_RENEW_SECS: u64 = 10;

/// Claims the submission of the job's render for this delivery (a conditional write on the
/// job): `false` when another delivery holds a live claim. A claim left by a worker that died
/// mid-submit lapses after [`SUBMIT_CLAIM_SECS`]; its provider render, if the provider had
/// started one, was never recorded and cannot be followed.
/// Renews this delivery's claim (it holds it: no render is recorded yet).
async fn renew_submission(pipeline: &Pipeline, org: &str, video_id: &str) -> Result<(), String> {
    let (update, condition) = job_record::submit_claim_renewal(now_secs());
    pipeline
        .store
        .update(
            &crate::domain::table_keys::job(org, video_id),
            update,
            Some(condition),
        )
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

async fn claim_submission(pipeline: &Pipeline, org: &str, video_id: &str) -> Result<bool, String> {
    let (update, condition) = job_record::submit_claim(now_secs(), SUBMIT_CLAIM_SECS);
    match pipeline
        .store
        .update(
            &crate::domain::table_keys::job(org, video_id),
            update,
            Some(condition),
        )
        .await
    {
        Ok(_) => Ok(true),
        Err(crate::ports::store::StoreError::ConditionFailed) => Ok(false),
        Err(e) => Err(e.to_string()),
    }
}

/// What the engine is asked to render for the job (`native::map_job`): its shortest native
/// duration at or above the job's seconds, and the native size nearest the job's shape (`Auto`
/// follows the first frame's shape when there is one). `None` when the engine, as the catalog
/// now describes it, renders no such clip (the create refused it under the catalog of the time).
async fn render_shape(
    pipeline: &Pipeline,
    job: &JobRecord,
) -> Option<crate::domain::catalog::native_renders::RenderShape> {
    let ratio = reelgate_media::AspectRatio::parse(&job.aspect_ratio)
        .unwrap_or(reelgate_media::AspectRatio::R16x9);
    let mut first = None;
    if ratio == reelgate_media::AspectRatio::Auto {
        if let Some(key) = first_frame_key(job) {
            if let Ok(bytes) = crate::ports::blobs::read_all(pipeline.blobs.as_ref(), &key).await {
                first = reelgate_media::decode_image(&bytes)
                    .ok()
                    .map(|i| (i.width(), i.height()));
            }
        }
    }
    let native = job
        .engine
        .as_deref()
        .and_then(|e| pipeline.catalog.engine(e))?
        .native_renders();
    crate::domain::catalog::native_renders::map_job(&native, job.seconds as u32, ratio, first)
}

/// The job and the engine it renders on, or the error and cause to fail the task with.
type JobAndEngine = Result<(JobRecord, Arc<dyn VideoEngine>), (&'static str, String)>;

async fn job_and_engine(
    pipeline: &Pipeline,
    org: &str,
    video_id: &str,
) -> Result<JobAndEngine, String> {
    let job = crate::domain::videos::record::load(pipeline.store.as_ref(), org, video_id)
        .await
        .map_err(|e| e.to_string())?;
    let Some(job) = job else {
        return Ok(Err((
            errors::JOB_NOT_RUNNING,
            "the job no longer exists".to_owned(),
        )));
    };
    let engine_id = job.engine.clone().unwrap_or_default();
    match pipeline.engines.get(&engine_id) {
        Some(engine) => Ok(Ok((job, engine))),
        None => Ok(Err((
            errors::ENGINE_UNAVAILABLE,
            format!("no engine {engine_id} is configured"),
        ))),
    }
}

async fn submit(pipeline: &Pipeline, token: &str, org: &str, video_id: &str) -> WorkerResult {
    let (job, engine) = match job_and_engine(pipeline, org, video_id).await? {
        Ok(found) => found,
        Err((error, cause)) => return fail_task(pipeline, token, video_id, error, &cause).await,
    };
    let status = job.status.as_str();
    if !job.status.is_running() {
        return fail_task(
            pipeline,
            token,
            video_id,
            errors::JOB_NOT_RUNNING,
            &format!("the job is {status}"),
        )
        .await;
    }
    // A redelivered submit finds the render it already started.
    if let Some(render_id) = job.render_id.as_deref() {
        let next = poll_message(
            token,
            org,
            video_id,
            render_id,
            job.progress as u32,
            0,
            now_secs(),
        );
        return enqueue(pipeline, &next, Duration::ZERO).await;
    }
    let signed = match sign_inputs(pipeline, &job).await {
        Ok(s) => s,
        Err(e) => {
            return fail_task(pipeline, token, video_id, errors::ENGINE_UNAVAILABLE, &e).await
        }
    };
    let aspect = Some(job.aspect_ratio.clone())
        .filter(|a| !a.is_empty())
        .unwrap_or_else(|| "16:9".to_owned());
    let Some(shape) = render_shape(pipeline, &job).await else {
        return fail_task(
            pipeline,
            token,
            video_id,
            errors::ENGINE_UNAVAILABLE,
            &format!(
                "the engine renders no clip of {} s at {aspect}",
                job.seconds
            ),
        )
        .await;
    };
    tracing::info!(
        %video_id,
        seconds = job.seconds,
        native_seconds = shape.seconds,
        native_size = %shape.size,
        "job mapped onto the engine's native render"
    );
    let request = RenderRequest {
        model: job.model.clone(),
        prompt: job
            .engine_prompt
            .clone()
            .unwrap_or_else(|| job.prompt.clone()),
        seconds: shape.seconds,
        aspect_ratio: aspect,
        width: shape.size.width,
        height: shape.size.height,
        inputs: signed,
        callback_url: None,
        client_reference: Some(video_id.to_owned()),
    };
    let mut attempt = 0;
    if !claim_submission(pipeline, org, video_id).await? {
        // Another delivery of this message is submitting (the queue redelivered it while the
        // provider was slow to answer): wait for it to record the render rather than start a
        // second, paid one.
        return Err("another delivery of the job's render message is submitting it".into());
    }
    // The claim is a lease: renewed while this delivery waits on the engine, so it outlives a
    // slow provider but lapses soon after a worker that died mid-submit.
    let submitting = async {
        loop {
            match engine.submit(&request).await {
                Ok(render) => return Ok(render),
                Err(e)
                    if e.is_transient()
                        && attempt + 1 < pipeline.settings.engine_unreachable_attempts =>
                {
                    attempt += 1;
                    tracing::warn!(%video_id, attempt, error = %e, "engine unreachable at submit; retrying");
                    tokio::time::sleep(e.retry_delay(pipeline.settings.render_poll_interval)).await;
                }
                Err(e) => return Err(e),
            }
        }
    };
    tokio::pin!(submitting);
    let mut renew = tokio::time::interval(std::time::Duration::from_secs(SUBMIT_CLAIM_RENEW_SECS));
    renew.tick().await;
    let submitted = loop {
        tokio::select! {
            outcome = &mut submitting => break outcome,
            _ = renew.tick() => {
                if let Err(e) = renew_submission(pipeline, org, video_id).await {
                    tracing::warn!(%video_id, error = %e, "could not renew the submission claim");
                }
            }
        }
    };
    let render = match submitted {
        Ok(render) => render,
        Err(EngineError::ContentRefused(cause)) => {
            return fail_task(
                pipeline,
                token,
                video_id,
                errors::MODERATION_BLOCKED,
                &cause,
            )
            .await
        }
        Err(e) => {
            return fail_task(
                pipeline,
                token,
                video_id,
                errors::ENGINE_UNAVAILABLE,
                &e.to_string(),
            )
            .await
        }
    };
    tracing::info!(%video_id, render_id = %render.id, "render submitted");
    let started_ms = crate::observability::metrics::now_millis();
    if let Some(created) = Some(job.created_at).filter(|c| *c > 0) {
        crate::observability::metrics::queue_wait(std::time::Duration::from_millis(
            u64::try_from(started_ms - created * 1000).unwrap_or(0),
        ));
    }
    let update = job_record::render_started(render.id.clone(), started_ms, render.progress as i64);
    if !crate::domain::videos::jobs::advance(
        pipeline.context(),
        org,
        video_id,
        JobStatus::InProgress,
        update,
    )
    .await
    .map_err(|e| e.to_string())?
    {
        let _ = engine.cancel(&render.id).await;
        return fail_task(
            pipeline,
            token,
            video_id,
            errors::JOB_NOT_RUNNING,
            "the job ended before the render started",
        )
        .await;
    }
    if let Some(workflow) = pipeline.workflow.clone() {
        let _ = workflow.task_heartbeat(token).await;
    }
    let next = poll_message(
        token,
        org,
        video_id,
        &render.id,
        u32::from(render.progress),
        0,
        now_secs(),
    );
    enqueue(pipeline, &next, pipeline.settings.render_poll_interval).await
}

/// What the previous polls of a render saw.
#[derive(Clone, Copy, Debug)]
struct Seen {
    last_progress: u32,
    unreachable: u32,
    last_beat: i64,
}

async fn poll(
    pipeline: &Pipeline,
    token: &str,
    org: &str,
    video_id: &str,
    render_id: &str,
    seen: Seen,
) -> WorkerResult {
    let Seen {
        last_progress,
        unreachable,
        last_beat,
    } = seen;
    let (job, engine) = match job_and_engine(pipeline, org, video_id).await? {
        Ok(found) => found,
        Err((error, cause)) => return fail_task(pipeline, token, video_id, error, &cause).await,
    };
    let status = job.status.as_str();
    if !job.status.is_running() {
        // The job ended elsewhere (e.g. the workflow timed it out): stop the engine's work.
        let _ = engine.cancel(render_id).await;
        return fail_task(
            pipeline,
            token,
            video_id,
            errors::JOB_NOT_RUNNING,
            &format!("the job is {status}"),
        )
        .await;
    }
    let render: Render = match engine.status(render_id).await {
        Ok(r) => r,
        Err(e) if e.is_transient() => {
            let unreachable = unreachable + 1;
            if unreachable >= pipeline.settings.engine_unreachable_attempts {
                return fail_task(
                    pipeline,
                    token,
                    video_id,
                    errors::ENGINE_UNAVAILABLE,
                    &format!("the engine stopped answering: {e}"),
                )
                .await;
            }
            tracing::warn!(%video_id, unreachable, error = %e, "engine unreachable while rendering");
            let next = poll_message(
                token,
                org,
                video_id,
                render_id,
                last_progress,
                unreachable,
                last_beat,
            );
            let delay = e.retry_delay(pipeline.settings.render_poll_interval);
            return enqueue(pipeline, &next, delay).await;
        }
        Err(e) => {
            return fail_task(
                pipeline,
                token,
                video_id,
                errors::ENGINE_UNAVAILABLE,
                &e.to_string(),
            )
            .await
        }
    };
    match render.status {
        RenderStatus::Succeeded => {
            // Streamed into the store as it arrives (never whole in memory); an answer that
            // fails or passes the conform stage's limit leaves nothing stored and fails the
            // job, unbilled. Only the store's own outage is retried.
            let output_key = videos::output_blob_key(org, video_id);
            let downloaded = match engine.fetch_result(&render).await {
                Err(e) => Err(e.to_string()),
                Ok(body) => match pipeline
                    .blobs
                    .put_stream(&output_key, "video/mp4", body, MAX_ENGINE_OUTPUT_BYTES)
                    .await
                {
                    Ok(_) => Ok(()),
                    Err(e @ (BlobError::TooLarge { .. } | BlobError::Source(_))) => {
                        Err(e.to_string())
                    }
                    Err(e) => return Err(e.to_string()),
                },
            };
            if let Err(cause) = downloaded {
                return fail_task(
                    pipeline,
                    token,
                    video_id,
                    errors::ENGINE_UNAVAILABLE,
                    &format!("downloading the output: {cause}"),
                )
                .await;
            }
            let result = RenderResult {
                output_key,
                render_id: render.id.clone(),
            };
            let Some(workflow) = pipeline.workflow.clone() else {
                return Err("no workflow configured".into());
            };
            let output = serde_json::to_value(&result).map_err(|e| e.to_string())?;
            match workflow.task_success(token, output).await {
                Ok(()) => tracing::info!(%video_id, "render stored; execution resumed"),
                Err(crate::ports::workflow::WorkflowError::InvalidToken) => {
                    tracing::warn!(%video_id, "render finished after its task ended (timed out or duplicate)")
                }
                Err(e) => return Err(e.to_string()),
            }
            Ok(())
        }
        RenderStatus::Failed | RenderStatus::Canceled => {
            let refused = render
                .error
                .as_ref()
                .is_some_and(|e| crate::ports::engine::is_content_refusal(&e.code));
            let cause = render
                .error
                .map(|e| format!("{}: {}", e.code, e.message))
                .unwrap_or_else(|| format!("the render ended {}", render.status.as_str()));
            let error = if refused {
                errors::MODERATION_BLOCKED
            } else {
                errors::ENGINE_UNAVAILABLE
            };
            fail_task(pipeline, token, video_id, error, &cause).await
        }
        _ => {
            let progress = u32::from(render.progress.min(99));
            // Heartbeats mean "the engine is working": queued, or progress moved; for an engine
            // whose progress cannot be observed, running is all it can say, so the worker
            // heartbeats on a schedule while it says so (the overall timeout still bounds it).
            let observable = job
                .engine
                .as_deref()
                .and_then(|e| pipeline.catalog.engine(e))
                .is_none_or(|e| e.progress_is_observable());
            let now = now_secs();
            let scheduled = !observable
                && now - last_beat >= opaque_beat_interval(pipeline.settings.render_poll_interval);
            let mut beat = last_beat;
            if render.status == RenderStatus::Queued || progress != last_progress || scheduled {
                beat = now;
                if let Some(workflow) = pipeline.workflow.clone() {
                    if let Err(crate::ports::workflow::WorkflowError::InvalidToken) =
                        workflow.task_heartbeat(token).await
                    {
                        let _ = engine.cancel(render_id).await;
                        return Ok(()); // the task already ended (timed out); its Catch failed the job
                    }
                }
                let _ = crate::domain::videos::jobs::advance(
                    pipeline.context(),
                    org,
                    video_id,
                    JobStatus::InProgress,
                    job_record::progressed(progress as i64),
                )
                .await;
            }
            let next = poll_message(token, org, video_id, render_id, progress, 0, beat);
            enqueue(pipeline, &next, pipeline.settings.render_poll_interval).await
        }
    }
}
