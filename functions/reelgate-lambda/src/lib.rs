//! reelgate on AWS Lambda. The binaries in `src/bin/` are one line each: an HTTP function per
//! route path ([`run_http`]), one per workflow step ([`run_moderate_step`], ...) and the SQS render worker
//! ([`run_worker`]). Every piece of behaviour lives in the `reelgate` library; this crate only
//! builds the [`App`] over the AWS adapters ([`aws_app`]) and adapts Lambda events to it.
//!
//! [`functions::FUNCTIONS`] is the manifest of the binaries; `tests/infra_consistency.rs` checks
//! it against `infra/template.yaml`, `src/bin/` and `reelgate::api::API_ROUTES`.

pub mod functions;
pub mod ports;

use anyhow::Context;
use aws_lambda_events::eventbridge::EventBridgeEvent;
use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};
use lambda_runtime::{Diagnostic, LambdaEvent};
use reelgate::app::{App, Host, Ports};
use reelgate::config::{Config, Settings};
use reelgate::domain::videos::workflow::worker::Disposition;
use serde_json::{json, Value};

pub use lambda_runtime::Error;

/// Set to `1` on a function whose Lambda function URL is in `RESPONSE_STREAM` mode: it then
/// answers through Lambda response streaming (SSE chunks leave as the upstream produces them)
/// instead of one buffered API Gateway payload.
pub const RESPONSE_STREAM_ENV: &str = "REELGATE_RESPONSE_STREAM";

/// Logs as JSON lines (CloudWatch parses them) at `REELGATE_LOG` (default `info`); with
/// `traces` (an OTLP endpoint configured), spans are also exported, flushed by [`flush_traces`]
/// before each invocation returns.
pub fn init_tracing(traces: Option<&reelgate::config::TraceExport>) -> anyhow::Result<()> {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    use tracing_subscriber::{EnvFilter, Layer as _};
    let filter = EnvFilter::try_from_env("REELGATE_LOG")
        .unwrap_or_else(|_| EnvFilter::new("info,hyper=warn,aws_smithy_runtime=warn"));
    // Lambda adds its own timestamps to every line.
    let logs = tracing_subscriber::fmt::layer()
        .json()
        .without_time()
        .with_writer(std::io::stderr)
        .with_filter(filter);
    let traces = traces.map(reelgate::adapters::otel::layer).transpose()?;
    let _ = tracing_subscriber::registry()
        .with(logs)
        .with(traces)
        .try_init();
    Ok(())
}

/// Sends this invocation's spans before it returns: Lambda freezes the sandbox as soon as the
/// handler answers, and a frozen batch processor sends nothing (no-op without an exporter).
pub async fn flush_traces() {
    reelgate::adapters::otel::flush().await;
}

