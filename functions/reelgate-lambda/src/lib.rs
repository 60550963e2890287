//! reelgate on AWS Lambda. The binaries in `src/bin/` are one line each: an HTTP function per
//! route path ([`run_http`]), one per workflow step ([`run_step`]) and the SQS render worker
//! ([`run_worker`]). Every piece of behaviour lives in the `reelgate` library; this crate only
//! builds the [`App`] over the AWS adapters ([`aws_app`]) and adapts Lambda events to it.
//!
//! [`functions::FUNCTIONS`] is the manifest of the binaries; `tests/infra_consistency.rs` checks
//! it against `infra/template.yaml`, `src/bin/` and `reelgate::api::API_ROUTES`.

pub mod functions;

use anyhow::Context;
use lambda_runtime::{Diagnostic, LambdaEvent};
use reelgate::app::{App, Settings};
use reelgate::domain::catalog::Catalog;
use reelgate::domain::workflow::worker::Disposition;
use serde_json::{json, Value};
use std::sync::Arc;

pub use lambda_runtime::Error;

/// Set to `1` on a function whose Lambda function URL is in `RESPONSE_STREAM` mode: it then
/// answers through Lambda response streaming (SSE chunks leave as the upstream produces them)
/// instead of one buffered API Gateway payload.
pub const RESPONSE_STREAM_ENV: &str = "REELGATE_RESPONSE_STREAM";

/// Logs as JSON lines (CloudWatch parses them) at `REELGATE_LOG` (default `info`).
pub fn init_tracing() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("REELGATE_LOG")
        .unwrap_or_else(|_| EnvFilter::new("info,hyper=warn,aws_smithy_runtime=warn"));
    // Lambda adds its own timestamps to every line.
    let _ = tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .without_time()
        .with_writer(std::io::stderr)
        .try_init();
}

/// The service settings from the function's environment (the template sets them): the same
/// variables every host reads (`Settings::from_env`), with one Lambda default.
pub fn settings_from_env() -> anyhow::Result<Settings> {
    let public_url = std::env::var("REELGATE_PUBLIC_URL").unwrap_or_default();
    let public_url = public_url.trim().trim_end_matches('/');
    let mut s = if public_url.is_empty() {
        Settings::from_env(&Settings::default().public_base_url)?
    } else {
        Settings::from_env(public_url)?
    };
    // Lambda answers at most 6 MB and an MP4 is often more: on Lambda the content routes
    // redirect to a presigned S3 URL unless REELGATE_CONTENT_REDIRECT=0.
    s.content_redirect = std::env::var("REELGATE_CONTENT_REDIRECT")
        .map(|v| v.trim() != "0")
        .unwrap_or(true);
    Ok(s)
}

/// Secrets (engine and provider keys) live in one Secrets Manager secret whose value is a JSON
/// object of environment-variable name → value; `REELGATE_SECRETS_ARN` names it. They are read
/// once per cold start and put into this process's environment, where the catalog's
/// `api_key_env` names look them up — so no secret ever sits in the function's configuration.
async fn load_secrets(config: &aws_config::SdkConfig) -> anyhow::Result<()> {
    let Some(arn) = std::env::var("REELGATE_SECRETS_ARN")
        .ok()
        .filter(|v| !v.trim().is_empty())
    else {
        return Ok(());
    };
    let client = aws_sdk_secretsmanager::Client::new(config);
    let out = client
        .get_secret_value()
        .secret_id(&arn)
        .send()
        .await
        .map_err(|e| {
            anyhow::anyhow!(
                "reading the secret {arn}: {}",
                aws_sdk_secretsmanager::error::DisplayErrorContext(&e)
            )
        })?;
    let text = out.secret_string().unwrap_or_default();
    let map: serde_json::Map<String, Value> = serde_json::from_str(text)
        .with_context(|| format!("the secret {arn} must be a JSON object of NAME: value"))?;
    for (name, value) in map {
        if let Some(v) = value.as_str() {
            // Set during start-up, before the runtime serves anything and before the engines and
            // upstreams that read these names are built; no other task reads the environment now.
            std::env::set_var(name, v);
        }
    }
    Ok(())
}

