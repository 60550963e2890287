//! A token charge whose transaction conflicts with a concurrent write (DynamoDB's
//! TransactionConflict, which the adapter reports as `StoreError::Unavailable`) is retried until
//! it lands, never dropped, and still charges exactly once.

use async_trait::async_trait;
use reelgate::config::Settings;
use reelgate::domain::accounts::Accounts;
use reelgate::domain::billing::token_charges::{self, Charge, TokenUsage};
use reelgate::domain::catalog::{Catalog, ChatModel};
use reelgate::domain::Context;
use reelgate::ports::store::{
    Condition, Item, ItemStore, Key, Page, Query, StoreError, TransactOp, Update,
};
use reelgate_embedded::backend::LocalBackend;
use rust_decimal::Decimal;
use rust_decimal_macros::dec;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// A fake store: the real SQLite store, except that its next `conflicts` transactions fail the
/// way a DynamoDB transaction conflict does (nothing written, `Unavailable`).
struct FakeConflictingStore {
    inner: Arc<dyn ItemStore>,
    conflicts: AtomicU32,
    transactions: AtomicU32,
}

#[async_trait]
impl ItemStore for FakeConflictingStore {
    async fn get(&self, key: &Key) -> Result<Option<Item>, StoreError> {
        self.inner.get(key).await
    }
    async fn put(&self, item: Item, condition: Option<Condition>) -> Result<(), StoreError> {
        self.inner.put(item, condition).await
    }
    async fn update(
        &self,
        key: &Key,
        update: Update,
        condition: Option<Condition>,
    ) -> Result<Item, StoreError> {
        self.inner.update(key, update, condition).await
    }
    async fn delete(
        &self,
        key: &Key,
        condition: Option<Condition>,
    ) -> Result<Option<Item>, StoreError> {
        self.inner.delete(key, condition).await
    }
    async fn transact(&self, ops: Vec<TransactOp>) -> Result<(), StoreError> {
        self.transactions.fetch_add(1, Ordering::SeqCst);
        let took = self
            .conflicts
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        if took.is_ok() {
            return Err(StoreError::Unavailable(
                "TransactionCanceledException [\"TransactionConflict\", \"None\"]".into(),
            ));
        }
        self.inner.transact(ops).await
    }
    async fn query(&self, query: Query) -> Result<Page, StoreError> {
        self.inner.query(query).await
    }
}

fn model() -> ChatModel {
    let mut m: ChatModel =
        serde_json::from_value(serde_json::json!({"id": "m", "upstream": "u"})).expect("model");
    m.input_per_million = dec!(1000);
    m.output_per_million = dec!(2000);
    m
}

#[tokio::test]
async fn a_conflicting_token_charge_is_retried_and_charged_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let backend = LocalBackend::open(dir.path(), "http://127.0.0.1:1").expect("backend");
    let store = Arc::new(FakeConflictingStore {
        inner: backend.store.clone(),
        conflicts: AtomicU32::new(0),
        transactions: AtomicU32::new(0),
    });
    let catalog = Catalog::load(None).expect("catalog");
    let settings = Settings::default();
    let cx = Context {
        store: store.as_ref(),
        blobs: backend.blobs.as_ref(),
        catalog: &catalog,
        settings: &settings,
        fetcher: &reelgate::adapters::guarded_fetch::GuardedFetcher::default(),
        webhooks: None,
    };
    let org = Accounts::new(store.as_ref())
        .create_org("Retry", "free", "usd", dec!(10))
        .await
        .expect("org");
    let model = model();
    let charge = |reference: &'static str| Charge {
        org: &org.id,
        person: "user_x",
        model: &model,
        kind: "chat.completion",
        reference,
        usage: TokenUsage {
            prompt_tokens: 1000,
            completion_tokens: 500,
            cached_tokens: 0,
            cache_write_tokens: 0,
            estimated: false,
        },
        key: "console",
        budget_month: None,
        rate_settlement: Default::default(),
    };
    // 1000 × 1000 / 1e6 + 500 × 2000 / 1e6 = 1 + 1 = 2.
    store.conflicts.store(3, Ordering::SeqCst);
    let charged = token_charges::charge(cx, charge("chatcmpl-1"))
        .await
        .expect("charged");
    assert_eq!(charged, dec!(2));
    assert_eq!(
        store.transactions.load(Ordering::SeqCst),
        4,
        "three conflicts, then it landed"
    );
    assert!(token_charges::ledger_entry(cx, &org.id, "chatcmpl-1")
        .await
        .expect("read")
        .is_some());
    let after = Accounts::new(store.as_ref())
        .org(&org.id)
        .await
        .expect("org");
    assert_eq!(after.balance, dec!(8));
    assert_eq!(after.available, dec!(8));

    // A retry of the same completion after it landed charges nothing more.
    assert_eq!(
        token_charges::charge(cx, charge("chatcmpl-1"))
            .await
            .expect("again"),
        Decimal::ZERO
    );
    assert_eq!(
        Accounts::new(store.as_ref())
            .org(&org.id)
            .await
            .expect("org")
            .balance,
        dec!(8)
    );

    // A store that keeps conflicting is reported (the caller logs it), not silently dropped.
    store.conflicts.store(u32::MAX, Ordering::SeqCst);
    assert!(token_charges::charge(cx, charge("chatcmpl-2"))
        .await
        .is_err());
    store.conflicts.store(0, Ordering::SeqCst);
}

#[tokio::test]
async fn concurrent_charges_against_one_org_all_land() {
    let dir = tempfile::tempdir().expect("tempdir");
    let backend = LocalBackend::open(dir.path(), "http://127.0.0.1:1").expect("backend");
    let store = Arc::new(FakeConflictingStore {
        inner: backend.store.clone(),
        conflicts: AtomicU32::new(12),
        transactions: AtomicU32::new(0),
    });
    let catalog = Catalog::load(None).expect("catalog");
    let settings = Settings::default();
    let org = Accounts::new(store.as_ref())
        .create_org("Burst", "free", "usd", dec!(100))
        .await
        .expect("org");
    let model = model();
    let refs: Vec<String> = (0..20).map(|i| format!("chatcmpl-{i}")).collect();
    let fetcher = reelgate::adapters::guarded_fetch::GuardedFetcher::default();
    let charges = refs.iter().map(|r| {
        let cx = Context {
            store: store.as_ref(),
            blobs: backend.blobs.as_ref(),
            catalog: &catalog,
            settings: &settings,
            fetcher: &fetcher,
            webhooks: None,
        };
        let c = Charge {
            org: &org.id,
            person: "user_x",
            model: &model,
            kind: "chat.completion",
            reference: r,
            usage: TokenUsage {
                prompt_tokens: 1000,
                completion_tokens: 0,
                cached_tokens: 0,
                cache_write_tokens: 0,
                estimated: false,
            },
            key: "console",
            budget_month: None,
            rate_settlement: Default::default(),
        };
        async move { token_charges::charge(cx, c).await }
    });
    let results = futures::future::join_all(charges).await;
    assert!(
        results
            .iter()
            .all(|r| r.as_ref().is_ok_and(|a| *a == dec!(1))),
        "{results:?}"
    );
    let after = Accounts::new(store.as_ref())
        .org(&org.id)
        .await
        .expect("org");
    assert_eq!(
        after.balance,
        dec!(80),
        "every one of 20 charges of 1 landed once"
    );
}
