//! The embedded item store: one SQLite file, every write inside `BEGIN IMMEDIATE` so that
//! conditions and transactions are atomic across threads and across processes (the admin command
//! may run beside the server).

use crate::db::Database;
use crate::items::{decode, save};
use async_trait::async_trait;
use reelgate::ports::store::*;
use rusqlite::{params, OptionalExtension};

pub struct SqliteItemStore {
    db: Database,
    /// The host's rate-limit windows when they live in this process's memory; None: they are
    /// items of this store, as on AWS.
    windows: Option<std::sync::Arc<crate::rate_windows::MemoryRateWindows>>,
}

impl SqliteItemStore {
    /// A store that keeps rate-limit windows as its items (a second process on the same file,
    /// and the contract suites that check the windows' items).
    pub fn new(db: Database) -> Self {
        SqliteItemStore { db, windows: None }
    }

    /// The store of the process that serves requests: its rate-limit windows in memory,
    /// rebuilt from and snapshotted to `db` (`rate_windows`).
    pub fn with_memory_windows(db: Database) -> Result<Self, crate::db::DbError> {
        let windows = crate::rate_windows::MemoryRateWindows::persisted(&db)?;
        Ok(SqliteItemStore {
            db,
            windows: Some(windows),
        })
    }

    /// Items whose expiry is at or before `now` (the sweeper deletes their blobs, then them).
    pub async fn expired_items(&self, now: i64) -> Result<Vec<Item>, StoreError> {
        self.db
            .read(move |c| {
                let mut stmt = c.prepare(
                    "SELECT data FROM items WHERE expires_at IS NOT NULL AND expires_at <= ?1",
                )?;
                let rows = stmt.query_map(params![now], |r| r.get::<_, String>(0))?;
                rows.map(|text| decode(&text?)).collect()
            })
            .await
            .map_err(store_err)
    }

    /// Deletes one item if it is still expired at `now` (a write since the sweep read it may
    /// have renewed it); the local stand-in for DynamoDB's TTL deletion. True if it was deleted.
    pub async fn delete_expired(&self, key: &Key, now: i64) -> Result<bool, StoreError> {
        let (pk, sk) = (key.pk.clone(), key.sk.clone());
        self.db
            .write(move |tx| {
                tx.execute(
                    "DELETE FROM items WHERE pk = ?1 AND sk = ?2 \
                     AND expires_at IS NOT NULL AND expires_at <= ?3",
                    params![pk, sk, now],
                )
            })
            .await
            .map(|n| n > 0)
            .map_err(store_err)
    }

    /// Every item of the partitions `pk` and `pk#…` (an organization and its per-person
    /// partitions), expired or not: what the aging test and storage reports walk.
    pub async fn partition_family(&self, pk: &str) -> Result<Vec<Item>, StoreError> {
        // `pk#…` as a range ('$' sorts right after '#'), not LIKE: ids contain `_`, a wildcard.
        let (exact, from, to) = (pk.to_owned(), format!("{pk}#"), format!("{pk}$"));
        self.db
            .read(move |c| {
                let mut stmt = c.prepare(
                    "SELECT data FROM items WHERE pk = ?1 OR (pk >= ?2 AND pk < ?3) ORDER BY pk, sk",
                )?;
                let rows =
                    stmt.query_map(params![exact, from, to], |r| r.get::<_, String>(0))?;
                rows.map(|text| decode(&text?)).collect()
            })
            .await
            .map_err(store_err)
    }
}

pub(crate) fn store_err(e: crate::db::DbError) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

fn load(tx: &rusqlite::Connection, key: &Key, now: i64) -> Result<Option<Item>, rusqlite::Error> {
    // Cached statements: the hot path's few statements are parsed once per connection.
    let text: Option<String> = tx
        .prepare_cached("SELECT data FROM items WHERE pk = ?1 AND sk = ?2")?
        .query_row(params![key.pk, key.sk], |r| r.get(0))
        .optional()?;
    match text {
        Some(t) => {
            let item = decode(&t)?;
            Ok((!is_expired(&item, now)).then_some(item))
        }
        None => Ok(None),
    }
}