/// Builds the application over the AWS adapters from the environment: `REELGATE_TABLE`,
/// `REELGATE_BUCKET`, `REELGATE_RENDER_QUEUE_URL`, `REELGATE_STATE_MACHINE_ARN` (see
/// `reelgate_aws::AwsSettings`), the catalog (`REELGATE_CATALOG`, else the built-in one),
/// engines (`REELGATE_REFERENCE_ENGINE_URL` and the catalog's `base_url`s), the moderator
/// (`REELGATE_MODERATOR`) and the chat upstreams of the catalog (plus the models of
/// `REELGATE_UPSTREAM_BASE_URL`, when set).
pub async fn aws_app() -> anyhow::Result<App> {
    let aws = reelgate_aws::AwsSettings::from_env().map_err(anyhow::Error::msg)?;
    let backend = reelgate_aws::connect(aws).await;
    load_secrets(&backend.sdk_config).await?;
    let mut catalog = Catalog::load_from_env().context("loading the catalog")?;
    // As the local server does: with REELGATE_UPSTREAM_BASE_URL set, every model that server
    // lists becomes a chat model. A failure leaves the catalog's own models (and the video
    // routes) working.
    if let Err(e) = reelgate::adapters::upstream_discovery::discover_upstream_models(&mut catalog).await {
        tracing::error!(
            error = format!("{e:#}"),
            "listing the models of REELGATE_UPSTREAM_BASE_URL failed"
        );
    }
    let catalog = Arc::new(catalog);
    let mut app = App::new(
        backend.store,
        backend.blobs,
        backend.queue,
        catalog.clone(),
        settings_from_env()?,
    );
    let engines =
        reelgate::adapters::engines_from_catalog(&catalog, None).context("configuring the video engines")?;
    reelgate_aws::bedrock_video::register_bedrock_engines(&backend.sdk_config, &catalog, &engines)
        .context("configuring the Bedrock video engines")?;
    app.engines = Arc::new(engines);
    app.moderator = reelgate::adapters::moderator_from_env().context("configuring moderation")?;
    // A provider that cannot be configured must not take the video routes down with it: the
    // gateway connects missing upstreams lazily and answers `upstream_unavailable` per request.
    let upstreams =
        reelgate::domain::registry::Upstreams::with_connector(Arc::new(reelgate_aws::upstream_connector()));
    if let Err(e) = upstreams.connect_all(&catalog).await {
        tracing::error!(error = %e, "chat upstreams are not all configured; they connect on first use")
    }
    app.upstreams = Arc::new(upstreams);
    if let Some(workflow) = backend.workflow {
        app.set_workflow(workflow);
    }
    Ok(app)
}

async fn app_or_exit(function: &str) -> App {
    init_tracing();
    match aws_app().await {
        Ok(app) => app,
        Err(e) => {
            // Exiting makes Lambda report an init error (`Runtime.ExitError`) with this line in
            // the log, which is where an operator looks for a configuration mistake.
            tracing::error!(function, error = format!("{e:#}"), "cannot start");
            std::process::exit(1);
        }
    }
}

/// Serves the API router through `lambda_http` (API Gateway HTTP API payload 2.0, or a function
/// URL). Buffered by default; streamed when [`RESPONSE_STREAM_ENV`] is `1`.
pub async fn run_http(function: &str) -> Result<(), Error> {
    let app = app_or_exit(function).await;
    let router = reelgate::api::router(app);
    if std::env::var(RESPONSE_STREAM_ENV).as_deref() == Ok("1") {
        lambda_http::run_with_streaming_response(router).await
    } else {
        lambda_http::run(router).await
    }
}

/// The Lambda error of a failed step: its `errorType` is the step's error name, which the state
/// machine's `Retry`/`Catch` match.
fn step_diagnostic(e: reelgate::domain::workflow::steps::StepError) -> Diagnostic {
    Diagnostic {
        error_type: e.error,
        error_message: e.cause,
    }
}