/// Secrets (engine and provider keys) live in one Secrets Manager secret whose value is a JSON
/// object of environment-variable name → value; `REELGATE_SECRETS_ARN` names it. They are read
/// once per cold start and put into this process's environment, where the catalog's
/// `api_key_env` names look them up — so no secret ever sits in the function's configuration.
async fn load_secrets(config: &aws_config::SdkConfig, arn: &str) -> anyhow::Result<()> {
    let client = aws_sdk_secretsmanager::Client::new(config);
    let out = client
        .get_secret_value()
        .secret_id(arn)
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

/// Builds the application over the AWS adapters from the typed configuration
/// (`reelgate::config::Config`): the AWS resources (`REELGATE_TABLE`, `REELGATE_BUCKET`,
/// `REELGATE_RENDER_QUEUE_URL`, `REELGATE_STATE_MACHINE_ARN`), the secrets of
/// `REELGATE_SECRETS_ARN`, then [`reelgate::app::assemble`] with this host's differences: content
/// redirects on by default (Lambda answers at most 6 MB), Bedrock engines and upstreams, and
/// upstream failures logged rather than fatal (they connect on first use).
///
/// Only the ports `function` declares get their AWS adapter ([`ports::Adapters`]); the others
/// are [`ports::Absent`], which fail every call loudly. The item store is in every function.
pub async fn aws_app(
    config: Config,
    function: &functions::LambdaFunction,
) -> anyhow::Result<(App, Config)> {
    use ports::{Absent, Port};
    use std::sync::Arc;
    let adapters = function.adapters;
    let name = function.binary;
    let aws = reelgate_aws::AwsSettings::from_config(&config).map_err(anyhow::Error::msg)?;
    let sdk_config = reelgate_aws::sdk_config(&aws.region, aws.endpoint_url.as_deref()).await;
    // The provider keys' secret, then the front door's origin secret (a JSON object holding
    // REELGATE_ORIGIN_SECRET and, during a rotation, REELGATE_ORIGIN_SECRET_SECONDARY), whose
    // values are never in the function's configuration either.
    // The hosted video providers' keys are a secret of their own, which the template gives only
    // the render worker and the cancel route.
    let secret_arns: Vec<String> = [
        &config.aws.secrets_arn,
        &config.aws.origin_secret_arn,
        &config.aws.engine_secrets_arn,
    ]
    .into_iter()
    .flatten()
    .cloned()
    .collect();
    let config = if secret_arns.is_empty() {
        config
    } else {
        for arn in &secret_arns {
            load_secrets(&sdk_config, arn).await?;
        }
        // The secrets may hold REELGATE_* values (an upstream key, the origin secret): read the
        // completed environment, checked like the first reading.
        Config::from_env()?
    };
    if config.aws.origin_secret_arn.is_some() && config.settings.origin_secrets.is_none() {
        anyhow::bail!(
            "REELGATE_ORIGIN_SECRET_ARN names a secret without a REELGATE_ORIGIN_SECRET value; \
             the front door's check cannot be switched on"
        );
    }
    let absent = |port| Absent::new(port, name);
    let queue = |url: &str| -> Arc<dyn reelgate::ports::queue::MessageQueue> {
        match adapters.queues {
            Some(sqs) => sqs(&sdk_config, url),
            None => Arc::new(absent(Port::Queues)),
        }
    };
    let ports = Ports {
        store: Arc::new(reelgate_aws::DynamoItemStore::new(&sdk_config, &aws.table)),
        blobs: match adapters.blobs {
            Some(s3) => s3(&sdk_config, &aws),
            None => Arc::new(absent(Port::Blobs)),
        },
        render_queue: queue(&aws.queue_url),
        workflow: aws.state_machine_arn.as_deref().map(
            |arn| -> Arc<dyn reelgate::ports::workflow::Workflow> {
                match adapters.workflow {
                    Some(sfn) => sfn(&sdk_config, arn),
                    None => Arc::new(absent(Port::Workflow)),
                }
            },
        ),
    };
    let connector = reelgate::adapters::CatalogConnector::new().with_kind(
        "bedrock",
        match adapters.chat {
            Some(bedrock) => bedrock(),
            None => Arc::new(absent(Port::Chat)),
        },
    );
    let engines_sdk_config = sdk_config.clone();
    let host = Host {
        fallback_url: Settings::default().public_base_url,
        defaults: reelgate::config::HostDefaults::LAMBDA,
        in_process_engine_url: None,
        in_process_engine_key: None,
        connector,
        extra_engines: Some(Box::new(move |catalog, engines| {
            match adapters.video_engines {
                Some(bedrock) => bedrock(&engines_sdk_config, catalog, engines)
                    .context("configuring the Bedrock video engines"),
                None => {
                    ports::register_absent_video_engines(catalog, engines, name);
                    Ok(())
                }
            }
        })),
        strict_upstreams: false,
        connect_upstreams: adapters.chat.is_some(),
    };
    let blobs = ports.blobs.clone();
    let mut app = reelgate::app::assemble(&config, ports, host).await?;
    if let Some(url) = &config.aws.webhook_queue_url {
        app.webhook_queue = Some(queue(url));
    }
    app.pdf = match (adapters.pdf, &config.aws.pdf_function) {
        (Some(lambda), Some(function)) => lambda(&sdk_config, function, blobs),
        (Some(_), None) => {
            anyhow::bail!("{name} declares the PDF renderer but REELGATE_PDF_FUNCTION is not set")
        }
        (None, _) => Arc::new(absent(Port::Pdf)),
    };
    Ok((app, config))
}

async fn app_or_exit(entry: &functions::LambdaFunction) -> (App, Config) {
    let function = entry.binary;
    let config = Config::from_env();
    let traces = config.as_ref().ok().and_then(|c| c.traces.clone());
    if let Err(e) = init_tracing(traces.as_ref()) {
        let _ = init_tracing(None);
        tracing::error!(function, error = format!("{e:#}"), "cannot start");
        std::process::exit(1);
    }
    // Nothing scrapes a Lambda: metrics leave as CloudWatch EMF lines on stdout.
    reelgate::observability::metrics::set_emf(true);
    let assembled = match config {
        Ok(config) => aws_app(config, entry).await,
        Err(e) => Err(e.into()),
    };
    match assembled {
        Ok(assembled) => assembled,
        Err(e) => {
            // Exiting makes Lambda report an init error (`Runtime.ExitError`) with this line in
            // the log, which is where an operator looks for a configuration mistake.
            tracing::error!(function, error = format!("{e:#}"), "cannot start");
            std::process::exit(1);
        }
    }
}

/// Serves one HTTP function's routes (one API path, or the console) through `lambda_http` (API
/// Gateway HTTP API payload 2.0, or a function URL). Buffered by default; streamed when
/// [`RESPONSE_STREAM_ENV`] is on. The binary passes its own manifest entry
/// ([`functions::API_MODELS`], ...), so it links that path's handlers and no others.
pub async fn run_http(function: &functions::LambdaFunction) -> Result<(), Error> {
    let routes = match function.serves {
        functions::Serves::Http { routes, .. } | functions::Serves::Console { routes } => routes,
        other => {
            // A programming error in a binary's one line; say which, at init.
            eprintln!("{} is not an HTTP function: {other:?}", function.binary);
            std::process::exit(1);
        }
    };
    let (app, config) = app_or_exit(function).await;
    let router =
        reelgate::adapters::otel::flush_after_each_request(reelgate::api::serve(app, routes()));
    if config.response_stream {
        lambda_http::run_with_streaming_response(router).await
    } else {
        lambda_http::run(router).await
    }
}

/// The Lambda error of a failed step: its `errorType` is the step's error name, which the state
/// machine's `Retry`/`Catch` match.
fn step_diagnostic(e: reelgate::domain::videos::workflow::steps::StepError) -> Diagnostic {
    Diagnostic {
        error_type: e.error,
        error_message: e.cause,
    }
}

/// Runs one workflow step per invocation: `handler` is that step's own entry point
/// (`reelgate::domain::videos::workflow::steps::run_moderate`, ...), so the binary links only that
/// step's code.
async fn run_step<F, Fut>(function: &functions::LambdaFunction, handler: F) -> Result<(), Error>
where
    F: Fn(reelgate::domain::videos::workflow::Pipeline, Value) -> Fut + Sync,
    Fut: std::future::Future<
            Output = Result<Value, reelgate::domain::videos::workflow::steps::StepError>,
        > + Send,
{
    let (app, _) = app_or_exit(function).await;
    let (app, handler) = (&app, &handler);
    lambda_runtime::run(lambda_runtime::service_fn(
        move |event: LambdaEvent<Value>| async move {
            let outcome = handler(app.pipeline(), event.payload).await;
            flush_traces().await;
            outcome.map_err(step_diagnostic)
        },
    ))
    .await
}

/// The `moderate` step's function.
pub async fn run_moderate_step() -> Result<(), Error> {
    use reelgate::domain::videos::workflow::steps::run_moderate;
    run_step(&functions::STEP_MODERATE, |p, payload| async move {
        run_moderate(&p, payload).await
    })
    .await
}

/// The `translate` step's function.
pub async fn run_translate_step() -> Result<(), Error> {
    use reelgate::domain::videos::workflow::steps::run_translate;
    run_step(&functions::STEP_TRANSLATE, |p, payload| async move {
        run_translate(&p, payload).await
    })
    .await
}

/// The `stitch` step's function.
pub async fn run_stitch_step() -> Result<(), Error> {
    use reelgate::domain::videos::workflow::steps::run_stitch;
    run_step(&functions::STEP_STITCH, |p, payload| async move {
        run_stitch(&p, payload).await
    })
    .await
}

/// The `finalize` step's function.
pub async fn run_finalize_step() -> Result<(), Error> {
    use reelgate::domain::videos::workflow::steps::run_finalize;
    run_step(&functions::STEP_FINALIZE, |p, payload| async move {
        run_finalize(&p, payload).await
    })
    .await
}

/// The `fail_job` step's function.
pub async fn run_fail_job_step() -> Result<(), Error> {
    use reelgate::domain::videos::workflow::steps::run_fail_job;
    run_step(&functions::STEP_FAIL_JOB, |p, payload| async move {
        run_fail_job(&p, payload).await
    })
    .await
}

/// Handles one SQS batch: every record through the render worker; the ones to retry are reported
/// as batch item failures (the event source mapping has `ReportBatchItemFailures`), so SQS
/// redelivers just those after their visibility timeout and the rest are deleted.
pub async fn handle_sqs_batch(app: &App, event: &SqsEvent) -> SqsBatchResponse {
    let mut response = SqsBatchResponse::default();
    for record in &event.records {
        let id = record.message_id.as_deref().unwrap_or_default();
        let body = record.body.as_deref().unwrap_or_default();
        if reelgate::domain::videos::workflow::worker::handle(&app.pipeline(), body).await
            == Disposition::Retry
        {
            // The queue's visibility timeout is long (sized for the worker's timeout); a retry
            // should come back after one poll interval, as on the local host.
            if let Some(receipt) = record.receipt_handle.as_deref() {
                if let Err(e) = app
                    .render_queue
                    .change_visibility(receipt, app.settings.render_poll_interval)
                    .await
                {
                    tracing::warn!(error = %e, message_id = id, "could not shorten the visibility of a message to retry");
                }
            }
            response.add_failure(id.to_owned());
        }
    }
    response
}

/// The SQS-triggered render worker.
pub async fn run_worker() -> Result<(), Error> {
    let (app, _) = app_or_exit(&functions::RENDER_WORKER).await;
    let app = &app;
    lambda_runtime::run(lambda_runtime::service_fn(
        move |event: LambdaEvent<SqsEvent>| async move {
            let response = handle_sqs_batch(app, &event.payload).await;
            flush_traces().await;
            Ok::<SqsBatchResponse, Error>(response)
        },
    ))
    .await
}

/// Handles one SQS batch of webhook deliveries (`reelgate::domain::webhooks::deliver`), each
/// record at once: a failed delivery is not a failed record (its retry is a new, delayed
/// message); only a store or queue fault reports the record as a batch item failure.
pub async fn handle_webhook_batch(app: &App, event: &SqsEvent) -> SqsBatchResponse {
    let mut response = SqsBatchResponse::default();
    let Some(queue) = app.webhook_queue.clone() else {
        tracing::error!("REELGATE_WEBHOOK_QUEUE_URL is not set on the webhook worker");
        for record in &event.records {
            response.add_failure(record.message_id.clone().unwrap_or_default());
        }
        return response;
    };
    let handled = futures::future::join_all(event.records.iter().map(|record| {
        let queue = queue.clone();
        async move {
            let body = record.body.as_deref().unwrap_or_default();
            let outcome =
                reelgate::domain::webhooks::deliver(app.context(), queue.as_ref(), body).await;
            (record.message_id.clone().unwrap_or_default(), outcome)
        }
    }))
    .await;
    for (id, outcome) in handled {
        if let Err(e) = outcome {
            tracing::warn!(error = %e, message_id = %id, "webhook message will be retried");
            response.add_failure(id);
        }
    }
    response
}

/// The SQS-triggered webhook delivery worker.
pub async fn run_webhook_worker() -> Result<(), Error> {
    let (app, _) = app_or_exit(&functions::WEBHOOK_WORKER).await;
    let app = &app;
    lambda_runtime::run(lambda_runtime::service_fn(
        move |event: LambdaEvent<SqsEvent>| async move {
            let response = handle_webhook_batch(app, &event.payload).await;
            flush_traces().await;
            Ok::<SqsBatchResponse, Error>(response)
        },
    ))
    .await
}

/// Handles one EventBridge "Step Functions Execution Status Change" event of the video state
/// machine. An execution that failed, timed out or was aborted normally settled its job in
/// `FailJob`; when it did not (the execution's own time limit, `FailJob` out of retries, an
/// operator's StopExecution), the job would stay running with its reservation held. This fails
/// such a job as `engine_unavailable` and releases the reservation — the AWS counterpart of the
/// local host's `reelgate_embedded::recovery::reconcile`. Returns whether it failed a job.
pub async fn handle_execution_ended(
    app: &App,
    event: &EventBridgeEvent<ExecutionStatusChange>,
) -> anyhow::Result<bool> {
    let detail = &event.detail;
    let status = detail.status.as_str();
    if !matches!(status, "FAILED" | "TIMED_OUT" | "ABORTED") {
        return Ok(false);
    }
    // The execution's name only: its ARN carries the account id, which no log line shows.
    let execution = detail
        .execution_arn
        .as_deref()
        .unwrap_or_default()
        .rsplit(':')
        .next()
        .unwrap_or_default();
    let Some(job) = detail
        .input
        .as_deref()
        .and_then(|text| serde_json::from_str::<ExecutionInput>(text).ok())
    else {
        tracing::warn!(execution, "an ended execution without a job in its input");
        return Ok(false);
    };
    let failed =
        reelgate::domain::videos::jobs::fail_if_running(app.context(), &job.org, &job.video_id)
            .await
            .map_err(|e| anyhow::anyhow!("failing {}: {}", job.video_id, e.message))?;
    if failed {
        tracing::warn!(video_id = %job.video_id, status, execution, "the execution ended while the job was running; failed it");
    }
    Ok(failed)
}

/// The `detail` of a "Step Functions Execution Status Change" event: the fields the reconciler
/// reads (`aws_lambda_events` types the envelope; Step Functions' detail is ours to name).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionStatusChange {
    pub status: String,
    #[serde(default)]
    pub execution_arn: Option<String>,
    /// The execution's input, a JSON string: `{"org", "video_id"}` as `start_job` wrote it.
    #[serde(default)]
    pub input: Option<String>,
}

