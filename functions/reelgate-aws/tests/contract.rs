//! The `reelgate` port contracts run against the AWS adapters on a local emulator.
//!
//! ```sh
//! scripts/aws-emulator.sh start && eval "$(scripts/aws-emulator.sh env)"
//! cargo test -p reelgate-aws
//! ```
//!
//! Without `AWS_ENDPOINT_URL` every case fails and says how to start the emulator, unless
//! `REELGATE_SKIP_AWS_TESTS=1`, which skips them. One table and one bucket serve the whole test
//! process (`REELGATE_TEST_TABLE` / `REELGATE_TEST_BUCKET`, else fixed names), created on first
//! use; the cases isolate themselves with fresh keys. Each queue case gets its own fresh queue.

mod support;

/// Yields the adapter, or returns from the calling test when the tests are skipped.
macro_rules! or_skip {
    ($make:expr) => {
        match $make {
            Some(adapter) => std::future::ready(adapter),
            None => return,
        }
    };
}

mod dynamodb {
    use super::support;
    reelgate::item_store_contract_tests!(or_skip!(support::dynamo().await));
}

mod s3 {
    use super::support;
    reelgate::blob_store_contract_tests!(or_skip!(support::s3().await));
}

mod sqs {
    use super::support;
    reelgate::queue_contract_tests!(or_skip!(support::sqs().await));
}

/// Admission is one conditional write on DynamoDB too: 50 concurrent creates against a balance
/// covering exactly 7 quotes admit 7; against a plan limit of 2, admit 2.
mod admission {
    use super::support;

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn admission_is_exact_under_50_concurrent_creates() {
        let Some(store) = support::dynamo().await else {
            return;
        };
        reelgate_embedded::testing::store_contracts::admission_contract(store).await;
    }
}

/// Rate limits are one conditional write per scope on DynamoDB too: 200 concurrent requests on a
/// 50-per-minute key admit exactly 50.
mod rate_limits {
    use super::support;

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn rate_limits_are_exact_under_200_concurrent_requests() {
        let Some(store) = support::dynamo().await else {
            return;
        };
        reelgate_embedded::testing::store_contracts::rate_limit_contract(store).await;
    }
}

/// The webhook endpoint cap and the delivery slots are transactions on DynamoDB too: 40
/// concurrent creates make exactly 16; one endpoint never has more than 2 POSTs in flight.
mod webhooks {
    use super::support;

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn the_endpoint_cap_and_delivery_slots_hold_under_concurrency() {
        let Some(store) = support::dynamo().await else {
            return;
        };
        reelgate_embedded::testing::store_contracts::webhook_contract(store).await;
    }
}

/// The video list's filters read DynamoDB pages in sort-key order and page through exactly the
/// matching jobs, as on SQLite.
mod video_list {
    use super::support;

    #[tokio::test]
    async fn filters_compose_with_cursor_paging() {
        let Some(store) = support::dynamo().await else {
            return;
        };
        reelgate_embedded::testing::store_contracts::video_list_contract(store).await;
    }
}
