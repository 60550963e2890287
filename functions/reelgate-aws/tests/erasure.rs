//! Erasure of an organization on the AWS adapters (DynamoDB and S3 on the local emulator): the
//! same inventory as the local host's (docs/data.md) — afterwards the table holds only what the
//! operator keeps and the bucket holds no byte of the organization.
//!
//! ```sh
//! scripts/aws-emulator.sh start && eval "$(scripts/aws-emulator.sh env)"
//! cargo nextest run -p reelgate-aws --all-features -E 'binary(erasure)'
//! ```

mod support;

use bytes::Bytes;
use reelgate::config::Settings;
use reelgate::domain::accounts::{Accounts, Caller, Credential};
use reelgate::domain::catalog::{Catalog, DEFAULT_CATALOG};
use reelgate::domain::responses::persist::{self, Stored};
use reelgate::domain::Context;
use reelgate::ports::store::{ItemExt, Query, SK};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn erasing_an_organization_on_aws_leaves_only_what_the_operator_keeps() {
    let Some(store) = support::dynamo().await else {
        return;
    };
    let Some(blobs) = support::s3().await else {
        return;
    };
    let catalog = Catalog::parse(DEFAULT_CATALOG).expect("catalog");
    let settings = Settings::default();
    let cx = Context {
        store: store.as_ref(),
        blobs: blobs.as_ref(),
        catalog: &catalog,
        settings: &settings,
        fetcher: &reelgate::adapters::guarded_fetch::GuardedFetcher::default(),
        webhooks: None,
    };
    let accounts = Accounts::new(store.as_ref());
    let org = accounts
        .create_org(
            "Leaving",
            "starter",
            "usd",
            "10.00".parse().expect("decimal"),
        )
        .await
        .expect("org")
        .id;
    let person = accounts
        .create_person(&org, "leaving@example.test")
        .await
        .expect("person")
        .id;
    let key = accounts.create_api_key(&person).await.expect("key");
    let caller = Caller {
        org: org.clone(),
        person: person.clone(),
        credential: Credential::ConsoleSession {
            session_id: "cs_test".into(),
        },
        limits: Default::default(),
        budget: None,
    };
    reelgate::domain::accounts::agreement::accept(cx, &caller)
        .await
        .expect("agree");
    // A file with its bytes, a stored response large enough to live in S3, and a blob whose
    // record was lost.
    let file_id = reelgate::domain::ids::new_id("file");
    blobs
        .put_bytes(
            &reelgate::domain::files::blob_key(&org, &file_id),
            "text/plain",
            Bytes::from_static(b"notes"),
        )
        .await
        .expect("file bytes");
    reelgate::domain::files::register(
        cx,
        &org,
        &file_id,
        "notes.txt",
        "user_data",
        5,
        "text/plain",
    )
    .await
    .expect("file");
    let stored = Stored {
        response: json!({"id": "resp_big", "object": "response", "output": [],
                         "instructions": "y".repeat(400_000)}),
        input_items: vec![],
        own_item_ids: vec![],
        previous_response_id: None,
    };
    persist::save(cx, &caller, &stored).await.expect("response");
    blobs
        .put_bytes(
            &format!("{org}/files/file_orphaned"),
            "text/plain",
            Bytes::from_static(b"lost"),
        )
        .await
        .expect("orphan");
    assert_eq!(blobs.list(&format!("{org}/")).await.expect("list").len(), 3);
    assert!(accounts
        .authenticate(&key.secret)
        .await
        .expect("auth")
        .is_some());

    let report = reelgate::domain::erasure::erase_org(cx, &org, false)
        .await
        .expect("erase");
    assert_eq!(report.blobs_deleted, 3, "{report:?}");

    let left: Vec<String> = store
        .query(Query::partition(format!("ORG#{org}")).limit(100))
        .await
        .expect("query")
        .items
        .iter()
        .filter_map(|it| it.str_attr(SK).map(str::to_owned))
        .collect();
    assert_eq!(left, vec!["ORG".to_owned()]);
    let responses = store
        .query(Query::partition(format!("ORG#{org}#PERSON#{person}")).limit(100))
        .await
        .expect("query");
    assert!(responses.items.is_empty());
    assert!(blobs
        .list(&format!("{org}/"))
        .await
        .expect("list")
        .is_empty());
    assert!(accounts
        .authenticate(&key.secret)
        .await
        .expect("auth")
        .is_none());
}