#[derive(serde::Deserialize)]
struct ExecutionInput {
    org: String,
    video_id: String,
}

/// How old an admitted job whose workflow never started must be before the scheduled recovery
/// pass fails it (a start takes well under a second; the API function's timeout is far below).
pub const RECOVERY_GRACE: std::time::Duration = std::time::Duration::from_secs(300);

/// The scheduled recovery pass (an EventBridge schedule on the reconciler): fails every job
/// admitted more than [`RECOVERY_GRACE`] ago whose execution was never started (the API function
/// died or timed out between admission and `StartExecution`) as `moderation_unavailable`,
/// releasing its reservation, and emits the webhook events of jobs that ended without their
/// event being queued. Returns how many jobs it failed.
pub async fn handle_recovery(app: &App, grace: std::time::Duration) -> anyhow::Result<usize> {
    let workflow = app
        .workflow()
        .ok_or_else(|| anyhow::anyhow!("REELGATE_STATE_MACHINE_ARN is not set"))?;
    let failed =
        reelgate::domain::videos::jobs::recover_unstarted(app.context(), workflow.as_ref(), grace)
            .await
            .map_err(|e| anyhow::anyhow!("recovering unstarted jobs: {}", e.message))?;
    reelgate::domain::videos::events::recover_unsent(app.context(), grace)
        .await
        .map_err(|e| anyhow::anyhow!("recovering unsent webhook events: {}", e.message))?;
    Ok(failed)
}

