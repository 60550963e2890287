//! The adapter contract suites run against the embedded adapters. The same suites run against
//! the AWS adapters in `reelgate-aws` (tests/contract.rs) on a local AWS emulator.

mod sqlite_item_store {
    async fn make() -> std::sync::Arc<dyn reelgate::ports::store::ItemStore> {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = reelgate_embedded::db::Database::open(&dir.path().join("t.sqlite3")).expect("db");
        // The directory must outlive the test; leak it deliberately (a few KB per test).
        std::mem::forget(dir);
        std::sync::Arc::new(reelgate_embedded::store::SqliteItemStore::new(db))
    }
    reelgate::item_store_contract_tests!(make());
}

mod local_blob_store {
    /// The presigned-URL cases fetch over HTTP, so the local server's `/blobs` route must serve
    /// the same store: use the test server's.
    async fn make() -> std::sync::Arc<dyn reelgate::ports::blobs::BlobStore> {
        let server = reelgate_embedded::testing::TestServer::start().await;
        let blobs = server.backend.blobs.clone();
        std::mem::forget(server);
        blobs
    }
    reelgate::blob_store_contract_tests!(make());
}

mod sqlite_queue {
    async fn make() -> std::sync::Arc<dyn reelgate::ports::queue::MessageQueue> {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = reelgate_embedded::db::Database::open(&dir.path().join("q.sqlite3")).expect("db");
        std::mem::forget(dir);
        std::sync::Arc::new(reelgate_embedded::queue::SqliteQueue::new(
            db, "contract", 2,
        ))
    }
    reelgate::queue_contract_tests!(make());
}

mod rate_limits {
    /// 200 concurrent requests on a 50-per-minute key admit exactly 50 (and the rest of the
    /// rate-limit contract) on the SQLite store; `reelgate-aws` runs it on DynamoDB.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn rate_limits_are_exact_under_200_concurrent_requests() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = reelgate_embedded::db::Database::open(&dir.path().join("r.sqlite3")).expect("db");
        let store = std::sync::Arc::new(reelgate_embedded::store::SqliteItemStore::new(db));
        reelgate_embedded::testing::store_contracts::rate_limit_contract(store).await;
    }
}

mod webhooks {
    /// 40 concurrent creates make exactly the cap, and deliveries hold per-endpoint and
    /// per-organization slots, on the SQLite store; `reelgate-aws` runs it on DynamoDB.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn the_endpoint_cap_and_delivery_slots_hold_under_concurrency() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = reelgate_embedded::db::Database::open(&dir.path().join("w.sqlite3")).expect("db");
        let store = std::sync::Arc::new(reelgate_embedded::store::SqliteItemStore::new(db));
        reelgate_embedded::testing::store_contracts::webhook_contract(store).await;
    }
}

mod video_list {
    /// The video list's filters page through exactly the matching jobs on the SQLite store;
    /// `reelgate-aws` runs the same contract on DynamoDB.
    #[tokio::test]
    async fn filters_compose_with_cursor_paging() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = reelgate_embedded::db::Database::open(&dir.path().join("v.sqlite3")).expect("db");
        let store = std::sync::Arc::new(reelgate_embedded::store::SqliteItemStore::new(db));
        reelgate_embedded::testing::store_contracts::video_list_contract(store).await;
    }
}
