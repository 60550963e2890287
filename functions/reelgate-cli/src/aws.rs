//! The AWS backend for the admin command: the deployed DynamoDB table, through the same adapter
//! the Lambda functions use (`reelgate_aws::DynamoItemStore`), so an organization or key created
//! here is exactly what the service reads.
//!
//! `REELGATE_TABLE` names the table (the stack's `TableName` output). The region comes from
//! `AWS_REGION` (or `AWS_DEFAULT_REGION`), credentials from the SDK's default chain (environment,
//! profile, SSO, instance role), and `AWS_ENDPOINT_URL` points it at an emulator instead.

use anyhow::Context;
use reelgate::config::Config;
use reelgate::ports::store::ItemStore;
use std::sync::Arc;

/// The AWS SDK's own variables (region, endpoint), which are not reelgate's to type.
fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

pub async fn open_store(config: &Config) -> anyhow::Result<Arc<dyn ItemStore>> {
    let table = config.aws.table.clone().context(
        "REELGATE_TABLE is not set: give it the stack's TableName output (see docs/deploy.md)",
    )?;
    let region = env("AWS_REGION")
        .or_else(|| env("AWS_DEFAULT_REGION"))
        .context("AWS_REGION is not set: give it the stack's region")?;
    let endpoint = env("AWS_ENDPOINT_URL");
    let config = reelgate_aws::sdk_config(&region, endpoint.as_deref()).await;
    // Fail here, with the table's name, rather than on the first write with a generic error.
    check_table(&config, &table).await?;
    Ok(Arc::new(reelgate_aws::DynamoItemStore::new(
        &config, &table,
    )))
}

/// The deployed bucket (`REELGATE_BUCKET`, the stack's `BucketName` output), for the commands
/// that touch stored bytes (`org show`, `org delete`, `user remove`).
pub async fn open_blobs(
    config: &Config,
) -> anyhow::Result<Arc<dyn reelgate::ports::blobs::BlobStore>> {
    let bucket = config.aws.bucket.clone().context(
        "REELGATE_BUCKET is not set: give it the stack's BucketName output (see docs/deploy.md)",
    )?;
    let region = env("AWS_REGION")
        .or_else(|| env("AWS_DEFAULT_REGION"))
        .context("AWS_REGION is not set: give it the stack's region")?;
    let endpoint = env("AWS_ENDPOINT_URL");
    let sdk = reelgate_aws::sdk_config(&region, endpoint.as_deref()).await;
    Ok(Arc::new(reelgate_aws::S3BlobStore::new(
        &sdk,
        &bucket,
        endpoint.is_some(),
    )))
}

/// Reads one item that cannot exist, which proves the table, region and credentials work.
async fn check_table(config: &aws_config::SdkConfig, table: &str) -> anyhow::Result<()> {
    let store = reelgate_aws::DynamoItemStore::new(config, table);
    store
        .get(&reelgate::domain::table_keys::probe())
        .await
        .map(|_| ())
        .with_context(|| {
            format!("cannot read the DynamoDB table {table} in this region with these credentials")
        })
}