/// Runs one workflow step (`moderate`, `translate`, `finalize`, `fail_job`) per invocation.
pub async fn run_step(step: &'static str) -> Result<(), Error> {
    let app = app_or_exit(step).await;
    let app = &app;
    lambda_runtime::run(lambda_runtime::service_fn(
        move |event: LambdaEvent<Value>| async move {
            reelgate::domain::workflow::steps::run_step(app, step, event.payload)
                .await
                .map_err(step_diagnostic)
        },
    ))
    .await
}

/// Handles one SQS batch: every record through the render worker; the ones to retry are reported
/// as batch item failures (the event source mapping has `ReportBatchItemFailures`), so SQS
/// redelivers just those after their visibility timeout and the rest are deleted.
pub async fn handle_sqs_batch(app: &App, event: &Value) -> Value {
    let mut failures = Vec::new();
    for record in event["Records"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        let id = record["messageId"].as_str().unwrap_or_default();
        let body = record["body"].as_str().unwrap_or_default();
        if reelgate::domain::workflow::worker::handle(app, body).await == Disposition::Retry {
            // The queue's visibility timeout is long (sized for the worker's timeout); a retry
            // should come back after one poll interval, as on the local host.
            if let Some(receipt) = record["receiptHandle"].as_str() {
                if let Err(e) = app
                    .render_queue
                    .change_visibility(receipt, app.settings.render_poll_interval)
                    .await
                {
                    tracing::warn!(error = %e, message_id = id, "could not shorten the visibility of a message to retry");
                }
            }
            failures.push(json!({"itemIdentifier": id}));
        }
    }
    json!({"batchItemFailures": failures})
}

/// The SQS-triggered render worker.
pub async fn run_worker() -> Result<(), Error> {
    let app = app_or_exit("render-worker").await;
    let app = &app;
    lambda_runtime::run(lambda_runtime::service_fn(
        move |event: LambdaEvent<Value>| async move {
            Ok::<Value, Error>(handle_sqs_batch(app, &event.payload).await)
        },
    ))
    .await
}

/// Handles one EventBridge "Step Functions Execution Status Change" event of the video state
/// machine. An execution that failed, timed out or was aborted normally settled its job in
/// `FailJob`; when it did not (the execution's own time limit, `FailJob` out of retries, an
/// operator's StopExecution), the job would stay running with its reservation held. This fails
/// such a job as `engine_unavailable` and releases the reservation — the AWS counterpart of the
/// local host's `reelgate_embedded::workflow::reconcile`. Returns whether it failed a job.
pub async fn handle_execution_ended(app: &App, event: &Value) -> anyhow::Result<bool> {
    let detail = &event["detail"];
    let status = detail["status"].as_str().unwrap_or_default();
    if !matches!(status, "FAILED" | "TIMED_OUT" | "ABORTED") {
        return Ok(false);
    }
    // The execution's input is a JSON string: {"org", "video_id"} as `start_job` wrote it.
    let input: Value = detail["input"]
        .as_str()
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or(Value::Null);
    let (Some(org), Some(video_id)) = (input["org"].as_str(), input["video_id"].as_str()) else {
        tracing::warn!(execution = %detail["executionArn"], "an ended execution without a job in its input");
        return Ok(false);
    };
    let failed = reelgate::domain::jobs::fail_if_running(app, org, video_id)
        .await
        .map_err(|e| anyhow::anyhow!("failing {video_id}: {}", e.message))?;
    if failed {
        tracing::warn!(%video_id, status, execution = %detail["executionArn"], "the execution ended while the job was running; failed it");
    }
    Ok(failed)
}

/// The EventBridge-triggered reconciler of ended executions. An error makes EventBridge retry
/// the event (its default retry policy), so a store outage does not leave the job running.
pub async fn run_execution_ended() -> Result<(), Error> {
    let app = app_or_exit("execution-ended").await;
    let app = &app;
    lambda_runtime::run(lambda_runtime::service_fn(
        move |event: LambdaEvent<Value>| async move {
            let failed = handle_execution_ended(app, &event.payload)
                .await
                .map_err(|e| Error::from(format!("{e:#}")))?;
            Ok::<Value, Error>(json!({ "failed_job": failed }))
        },
    ))
    .await
}
