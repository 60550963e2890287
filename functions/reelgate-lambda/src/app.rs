//! Start-up, shared by every function: logs and traces, the secrets, and the [`App`] over the
//! AWS adapters, built once per cold start.

use anyhow::Context;
use reelgate::app::{App, Host, Ports};
use reelgate::config::{Config, Settings};
use serde_json::Value;

use crate::{functions, ports};

/// Logs as JSON lines (CloudWatch parses them) at `REELGATE_LOG` (default `info`); with
/// `traces` (an OTLP endpoint configured), spans are also exported, flushed by [`flush_traces`]
/// before each invocation returns.
pub fn init_tracing(traces: Option<&reelgate::config::TraceExport>) -> anyhow::Result<()> {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    use tracing_subscriber::Layer as _;
    let filter = log_filter(std::env::var("REELGATE_LOG").ok().as_deref());
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

/// The log filter of a function: `REELGATE_LOG` as `target=level` directives separated by commas,
/// a bare level for every other target (`debug,hyper=warn`); without it, or when it does not
/// parse, `info` with the HTTP and AWS clients at `warn`. A `Targets` filter, not an
/// `EnvFilter`: span and field directives are not taken, and in exchange no function links the
/// regular-expression engine those need (docs/cost.md, "Artifact sizes").
fn log_filter(directives: Option<&str>) -> tracing_subscriber::filter::Targets {
    const DEFAULT: &str = "info,hyper=warn,aws_smithy_runtime=warn";
    directives
        .and_then(|d| match d.parse() {
            Ok(filter) => Some(filter),
            Err(e) => {
                eprintln!("REELGATE_LOG {d:?} is not a list of target=level directives ({e}); logging at {DEFAULT}");
                None
            }
        })
        .unwrap_or_else(|| DEFAULT.parse().expect("the default log filter parses"))
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
        blobs: match (adapters.blobs, adapters.blob_urls) {
            (Some(s3), _) => s3(&sdk_config, &aws),
            (None, Some(urls)) => urls(&sdk_config, &aws, name),
            (None, None) => Arc::new(absent(Port::Blobs)),
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
    // Without the port no upstream adapter is linked: each kind fails loudly instead.
    let connector = match adapters.chat {
        Some(every_kind) => every_kind(),
        None => ["openai", "anthropic", "bedrock"].into_iter().fold(
            reelgate::adapters::CatalogConnector::new(),
            |connector, kind| connector.with_kind(kind, Arc::new(absent(Port::Chat))),
        ),
    };
    let engines_sdk_config = sdk_config.clone();
    let host = Host {
        fallback_url: Settings::default().public_base_url,
        defaults: reelgate::config::HostDefaults::LAMBDA,
        in_process_engine_url: None,
        in_process_engine_key: None,
        connector,
        catalog_engines: adapters.catalog_engines,
        moderator: adapters.moderator,
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
        app.webhooks = Some(queue(url));
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

/// The assembled application, or the process exits with the reason logged.
pub(crate) async fn app_or_exit(entry: &functions::LambdaFunction) -> (App, Config) {
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

#[cfg(test)]
mod tests {
    use super::log_filter;
    use tracing::Level;

    #[test]
    fn the_log_filter_reads_target_directives_and_falls_back_to_its_default() {
        let set = log_filter(Some("debug,hyper=warn"));
        assert!(set.would_enable("reelgate::api", &Level::DEBUG));
        assert!(!set.would_enable("hyper::proto", &Level::INFO));
        assert!(set.would_enable("hyper::proto", &Level::WARN));
        for fallback in [None, Some("[span{field=1}]=debug"), Some("loud=shouting")] {
            let f = log_filter(fallback);
            assert!(
                f.would_enable("reelgate::api", &Level::INFO),
                "{fallback:?}"
            );
            assert!(
                !f.would_enable("reelgate::api", &Level::DEBUG),
                "{fallback:?}"
            );
            assert!(
                !f.would_enable("aws_smithy_runtime::client", &Level::INFO),
                "{fallback:?}"
            );
        }
    }
}