/// The PDF renderer function (`reelgate_aws::pdf_lambda`): renders one document per
/// invocation, within this function's memory size and timeout. It needs only the bucket: no
/// item store, no secrets, no App.
pub async fn run_pdf_rasterizer(function: &functions::LambdaFunction) -> Result<(), Error> {
    let config = match Config::from_env() {
        Ok(config) => config,
        Err(e) => {
            let _ = init_tracing(None);
            tracing::error!(
                function = function.binary,
                error = format!("{e:#}"),
                "cannot start"
            );
            std::process::exit(1);
        }
    };
    let _ = init_tracing(None);
    let aws = reelgate_aws::AwsSettings::from_config(&config).map_err(Error::from)?;
    let sdk_config = reelgate_aws::sdk_config(&aws.region, aws.endpoint_url.as_deref()).await;
    let blobs =
        reelgate_aws::S3BlobStore::new(&sdk_config, &aws.bucket, aws.endpoint_url.is_some());
    let blobs = &blobs;
    lambda_runtime::run(lambda_runtime::service_fn(
        move |event: LambdaEvent<reelgate_aws::pdf_lambda::PdfJob>| async move {
            reelgate_aws::pdf_lambda::serve_job(blobs, &event.payload)
                .await
                .map_err(|e| Error::from(format!("{e:#}")))
        },
    ))
    .await
}