fn remove(tx: &rusqlite::Connection, key: &Key) -> Result<(), rusqlite::Error> {
    tx.prepare_cached("DELETE FROM items WHERE pk = ?1 AND sk = ?2")?
        .execute(params![key.pk, key.sk])?;
    Ok(())
}

fn check_key(item: &Item) -> Result<Key, StoreError> {
    item.key()
        .ok_or_else(|| StoreError::Invalid("an item needs string pk and sk attributes".into()))
}

impl SqliteItemStore {
    /// One conditional single-item write: reads the live item, checks the condition against
    /// it, then lets `write` change it, all in one immediate transaction.
    async fn write_one<T, F>(
        &self,
        key: Key,
        condition: Option<Condition>,
        write: F,
    ) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&rusqlite::Connection, &Key, Option<Item>) -> Result<T, rusqlite::Error>
            + Send
            + 'static,
    {
        let now = now_secs();
        let verdict = self
            .db
            .write(move |tx| conditionally(tx, &key, condition.as_ref(), now, write))
            .await
            .map_err(store_err)?;
        finish(verdict)
    }
}

/// Inside a write transaction: reads the live item, checks `condition` against it, then lets
/// `write` change it.
fn conditionally<T>(
    tx: &rusqlite::Connection,
    key: &Key,
    condition: Option<&Condition>,
    now: i64,
    write: impl FnOnce(&rusqlite::Connection, &Key, Option<Item>) -> Result<T, rusqlite::Error>,
) -> Result<Verdict<T>, rusqlite::Error> {
    let current = load(tx, key, now)?;
    if condition.is_some_and(|c| !c.holds(current.as_ref())) {
        return Ok(Verdict::ConditionFailed);
    }
    Ok(Verdict::Done(write(tx, key, current)?))
}

/// Outcome of a write closure: either the database work succeeded (with a domain verdict inside)
/// or SQLite failed.
enum Verdict<T> {
    Done(T),
    ConditionFailed,
    Canceled(Vec<bool>),
}

#[async_trait]
impl ItemStore for SqliteItemStore {
    fn rate_windows(&self) -> Option<&dyn reelgate::ports::store::RateWindows> {
        self.windows
            .as_deref()
            .map(|w| w as &dyn reelgate::ports::store::RateWindows)
    }

    async fn get(&self, key: &Key) -> Result<Option<Item>, StoreError> {
        let key = key.clone();
        let now = now_secs();
        self.db
            .read_point(move |c| load(c, &key, now))
            .await
            .map_err(store_err)
    }

    async fn put(&self, item: Item, condition: Option<Condition>) -> Result<(), StoreError> {
        let key = check_key(&item)?;
        self.write_one(key, condition, move |tx, _, _| save(tx, &item))
            .await
    }

    async fn update(
        &self,
        key: &Key,
        update: Update,
        condition: Option<Condition>,
    ) -> Result<Item, StoreError> {
        update.validate()?;
        self.write_one(key.clone(), condition, move |tx, key, current| {
            let next = update.apply(key, current);
            save(tx, &next)?;
            Ok(next)
        })
        .await
    }

    async fn delete(
        &self,
        key: &Key,
        condition: Option<Condition>,
    ) -> Result<Option<Item>, StoreError> {
        self.write_one(key.clone(), condition, |tx, key, current| {
            remove(tx, key)?;
            Ok(current)
        })
        .await
    }

