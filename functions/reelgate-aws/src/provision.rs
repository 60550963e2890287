//! Creates the resources the adapters use, idempotently: for the emulator tests and for local
//! experiments. In production the CloudFormation template (`infra/template.yaml`) creates and
//! owns them (with the same shapes); services never call this at run time.

use crate::errors::{describe, service_code};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType, TableStatus,
    TimeToLiveSpecification, TimeToLiveStatus,
};
use aws_sdk_s3::types::{
    AbortIncompleteMultipartUpload, BucketLifecycleConfiguration, BucketLocationConstraint,
    CreateBucketConfiguration, ExpirationStatus, LifecycleRule, LifecycleRuleFilter,
};
use aws_sdk_sqs::types::QueueAttributeName;
use reelgate::ports::store::{EXPIRES_AT, PK, SK};
use std::collections::HashMap;
use std::time::Duration;

/// Why a resource could not be created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProvisionError(pub String);

impl std::fmt::Display for ProvisionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ProvisionError {}

fn fail(what: &str, detail: impl std::fmt::Display) -> ProvisionError {
    ProvisionError(format!("{what}: {detail}"))
}

/// The render queue and its dead-letter queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Queues {
    pub url: String,
    pub dead_letter_url: String,
}

/// Creates the single table (`pk` HASH, `sk` RANGE, on-demand billing, TTL on `expires_at`)
/// unless it exists, and waits until it is active.
pub async fn table(config: &aws_config::SdkConfig, name: &str) -> Result<(), ProvisionError> {
    let client = aws_sdk_dynamodb::Client::new(config);
    let attr = |n: &str| {
        AttributeDefinition::builder()
            .attribute_name(n)
            .attribute_type(ScalarAttributeType::S)
            .build()
            .map_err(|e| fail("table attribute", e))
    };
    let key = |n: &str, t: KeyType| {
        KeySchemaElement::builder()
            .attribute_name(n)
            .key_type(t)
            .build()
            .map_err(|e| fail("table key", e))
    };
    let created = client
        .create_table()
        .table_name(name)
        .attribute_definitions(attr(PK)?)
        .attribute_definitions(attr(SK)?)
        .key_schema(key(PK, KeyType::Hash)?)
        .key_schema(key(SK, KeyType::Range)?)
        .billing_mode(BillingMode::PayPerRequest)
        .send()
        .await;
    match created {
        Ok(_) => {}
        Err(e) if service_code(&e) == Some("ResourceInUseException") => {}
        Err(e) => return Err(fail(&format!("create table {name}"), describe(&e))),
    }
    let mut active = false;
    for _ in 0..120 {
        let described = client
            .describe_table()
            .table_name(name)
            .send()
            .await
            .map_err(|e| fail(&format!("describe table {name}"), describe(&e)))?;
        if described.table().and_then(|t| t.table_status()) == Some(&TableStatus::Active) {
            active = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    if !active {
        return Err(fail(
            &format!("table {name}"),
            "did not become ACTIVE in 60 s",
        ));
    }
    let ttl = client
        .describe_time_to_live()
        .table_name(name)
        .send()
        .await
        .map_err(|e| fail(&format!("describe TTL of {name}"), describe(&e)))?;
    let enabled = ttl.time_to_live_description().is_some_and(|d| {
        matches!(
            d.time_to_live_status(),
            Some(TimeToLiveStatus::Enabled | TimeToLiveStatus::Enabling)
        )
    });
    if !enabled {
        let spec = TimeToLiveSpecification::builder()
            .attribute_name(EXPIRES_AT)
            .enabled(true)
            .build()
            .map_err(|e| fail("TTL specification", e))?;
        client
            .update_time_to_live()
            .table_name(name)
            .time_to_live_specification(spec)
            .send()
            .await
            .map_err(|e| fail(&format!("enable TTL on {name}"), describe(&e)))?;
    }
    Ok(())
}

/// Creates the bucket unless it exists, with a rule that clears abandoned multipart uploads.
/// `path_style` as for [`crate::S3BlobStore::new`].
pub async fn bucket(
    config: &aws_config::SdkConfig,
    name: &str,
    path_style: bool,
) -> Result<(), ProvisionError> {
    let s3_config = aws_sdk_s3::config::Builder::from(config)
        .force_path_style(path_style)
        .build();
    let client = aws_sdk_s3::Client::from_conf(s3_config);
    let region = config.region().map(|r| r.as_ref().to_owned());
    let mut request = client.create_bucket().bucket(name);
    // us-east-1 is the one region that refuses an explicit location constraint.
    if let Some(region) = region.filter(|r| r != "us-east-1") {
        request = request.create_bucket_configuration(
            CreateBucketConfiguration::builder()
                .location_constraint(BucketLocationConstraint::from(region.as_str()))
                .build(),
        );
    }
    match request.send().await {
        Ok(_) => {}
        Err(e) if service_code(&e) == Some("BucketAlreadyOwnedByYou") => {}
        Err(e) => return Err(fail(&format!("create bucket {name}"), describe(&e))),
    }
    let rule = LifecycleRule::builder()
        .id("abort-incomplete-multipart-uploads")
        .status(ExpirationStatus::Enabled)
        .filter(LifecycleRuleFilter::builder().prefix("").build())
        .abort_incomplete_multipart_upload(
            AbortIncompleteMultipartUpload::builder()
                .days_after_initiation(1)
                .build(),
        )
        .build()
        .map_err(|e| fail("lifecycle rule", e))?;
    let lifecycle = BucketLifecycleConfiguration::builder()
        .rules(rule)
        .build()
        .map_err(|e| fail("lifecycle configuration", e))?;
    client
        .put_bucket_lifecycle_configuration()
        .bucket(name)
        .lifecycle_configuration(lifecycle)
        .send()
        .await
        .map_err(|e| fail(&format!("lifecycle of bucket {name}"), describe(&e)))?;
    Ok(())
}

/// Creates the queue `name` and its dead-letter queue `name-dlq` (unless they exist), with a
/// `RedrivePolicy` that moves a message there after `max_receive_count` receives. An existing
/// queue gets these attributes set.
pub async fn queue(
    config: &aws_config::SdkConfig,
    name: &str,
    max_receive_count: u32,
) -> Result<Queues, ProvisionError> {
    let client = aws_sdk_sqs::Client::new(config);
    let dlq_name = format!("{name}-dlq");
    // Dead letters are kept for the longest SQS allows: 14 days.
    let dead_letter_url = ensure_queue(
        &client,
        &dlq_name,
        HashMap::from([(
            QueueAttributeName::MessageRetentionPeriod,
            "1209600".to_owned(),
        )]),
    )
    .await?;
    let attrs = client
        .get_queue_attributes()
        .queue_url(&dead_letter_url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .map_err(|e| fail(&format!("ARN of queue {dlq_name}"), describe(&e)))?;
    let dlq_arn = attrs
        .attributes()
        .and_then(|a| a.get(&QueueAttributeName::QueueArn))
        .ok_or_else(|| fail(&format!("ARN of queue {dlq_name}"), "not returned"))?;
    let policy = serde_json::json!({
        "deadLetterTargetArn": dlq_arn,
        "maxReceiveCount": max_receive_count.to_string(),
    });
    let url = ensure_queue(
        &client,
        name,
        HashMap::from([(QueueAttributeName::RedrivePolicy, policy.to_string())]),
    )
    .await?;
    Ok(Queues {
        url,
        dead_letter_url,
    })
}

/// Creates a queue with `attributes`, or sets them on the queue of that name.
async fn ensure_queue(
    client: &aws_sdk_sqs::Client,
    name: &str,
    attributes: HashMap<QueueAttributeName, String>,
) -> Result<String, ProvisionError> {
    let created = client
        .create_queue()
        .queue_name(name)
        .set_attributes(Some(attributes.clone()))
        .send()
        .await;
    match created {
        Ok(out) => out
            .queue_url()
            .map(str::to_owned)
            .ok_or_else(|| fail(&format!("create queue {name}"), "no URL returned")),
        // It exists with other attributes (CreateQueue is idempotent only for equal ones).
        Err(e)
            if service_code(&e).is_some_and(|c| {
                c.contains("QueueAlreadyExists") || c.contains("QueueNameExists")
            }) =>
        {
            let url = client
                .get_queue_url()
                .queue_name(name)
                .send()
                .await
                .map_err(|e| fail(&format!("URL of queue {name}"), describe(&e)))?
                .queue_url()
                .map(str::to_owned)
                .ok_or_else(|| fail(&format!("URL of queue {name}"), "not returned"))?;
            client
                .set_queue_attributes()
                .queue_url(&url)
                .set_attributes(Some(attributes))
                .send()
                .await
                .map_err(|e| fail(&format!("attributes of queue {name}"), describe(&e)))?;
            Ok(url)
        }
        Err(e) => Err(fail(&format!("create queue {name}"), describe(&e))),
    }
}
