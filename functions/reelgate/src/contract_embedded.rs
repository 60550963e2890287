//! The adapter contract suites run against the embedded adapters. The same suites run against
//! the AWS adapters in `reelgate-aws` (tests/contract.rs) on a local AWS emulator.

mod sqlite_item_store {
    async fn make() -> std::sync::Arc<dyn crate::store::ItemStore> {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = crate::db::Database::open(&dir.path().join("t.sqlite3")).expect("db");
        // The directory must outlive the test; leak it deliberately (a few KB per test).
        std::mem::forget(dir);
        std::sync::Arc::new(crate::store::sqlite::SqliteItemStore::new(db))
    }
    crate::item_store_contract_tests!(make());
}

mod local_blob_store {
    /// The presigned-URL cases fetch over HTTP, so the local server's `/blobs` route must serve
    /// the same store: use the test server's.
    async fn make() -> std::sync::Arc<dyn crate::blobs::BlobStore> {
        let server = crate::testing::TestServer::start().await;
        let blobs = server.backend.blobs.clone();
        std::mem::forget(server);
        blobs
    }
    crate::blob_store_contract_tests!(make());
}

mod sqlite_queue {
    async fn make() -> std::sync::Arc<dyn crate::queue::MessageQueue> {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = crate::db::Database::open(&dir.path().join("q.sqlite3")).expect("db");
        std::mem::forget(dir);
        std::sync::Arc::new(crate::queue::sqlite::SqliteQueue::new(db, "contract", 2))
    }
    crate::queue_contract_tests!(make());
}
