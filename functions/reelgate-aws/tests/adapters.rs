//! What the AWS adapters do beyond the shared port contracts, on the local emulator: expired
//! items that TTL has not deleted yet, multipart uploads, stale receipts, Step Functions task
//! tokens and StopExecution, provisioning twice, and `connect`. Run as `tests/contract.rs` says.

mod support;

use bytes::Bytes;
use futures::StreamExt;
use reelgate::ports::blobs::{read_all, BlobError, BlobStore, ByteRange, ByteStream};
use reelgate::ports::queue::{MessageQueue, QueueError};
use reelgate::ports::store::{
    item, now_secs, Attr, Condition, ItemExt, ItemStore, Key, Query, StoreError, TransactOp,
    Update, EXPIRES_AT,
};
use reelgate::ports::workflow::{Workflow, WorkflowError};
use reelgate_aws::{provision, AwsBackend, AwsSettings, StepFunctionsWorkflow};
use rust_decimal::Decimal;
use std::time::Duration;

macro_rules! or_skip {
    ($make:expr) => {
        match $make {
            Some(adapter) => adapter,
            None => return,
        }
    };
}

fn fresh_pk() -> String {
    format!("adapter#{}", reelgate::domain::ids::new_id("t"))
}

/// An item that expired a minute ago: DynamoDB keeps it until TTL gets to it.
fn expired(key: &Key) -> reelgate::ports::store::Item {
    let mut it = item(key);
    it.insert(EXPIRES_AT.into(), (now_secs() - 60).into());
    it.insert("stale".into(), "left over".into());
    it.insert("count".into(), 41i64.into());
    it
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_items_count_as_absent_for_writes() {
    let (_, store) = or_skip!(support::dynamo_adapter().await);
    let pk = fresh_pk();

    let k = Key::new(&pk, "PUT");
    store.put(expired(&k), None).await.expect("seed");
    let fresh = item(&k);
    store
        .put(fresh.clone(), Some(Condition::NotExists))
        .await
        .expect("create over an expired item");
    assert_eq!(store.get(&k).await.expect("get"), Some(fresh));

    let k = Key::new(&pk, "UPDATE");
    store.put(expired(&k), None).await.expect("seed");
    let refused = store
        .update(&k, Update::new().set("x", 1i64), Some(Condition::Exists))
        .await;
    assert!(
        matches!(refused, Err(StoreError::ConditionFailed)),
        "{refused:?}"
    );
    let updated = store
        .update(
            &k,
            Update::new().add("count", Decimal::ONE),
            Some(Condition::NotExists),
        )
        .await
        .expect("update starts from an absent item");
    assert_eq!(updated.decimal_attr("count"), Some(Decimal::ONE));
    assert!(!updated.contains_key("stale"), "{updated:?}");
    assert!(!updated.contains_key(EXPIRES_AT), "{updated:?}");

    let k = Key::new(&pk, "UNCONDITIONAL");
    store.put(expired(&k), None).await.expect("seed");
    let updated = store
        .update(&k, Update::new().add("count", Decimal::ONE), None)
        .await
        .expect("unconditional update");
    assert_eq!(updated.decimal_attr("count"), Some(Decimal::ONE));

    let k = Key::new(&pk, "DELETE");
    store.put(expired(&k), None).await.expect("seed");
    let refused = store.delete(&k, Some(Condition::Exists)).await;
    assert!(matches!(refused, Err(StoreError::ConditionFailed)));
    assert_eq!(store.delete(&k, None).await.expect("delete"), None);

    let k = Key::new(&pk, "TRANSACT");
    let check = Key::new(&pk, "CHECK");
    store.put(expired(&k), None).await.expect("seed");
    store.put(expired(&check), None).await.expect("seed");
    let cancelled = store
        .transact(vec![
            TransactOp::Put {
                item: item(&k),
                condition: Some(Condition::NotExists),
            },
            TransactOp::ConditionCheck {
                key: check.clone(),
                condition: Condition::Exists,
            },
        ])
        .await;
    match cancelled {
        Err(e) => assert!(!e.failed_at(0) && e.failed_at(1), "{e:?}"),
        Ok(()) => panic!("an expired item must not pass `Exists`"),
    }
    store
        .transact(vec![
            TransactOp::Put {
                item: item(&k),
                condition: Some(Condition::NotExists),
            },
            TransactOp::ConditionCheck {
                key: check,
                condition: Condition::NotExists,
            },
        ])
        .await
        .expect("expired items are absent inside transactions");
    assert_eq!(store.get(&k).await.expect("get"), Some(item(&k)));

    let k = Key::new(&pk, "TRANSACT-UPDATE");
    store.put(expired(&k), None).await.expect("seed");
    store
        .transact(vec![TransactOp::Update {
            key: k.clone(),
            update: Update::new().add("count", Decimal::ONE),
            condition: Some(Condition::NotExists),
        }])
        .await
        .expect("a transactional update starts from an absent item");
    let updated = store.get(&k).await.expect("get").expect("present");
    assert_eq!(updated.decimal_attr("count"), Some(Decimal::ONE));
    assert!(!updated.contains_key("stale"), "{updated:?}");
    let refused = store
        .transact(vec![TransactOp::Update {
            key: k.clone(),
            update: Update::new().add("count", Decimal::ONE),
            condition: Some(Condition::NotExists),
        }])
        .await;
    assert!(refused.is_err_and(|e| e.failed_at(0)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paging_skips_expired_items_and_ends_exactly() {
    let (_, store) = or_skip!(support::dynamo_adapter().await);
    let pk = fresh_pk();
    for i in 0..9 {
        let k = Key::new(&pk, format!("FILE#{i:02}"));
        // Every other item has expired; five stay.
        let it = if i % 2 == 1 { expired(&k) } else { item(&k) };
        store.put(it, None).await.expect("seed");
    }
    let mut seen = Vec::new();
    let mut after = None;
    let mut pages = 0;
    loop {
        let page = store
            .query(Query::partition(&pk).prefix("FILE#").limit(2).after(after))
            .await
            .expect("query");
        pages += 1;
        assert!(page.items.len() <= 2);
        seen.extend(page.items.iter().filter_map(|i| i.key()).map(|k| k.sk));
        match page.last_sk {
            Some(sk) => after = Some(sk),
            None => break,
        }
    }
    assert_eq!(
        seen,
        ["FILE#00", "FILE#02", "FILE#04", "FILE#06", "FILE#08"]
    );
    assert_eq!(pages, 3);
    let exact = store
        .query(Query::partition(&pk).prefix("FILE#").descending().limit(5))
        .await
        .expect("exact");
    assert_eq!(exact.items.len(), 5);
    assert_eq!(exact.last_sk, None, "no further live item");
    let before = store
        .query(
            Query::partition(&pk)
                .prefix("FILE#")
                .after(Some("A".into())),
        )
        .await
        .expect("cursor before the prefix");
    assert_eq!(before.items.len(), 5);
    let past = store
        .query(
            Query::partition(&pk)
                .prefix("FILE#")
                .after(Some("Z".into())),
        )
        .await
        .expect("cursor past the prefix");
    assert!(past.items.is_empty());
    let refused = store.query(Query::partition(&pk).limit(0)).await;
    assert!(matches!(refused, Err(StoreError::Invalid(_))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn numbers_and_refused_updates() {
    let (_, store) = or_skip!(support::dynamo_adapter().await);
    let k = Key::new(fresh_pk(), "ORG");
    let amount: Decimal = "1234567890123456789.123456789".parse().expect("decimal");
    let mut it = item(&k);
    it.insert("balance".into(), Attr::N(amount));
    it.insert("negative".into(), Attr::N(Decimal::new(-5, 3)));
    store.put(it.clone(), None).await.expect("put");
    assert_eq!(store.get(&k).await.expect("get"), Some(it));
    let overlapping = Update::new()
        .set("balance", Attr::N(Decimal::ONE))
        .add("balance", Decimal::ONE);
    let refused = store.update(&k, overlapping, None).await;
    assert!(
        matches!(refused, Err(StoreError::Invalid(_))),
        "{refused:?}"
    );
}

/// A stream of `n` chunks of 1 MiB.
fn mebibytes(n: usize) -> ByteStream {
    let chunk = Bytes::from(vec![7u8; 1 << 20]);
    Box::pin(futures::stream::iter(
        (0..n).map(move |_| Ok(chunk.clone())),
    ))
}

async fn uploads_in_progress(config: &aws_config::SdkConfig, bucket: &str, key: &str) -> usize {
    let client = aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(config)
            .force_path_style(true)
            .build(),
    );
    let listed = client
        .list_multipart_uploads()
        .bucket(bucket)
        .prefix(key)
        .send()
        .await
        .expect("list multipart uploads");
    listed.uploads().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_uploads_go_multipart() {
    let (config, blobs) = or_skip!(support::s3_adapter().await);
    let key = format!("adapter/{}/big.bin", reelgate::domain::ids::new_id("blob"));
    let size = blobs
        .put_stream(&key, "application/octet-stream", mebibytes(17), 100 << 20)
        .await
        .expect("multipart upload");
    assert_eq!(size, 17 << 20);
    let meta = blobs.head(&key).await.expect("head").expect("present");
    assert_eq!(meta.size, 17 << 20);
    assert_eq!(meta.content_type, "application/octet-stream");
    let tail = blobs
        .get(
            &key,
            Some(ByteRange {
                start: (17 << 20) - 3,
                end_inclusive: u64::MAX,
            }),
        )
        .await
        .expect("range");
    assert_eq!(tail.meta.size, 17 << 20);
    let body: Vec<Bytes> = tail
        .body
        .map(|b| b.expect("chunk"))
        .collect::<Vec<_>>()
        .await;
    assert_eq!(body.concat(), [7u8; 3]);
    assert_eq!(uploads_in_progress(&config, blobs.bucket(), &key).await, 0);
    blobs.delete(&key).await.expect("delete");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversize_and_failing_multipart_uploads_leave_nothing() {
    let (config, blobs) = or_skip!(support::s3_adapter().await);
    let key = format!(
        "adapter/{}/too-big.bin",
        reelgate::domain::ids::new_id("blob")
    );
    let refused = blobs
        .put_stream(&key, "application/octet-stream", mebibytes(12), 10 << 20)
        .await;
    assert!(
        matches!(refused, Err(BlobError::TooLarge { limit }) if limit == 10 << 20),
        "{refused:?}"
    );
    assert_eq!(blobs.head(&key).await.expect("head"), None);
    assert_eq!(uploads_in_progress(&config, blobs.bucket(), &key).await, 0);

    let key = format!(
        "adapter/{}/broken.bin",
        reelgate::domain::ids::new_id("blob")
    );
    let broken: ByteStream = Box::pin(mebibytes(9).chain(futures::stream::once(async {
        Err(std::io::Error::other("client went away"))
    })));
    let failed = blobs
        .put_stream(&key, "application/octet-stream", broken, 100 << 20)
        .await;
    assert!(matches!(failed, Err(BlobError::Source(_))), "{failed:?}");
    assert_eq!(blobs.head(&key).await.expect("head"), None);
    assert_eq!(uploads_in_progress(&config, blobs.bucket(), &key).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_blobs_and_reversed_ranges() {
    let (_, blobs) = or_skip!(support::s3_adapter().await);
    let key = format!(
        "adapter/{}/empty.txt",
        reelgate::domain::ids::new_id("blob")
    );
    let size = blobs
        .put_stream(&key, "text/plain", Box::pin(futures::stream::empty()), 10)
        .await
        .expect("empty upload");
    assert_eq!(size, 0);
    assert_eq!(read_all(&blobs, &key).await.expect("read"), Bytes::new());
    blobs
        .put_bytes(&key, "text/plain", Bytes::from_static(b"0123456789"))
        .await
        .expect("put");
    let reversed = blobs
        .get(
            &key,
            Some(ByteRange {
                start: 5,
                end_inclusive: 2,
            }),
        )
        .await;
    assert!(matches!(
        reversed,
        Err(BlobError::RangeNotSatisfiable { size: 10 })
    ));
    let missing = format!("adapter/{}/none", reelgate::domain::ids::new_id("blob"));
    assert!(matches!(
        blobs
            .get(
                &missing,
                Some(ByteRange {
                    start: 0,
                    end_inclusive: 1
                })
            )
            .await,
        Err(BlobError::NotFound)
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_receipts_are_stale() {
    let (_, queue, _) = or_skip!(support::sqs_adapter(3).await);
    assert!(matches!(
        queue.delete("not-a-receipt").await,
        Err(QueueError::StaleReceipt)
    ));
    assert!(matches!(
        queue
            .change_visibility("not-a-receipt", Duration::ZERO)
            .await,
        Err(QueueError::StaleReceipt)
    ));
    assert_eq!(queue.dead_letter_count().await.expect("dlq count"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provisioning_twice_is_harmless() {
    let (config, _) = or_skip!(support::dynamo_adapter().await);
    provision::table(&config, &support::table_name())
        .await
        .expect("table again");
    let (config, _) = or_skip!(support::s3_adapter().await);
    provision::bucket(&config, &support::bucket_name(), true)
        .await
        .expect("bucket again");
    let name = format!("contract-{}", reelgate::domain::ids::new_id("q"));
    let first = provision::queue(&config, &name, 2).await.expect("queue");
    let again = provision::queue(&config, &name, 5)
        .await
        .expect("queue again, with another limit");
    assert_eq!(first, again);
}

/// A state machine that hands its task token to an SQS queue and waits for it.
fn callback_definition(queue_url: &str) -> String {
    serde_json::json!({
        "StartAt": "Render",
        "States": {
            "Render": {
                "Type": "Task",
                "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
                "Parameters": {
                    "QueueUrl": queue_url,
                    "MessageBody": {
                        "token.$": "$$.Task.Token",
                        "job.$": "$.job"
                    }
                },
                "HeartbeatSeconds": 60,
                "TimeoutSeconds": 120,
                "End": true
            }
        }
    })
    .to_string()
}

async fn execution_status(client: &aws_sdk_sfn::Client, arn: &str) -> (String, Option<String>) {
    for _ in 0..40 {
        let described = client
            .describe_execution()
            .execution_arn(arn)
            .send()
            .await
            .expect("describe execution");
        let status = described.status().as_str().to_owned();
        if status != "RUNNING" {
            return (status, described.output().map(str::to_owned));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    ("RUNNING".into(), None)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn step_functions_callbacks() {
    let (config, queue, queues) = or_skip!(support::sqs_adapter(3).await);
    // The account comes from the emulator (an ARN it made), never from a constant.
    let sqs = aws_sdk_sqs::Client::new(&config);
    let attrs = sqs
        .get_queue_attributes()
        .queue_url(&queues.url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::QueueArn)
        .send()
        .await
        .expect("queue arn");
    let queue_arn = attrs
        .attributes()
        .and_then(|a| a.get(&aws_sdk_sqs::types::QueueAttributeName::QueueArn))
        .expect("arn")
        .clone();
    let account = queue_arn.split(':').nth(4).expect("account").to_owned();
    let sfn = aws_sdk_sfn::Client::new(&config);
    let machine = sfn
        .create_state_machine()
        .name(format!("contract-{}", reelgate::domain::ids::new_id("sm")))
        .definition(callback_definition(&queues.url))
        .role_arn(format!("arn:aws:iam::{account}:role/reelgate-test"))
        .send()
        .await
        .expect("create state machine");
    let workflow = StepFunctionsWorkflow::new(&config, machine.state_machine_arn());

    let name = reelgate::domain::ids::new_id("job");
    let input = serde_json::json!({ "job": name });
    let arn = workflow.start(&name, input.clone()).await.expect("start");
    let again = workflow
        .start(&name, serde_json::json!({ "job": "other input" }))
        .await
        .expect("start again by name");
    assert_eq!(again, arn);
    assert_eq!(workflow.execution_arn(&name).as_deref(), Some(arn.as_str()));
    // The recovery pass asks this before failing a job whose start it cannot confirm.
    assert!(workflow.exists(&name).await.expect("exists"));
    assert!(!workflow
        .exists(&reelgate::domain::ids::new_id("job"))
        .await
        .expect("a never-started execution"));

    let message = queue
        .receive(1, Duration::from_secs(30), Duration::from_secs(10))
        .await
        .expect("receive")
        .into_iter()
        .next()
        .expect("the task message");
    let body: serde_json::Value = serde_json::from_str(&message.body).expect("json body");
    assert_eq!(body["job"], serde_json::json!(name));
    let token = body["token"].as_str().expect("token").to_owned();
    workflow.task_heartbeat(&token).await.expect("heartbeat");
    workflow
        .task_success(&token, serde_json::json!({ "video": "done" }))
        .await
        .expect("success");
    queue.delete(&message.receipt).await.expect("delete");
    let (status, output) = execution_status(&sfn, &arn).await;
    assert_eq!(status, "SUCCEEDED");
    let output: serde_json::Value =
        serde_json::from_str(output.as_deref().unwrap_or("null")).expect("output");
    assert_eq!(output, serde_json::json!({ "video": "done" }));
    assert!(matches!(
        workflow.task_success(&token, serde_json::json!({})).await,
        Err(WorkflowError::InvalidToken)
    ));

    let failing = reelgate::domain::ids::new_id("job");
    let arn = workflow
        .start(&failing, serde_json::json!({ "job": failing }))
        .await
        .expect("start");
    let message = queue
        .receive(1, Duration::from_secs(30), Duration::from_secs(10))
        .await
        .expect("receive")
        .into_iter()
        .next()
        .expect("the task message");
    let body: serde_json::Value = serde_json::from_str(&message.body).expect("json body");
    let token = body["token"].as_str().expect("token").to_owned();
    workflow
        .task_failure(&token, "engine_unreachable", "the engine did not answer")
        .await
        .expect("failure");
    let (status, _) = execution_status(&sfn, &arn).await;
    assert_eq!(status, "FAILED");
    assert!(matches!(
        workflow.task_heartbeat("no-such-token").await,
        Err(WorkflowError::InvalidToken)
    ));

    // A canceled job: its execution, waiting for the render's callback, is stopped; stopping it
    // again, or stopping an execution that never started, is not an error.
    let canceled = reelgate::domain::ids::new_id("job");
    let arn = workflow
        .start(&canceled, serde_json::json!({ "job": canceled }))
        .await
        .expect("start");
    let message = queue
        .receive(1, Duration::from_secs(30), Duration::from_secs(10))
        .await
        .expect("receive")
        .into_iter()
        .next()
        .expect("the task message");
    let body: serde_json::Value = serde_json::from_str(&message.body).expect("json body");
    let token = body["token"].as_str().expect("token").to_owned();
    queue.delete(&message.receipt).await.expect("delete");
    workflow
        .stop(&canceled, "The job was canceled by its organization.")
        .await
        .expect("stop");
    let (status, _) = execution_status(&sfn, &arn).await;
    assert_eq!(status, "ABORTED");
    workflow
        .stop(&canceled, "again")
        .await
        .expect("stopping a stopped execution");
    workflow
        .stop(&reelgate::domain::ids::new_id("job"), "never started")
        .await
        .expect("stopping an execution that never started");
    // A render that finishes afterwards may still report to the stopped execution's token:
    // Step Functions answers TaskTimedOut (InvalidToken), the emulator accepts it; either way
    // the execution stays ABORTED and the worker carries on.
    let _ = workflow.task_success(&token, serde_json::json!({})).await;
    let (status, _) = execution_status(&sfn, &arn).await;
    assert_eq!(status, "ABORTED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_wires_every_port() {
    let (config, _, queues) = or_skip!(support::sqs_adapter(3).await);
    or_skip!(support::dynamo_adapter().await);
    or_skip!(support::s3_adapter().await);
    assert!(
        std::env::var_os("AWS_ACCESS_KEY_ID").is_some(),
        "connect() takes credentials from the default chain: \
         eval \"$(scripts/aws-emulator.sh env)\" sets the emulator's"
    );
    let endpoint = config
        .endpoint_url()
        .map(str::to_owned)
        .expect("tests set an endpoint");
    let settings = AwsSettings {
        region: "us-east-1".into(),
        endpoint_url: Some(endpoint),
        table: support::table_name(),
        bucket: support::bucket_name(),
        queue_url: queues.url.clone(),
        state_machine_arn: None,
    };
    let AwsBackend {
        store,
        blobs,
        queue,
        workflow,
        ..
    } = reelgate_aws::connect(settings).await;
    assert!(workflow.is_none());
    let k = Key::new(fresh_pk(), "ORG");
    store.put(item(&k), None).await.expect("put");
    assert!(store.get(&k).await.expect("get").is_some());
    let key = format!(
        "adapter/{}/hello.txt",
        reelgate::domain::ids::new_id("blob")
    );
    blobs
        .put_bytes(&key, "text/plain", Bytes::from_static(b"hi"))
        .await
        .expect("put blob");
    assert_eq!(read_all(blobs.as_ref(), &key).await.expect("read"), "hi");
    queue.send("ping", Duration::ZERO).await.expect("send");
    let got = queue
        .receive(10, Duration::from_secs(30), Duration::from_secs(5))
        .await
        .expect("receive");
    assert_eq!(got.first().map(|m| m.body.as_str()), Some("ping"));
}
