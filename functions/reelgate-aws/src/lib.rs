//! reelgate's AWS adapters: the ports of the `reelgate` crate on DynamoDB ([`DynamoItemStore`]),
//! S3 ([`S3BlobStore`]), SQS ([`SqsQueue`]) and Step Functions ([`StepFunctionsWorkflow`]).
//!
//! [`AwsSettings::from_config`] reads the deployment's configuration, and [`connect`] builds every
//! adapter over one shared SDK configuration. With `AWS_ENDPOINT_URL` set, every client talks to
//! that endpoint (a local emulator: see `scripts/aws-emulator.sh`), and S3 uses path-style
//! addressing. [`provision`] creates the resources for tests and local experiments; in production
//! the CloudFormation template creates them.

pub mod bedrock_chat;
pub mod bedrock_video;
pub mod dynamodb;
mod errors;
pub mod pdf_lambda;
pub mod provision;
pub mod s3;
pub mod s3_presign;
mod sdk_http;
pub mod sfn;
pub mod sqs;

pub use dynamodb::DynamoItemStore;
pub use s3::S3BlobStore;
pub use s3_presign::S3Presigner;
pub use sfn::StepFunctionsWorkflow;
pub use sqs::SqsQueue;

use aws_config::{BehaviorVersion, Region};
use reelgate::ports::blobs::BlobStore;
use reelgate::ports::queue::MessageQueue;
use reelgate::ports::store::ItemStore;
use reelgate::ports::workflow::Workflow;
use std::sync::Arc;

/// Where the adapters find their resources.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AwsSettings {
    pub region: String,
    /// Sends every request here instead of the regional AWS endpoints (an emulator).
    pub endpoint_url: Option<String>,
    pub table: String,
    pub bucket: String,
    pub queue_url: String,
    pub state_machine_arn: Option<String>,
}

impl AwsSettings {
    /// The resources of the typed configuration (`REELGATE_TABLE`, `REELGATE_BUCKET`,
    /// `REELGATE_RENDER_QUEUE_URL`, `REELGATE_STATE_MACHINE_ARN`) with `AWS_REGION` (default
    /// `us-east-1`) and `AWS_ENDPOINT_URL` (optional), which belong to the AWS SDK's own
    /// configuration and are read from the environment.
    pub fn from_config(config: &reelgate::config::Config) -> Result<Self, String> {
        let aws = &config.aws;
        Self::from_lookup(|name| match name {
            "REELGATE_TABLE" => aws.table.clone(),
            "REELGATE_BUCKET" => aws.bucket.clone(),
            "REELGATE_RENDER_QUEUE_URL" => aws.render_queue_url.clone(),
            "REELGATE_STATE_MACHINE_ARN" => aws.state_machine_arn.clone(),
            other => std::env::var(other).ok(),
        })
    }

    /// As [`AwsSettings::from_config`], reading variables through `lookup` (empty counts as unset).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let mut missing = Vec::new();
        let mut required = |name: &'static str, what: &str| {
            get(name).unwrap_or_else(|| {
                missing.push(format!("{name} ({what})"));
                String::new()
            })
        };
        let table = required("REELGATE_TABLE", "the DynamoDB table name");
        let bucket = required("REELGATE_BUCKET", "the S3 bucket name");
        let queue_url = required("REELGATE_RENDER_QUEUE_URL", "the SQS render queue URL");
        if !missing.is_empty() {
            return Err(format!(
                "missing environment variable(s): {}",
                missing.join(", ")
            ));
        }
        Ok(AwsSettings {
            region: get("AWS_REGION").unwrap_or_else(|| "us-east-1".to_owned()),
            endpoint_url: get("AWS_ENDPOINT_URL"),
            table,
            bucket,
            queue_url,
            state_machine_arn: get("REELGATE_STATE_MACHINE_ARN"),
        })
    }
}

/// Every port on AWS.
#[derive(Clone)]
pub struct AwsBackend {
    pub store: Arc<dyn ItemStore>,
    pub blobs: Arc<dyn BlobStore>,
    pub queue: Arc<dyn MessageQueue>,
    /// Present when a state machine ARN is configured.
    pub workflow: Option<Arc<dyn Workflow>>,
    pub sdk_config: aws_config::SdkConfig,
}

/// Loads the SDK configuration for `region` (credentials from the default chain), pointed at
/// `endpoint_url` when one is given.
/// The connector of catalog upstreams every host that links this crate uses: `openai` and
/// `anthropic` from the core crate and `bedrock` (Converse) from here.
pub fn upstream_connector() -> reelgate::adapters::CatalogConnector {
    reelgate::adapters::CatalogConnector::new()
        .with_http_kinds()
        .with_kind("bedrock", Arc::new(bedrock_chat::BedrockConnector))
}

pub async fn sdk_config(region: &str, endpoint_url: Option<&str>) -> aws_config::SdkConfig {
    let mut loader = sdk_loader().region(Region::new(region.to_owned()));
    if let Some(url) = endpoint_url {
        loader = loader.endpoint_url(url);
    }
    loader.load().await
}

/// The loader of every SDK configuration in reelgate: the SDK's defaults with
/// [`sdk_http::sdk_http_client`]. The SDK crates are built without a default HTTPS client, so a
/// configuration loaded any other way fails its first request ("no HTTP client").
pub fn sdk_loader() -> aws_config::ConfigLoader {
    aws_config::defaults(BehaviorVersion::latest()).http_client(sdk_http::sdk_http_client())
}

/// Builds every adapter. Makes no request: a wrong name or missing permission shows on first use.
pub async fn connect(settings: AwsSettings) -> AwsBackend {
    let config = sdk_config(&settings.region, settings.endpoint_url.as_deref()).await;
    let path_style = settings.endpoint_url.is_some();
    let workflow = settings
        .state_machine_arn
        .as_ref()
        .map(|arn| Arc::new(StepFunctionsWorkflow::new(&config, arn)) as Arc<dyn Workflow>);
    AwsBackend {
        store: Arc::new(DynamoItemStore::new(&config, &settings.table)),
        blobs: Arc::new(S3BlobStore::new(&config, &settings.bucket, path_style)),
        queue: Arc::new(SqsQueue::new(&config, &settings.queue_url)),
        workflow,
        sdk_config: config,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_name_every_missing_variable() {
        let err = AwsSettings::from_lookup(|_| None).expect_err("nothing set");
        assert!(err.contains("REELGATE_TABLE"), "{err}");
        assert!(err.contains("REELGATE_BUCKET"), "{err}");
        assert!(err.contains("REELGATE_RENDER_QUEUE_URL"), "{err}");
    }

    #[test]
    fn settings_default_the_region() {
        let settings = AwsSettings::from_lookup(|name| match name {
            "REELGATE_TABLE" => Some("t".into()),
            "REELGATE_BUCKET" => Some("b".into()),
            "REELGATE_RENDER_QUEUE_URL" => Some("http://q".into()),
            "AWS_ENDPOINT_URL" => Some(String::new()),
            _ => None,
        })
        .expect("settings");
        assert_eq!(settings.region, "us-east-1");
        assert_eq!(settings.endpoint_url, None);
        assert_eq!(settings.state_machine_arn, None);
    }
}