    /// In one commit: each update checks its condition and applies on its own, as it would in a
    /// write of its own (a failing condition leaves the others applied).
    async fn update_each(&self, updates: Vec<ConditionalUpdate>) -> Vec<Result<Item, StoreError>> {
        let count = updates.len();
        for u in &updates {
            if let Err(e) = u.update.validate() {
                return (0..count)
                    .map(|_| Err(StoreError::Invalid(e.to_string())))
                    .collect();
            }
        }
        let now = now_secs();
        let written = self
            .db
            .write(move |tx| {
                updates
                    .into_iter()
                    .map(|u| {
                        conditionally(tx, &u.key, u.condition.as_ref(), now, |tx, key, current| {
                            let next = u.update.apply(key, current);
                            save(tx, &next)?;
                            Ok(next)
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .await;
        match written {
            Ok(answers) => answers.into_iter().map(finish).collect(),
            Err(e) => {
                let message = e.to_string();
                (0..count)
                    .map(|_| Err(StoreError::Unavailable(message.clone())))
                    .collect()
            }
        }
    }

    async fn transact(&self, ops: Vec<TransactOp>) -> Result<(), StoreError> {
        validate_transaction(&ops)?;
        let now = now_secs();
        let verdict = self
            .db
            .write(move |tx| {
                let mut failed = vec![false; ops.len()];
                let mut currents = Vec::with_capacity(ops.len());
                for (i, op) in ops.iter().enumerate() {
                    let key = op.key().ok_or(rusqlite::Error::InvalidQuery)?;
                    let current = load(tx, &key, now)?;
                    let condition = match op {
                        TransactOp::Put { condition, .. }
                        | TransactOp::Update { condition, .. }
                        | TransactOp::Delete { condition, .. } => condition.as_ref(),
                        TransactOp::ConditionCheck { condition, .. } => Some(condition),
                    };
                    failed[i] = condition.is_some_and(|c| !c.holds(current.as_ref()));
                    currents.push((key, current));
                }
                if failed.iter().any(|f| *f) {
                    return Ok(Verdict::Canceled(failed));
                }
                for (op, (key, current)) in ops.iter().zip(currents) {
                    match op {
                        TransactOp::Put { item, .. } => save(tx, item)?,
                        TransactOp::Update { update, .. } => {
                            save(tx, &update.apply(&key, current))?
                        }
                        TransactOp::Delete { .. } => remove(tx, &key)?,
                        TransactOp::ConditionCheck { .. } => {}
                    }
                }
                Ok(Verdict::Done(()))
            })
            .await
            .map_err(store_err)?;
        finish(verdict)
    }

    async fn query(&self, query: Query) -> Result<Page, StoreError> {
        if query.limit == 0 {
            return Err(StoreError::Invalid("a query limit must be positive".into()));
        }
        let now = now_secs();
        self.db
            .read(move |c| {
                let prefix = query.sk_prefix.clone().unwrap_or_default();
                // Every sort key that starts with `prefix` sorts below prefix + U+10FFFF.
                let upper = format!("{prefix}\u{10FFFF}");
                let (op, order) = if query.descending {
                    ("<", "DESC")
                } else {
                    (">", "ASC")
                };
                let after = query.after_sk.clone();
                let sql = format!(
                    "SELECT data FROM items WHERE pk = ?1 AND sk >= ?2 AND sk < ?3
                     AND (?4 IS NULL OR sk {op} ?4)
                     AND (expires_at IS NULL OR expires_at > ?5)
                     ORDER BY sk {order} LIMIT ?6"
                );
                let mut stmt = c.prepare_cached(&sql)?;
                // One more than asked tells whether another page exists.
                let rows = stmt.query_map(
                    params![
                        query.pk,
                        prefix,
                        upper,
                        after,
                        now,
                        (query.limit + 1) as i64
                    ],
                    |r| r.get::<_, String>(0),
                )?;
                let mut items = Vec::new();
                for row in rows {
                    items.push(decode(&row?)?);
                }
                let more = items.len() > query.limit;
                items.truncate(query.limit);
                let last_sk = if more {
                    items.last().and_then(|i| i.str_attr(SK)).map(str::to_owned)
                } else {
                    None
                };
                Ok(Page { items, last_sk })
            })
            .await
            .map_err(store_err)
    }
}

fn finish<T>(verdict: Verdict<T>) -> Result<T, StoreError> {
    match verdict {
        Verdict::Done(v) => Ok(v),
        Verdict::ConditionFailed => Err(StoreError::ConditionFailed),
        Verdict::Canceled(failed) => Err(StoreError::TransactionCanceled { failed }),
    }
}
