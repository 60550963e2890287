//! Shared set-up of the emulator tests: SDK configuration, the shared table and bucket, fresh
//! queues.
#![allow(dead_code)]

use aws_config::{Region, SdkConfig};
use aws_sdk_dynamodb::config::Credentials;
use std::sync::Arc;
use tokio::sync::OnceCell;

/// The emulator's SDK configuration, or None when the tests are to be skipped.
///
/// Each test has its own runtime, so each builds its own clients (a client's pooled
/// connections belong to the runtime that opened them).
pub async fn config() -> Option<SdkConfig> {
    let endpoint = std::env::var("AWS_ENDPOINT_URL")
        .ok()
        .filter(|v| !v.trim().is_empty());
    let Some(endpoint) = endpoint else {
        if std::env::var("REELGATE_SKIP_AWS_TESTS").as_deref() == Ok("1") {
            eprintln!("skipped: AWS_ENDPOINT_URL is unset and REELGATE_SKIP_AWS_TESTS=1");
            return None;
        }
        panic!(
            "AWS_ENDPOINT_URL is not set: these tests run against a local AWS emulator. \
             Run `scripts/aws-emulator.sh start` and `eval \"$(scripts/aws-emulator.sh env)\"` \
             first (or set REELGATE_SKIP_AWS_TESTS=1 to skip them)."
        );
    };
    let region = std::env::var("AWS_REGION").unwrap_or_else(|_| "us-east-1".to_owned());
    let mut loader = reelgate_aws::sdk_loader()
        .region(Region::new(region))
        .endpoint_url(endpoint);
    if std::env::var_os("AWS_ACCESS_KEY_ID").is_none() {
        // The emulator takes any credentials; don't let the default chain probe for some.
        loader = loader.credentials_provider(Credentials::new(
            "test",
            "test",
            None,
            None,
            "reelgate-aws-tests",
        ));
    }
    Some(loader.load().await)
}

fn name_from_env(var: &str, default: &str) -> String {
    std::env::var(var)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| default.to_owned())
}

pub fn table_name() -> String {
    name_from_env("REELGATE_TEST_TABLE", "reelgate-contract-items")
}

pub fn bucket_name() -> String {
    name_from_env("REELGATE_TEST_BUCKET", "reelgate-contract-blobs")
}

static TABLE: OnceCell<Result<(), String>> = OnceCell::const_new();
static BUCKET: OnceCell<Result<(), String>> = OnceCell::const_new();

/// The shared test table (created on first use) and the adapter over it.
pub async fn dynamo_adapter() -> Option<(SdkConfig, reelgate_aws::DynamoItemStore)> {
    let config = config().await?;
    let table = table_name();
    let ready = TABLE
        .get_or_init(|| async {
            reelgate_aws::provision::table(&config, &table)
                .await
                .map_err(|e| e.to_string())
        })
        .await;
    if let Err(e) = ready {
        panic!("could not create the test table {table}: {e}");
    }
    let store = reelgate_aws::DynamoItemStore::new(&config, &table);
    Some((config, store))
}

pub async fn dynamo() -> Option<Arc<dyn reelgate::ports::store::ItemStore>> {
    let (_, store) = dynamo_adapter().await?;
    Some(Arc::new(store))
}

/// The shared test bucket (created on first use) and the adapter over it.
pub async fn s3_adapter() -> Option<(SdkConfig, reelgate_aws::S3BlobStore)> {
    let config = config().await?;
    let bucket = bucket_name();
    let ready = BUCKET
        .get_or_init(|| async {
            reelgate_aws::provision::bucket(&config, &bucket, true)
                .await
                .map_err(|e| e.to_string())
        })
        .await;
    if let Err(e) = ready {
        panic!("could not create the test bucket {bucket}: {e}");
    }
    let store = reelgate_aws::S3BlobStore::new(&config, &bucket, true);
    Some((config, store))
}

pub async fn s3() -> Option<Arc<dyn reelgate::ports::blobs::BlobStore>> {
    let (_, store) = s3_adapter().await?;
    Some(Arc::new(store))
}

/// A fresh queue with a dead-letter queue after `max_receives` receives, so that concurrent
/// cases never see each other's messages.
pub async fn sqs_adapter(
    max_receives: u32,
) -> Option<(
    SdkConfig,
    reelgate_aws::SqsQueue,
    reelgate_aws::provision::Queues,
)> {
    let config = config().await?;
    let name = format!("contract-{}", reelgate::domain::ids::new_id("q"));
    let queues = match reelgate_aws::provision::queue(&config, &name, max_receives).await {
        Ok(q) => q,
        Err(e) => panic!("could not create the test queue {name}: {e}"),
    };
    let queue = reelgate_aws::SqsQueue::new(&config, &queues.url);
    Some((config, queue, queues))
}

/// The contract's queue: dead-lettering after 2 receives.
pub async fn sqs() -> Option<Arc<dyn reelgate::ports::queue::MessageQueue>> {
    let (_, queue, _) = sqs_adapter(2).await?;
    Some(Arc::new(queue))
}