/// The EventBridge-triggered reconciler: ended executions ("Step Functions Execution Status
/// Change") and, on its schedule ("Scheduled Event"), the recovery pass of jobs whose execution
/// never started. An error makes EventBridge retry the event (its default retry policy), so a
/// store outage does not leave the job running.
pub async fn run_execution_ended() -> Result<(), Error> {
    let (app, _) = app_or_exit(&functions::EXECUTION_ENDED).await;
    let app = &app;
    lambda_runtime::run(lambda_runtime::service_fn(
        move |event: LambdaEvent<Value>| async move {
            let outcome = reconcile(app, event.payload).await;
            flush_traces().await;
            outcome
        },
    ))
    .await
}

/// One reconciler event: the scheduled recovery pass or an ended execution.
async fn reconcile(app: &App, payload: Value) -> Result<Value, Error> {
    if payload["detail-type"] == "Scheduled Event" {
        let failed = handle_recovery(app, RECOVERY_GRACE)
            .await
            .map_err(|e| Error::from(format!("{e:#}")))?;
        return Ok(json!({ "recovered_jobs": failed }));
    }
    let ended: EventBridgeEvent<ExecutionStatusChange> = serde_json::from_value(payload)
        .map_err(|e| Error::from(format!("not an execution status change: {e}")))?;
    let failed = handle_execution_ended(app, &ended)
        .await
        .map_err(|e| Error::from(format!("{e:#}")))?;
    Ok(json!({ "failed_job": failed }))
}
