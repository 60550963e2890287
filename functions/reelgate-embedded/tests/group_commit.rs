//! Group commit of the durable write: concurrent charges that reach the SQLite writer together
//! are committed together (one COMMIT, each under its own savepoint), and each keeps the
//! conditional-check semantics of a transaction of its own. The charges here are the shape of a
//! text charge (balance down, ledger entry that must not exist yet), written through the item
//! store's `transact` as the charge is.

use reelgate::ports::store::{
    item, Attr, Condition, ItemExt, ItemStore, Key, StoreError, TransactOp, Update,
};
use reelgate_embedded::db::Database;
use reelgate_embedded::store::SqliteItemStore;
use rust_decimal::Decimal;
use std::sync::Arc;

const CHARGES: usize = 60;

fn balance_key(org: usize) -> Key {
    Key::new(format!("ORG#org_{org}"), "BALANCE")
}

/// A charge of `cents` to `org`, recorded once under `reference`.
fn charge(org: usize, reference: &str, cents: i64) -> Vec<TransactOp> {
    let mut ledger = item(&Key::new(
        format!("ORG#org_{org}"),
        format!("LEDGER#{reference}"),
    ));
    ledger.insert("amount".into(), Attr::N(Decimal::new(cents, 2)));
    vec![
        TransactOp::Update {
            key: balance_key(org),
            update: Update::new().add("balance", -Decimal::new(cents, 2)),
            condition: Some(Condition::Exists),
        },
        TransactOp::Put {
            item: ledger,
            condition: Some(Condition::NotExists),
        },
    ]
}

async fn balance(store: &SqliteItemStore, org: usize) -> Decimal {
    store
        .get(&balance_key(org))
        .await
        .expect("get")
        .and_then(|i| i.decimal_attr("balance"))
        .expect("a balance")
}

/// Holds the database file's write lock from another connection (as the admin command would)
/// until `CHARGES` writes are queued for the writer thread, so they reach it as one group.
/// Every charge lands exactly: the balances drop by the sum of the amounts; and the one charge
/// whose ledger entry already exists (a second charge of one reference) fails its condition
/// alone, its balance update rolled back with it, its batch mates committed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_charges_are_committed_together_and_exactly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("g.sqlite3");
    let db = Database::open(&file).expect("db");
    let store = Arc::new(SqliteItemStore::new(db.clone()));
    for org in 0..3 {
        let mut start = item(&balance_key(org));
        start.insert("balance".into(), Attr::N(Decimal::new(100_000, 2)));
        store.put(start, None).await.expect("balance");
    }
    store
        .transact(charge(1, "already", 500))
        .await
        .expect("the first charge of `already`");

    let other = rusqlite::Connection::open(&file).expect("other connection");
    other
        .execute_batch("BEGIN IMMEDIATE")
        .expect("hold the lock");
    let commits_before = db.commits();
    let mut tasks = Vec::new();
    for i in 0..CHARGES {
        let store = store.clone();
        // The 7th charge repeats `already`: it must fail alone.
        let reference = if i == 7 {
            "already".to_owned()
        } else {
            format!("ref_{i}")
        };
        let cents = 100 + i as i64;
        tasks.push(tokio::spawn(async move {
            store.transact(charge(i % 3, &reference, cents)).await
        }));
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while db.queued_writes() < CHARGES as u64 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(
        db.queued_writes(),
        CHARGES as u64,
        "every charge waits for the writer"
    );
    other.execute_batch("COMMIT").expect("release the lock");

    let mut expected = [Decimal::new(100_000, 2); 3];
    expected[1] -= Decimal::new(500, 2);
    for (i, task) in tasks.into_iter().enumerate() {
        let outcome = task.await.expect("join");
        if i == 7 {
            assert!(
                matches!(outcome, Err(StoreError::TransactionCanceled { .. })),
                "{outcome:?}"
            );
        } else {
            outcome.expect("a charge in the batch");
            expected[i % 3] -= Decimal::new(100 + i as i64, 2);
        }
    }
    for (org, want) in expected.iter().enumerate() {
        assert_eq!(balance(&store, org).await, *want, "org {org}");
    }
    let commits = db.commits() - commits_before;
    // The first queued write waits for the lock alone; the rest queue behind it.
    assert!(
        commits < CHARGES as u64 / 2,
        "{CHARGES} queued charges took {commits} commits"
    );
}
