//! The local host's rate-limit windows, in the memory of the one process that serves them: a
//! chat request takes and settles its window reservation without a store round trip and without
//! waiting for the SQLite writer thread (docs/hot-path.md).
//!
//! The windows are sharded by scope (an API key's, a console person's, an organization's
//! partition): a request locks its key's shard, then its organization's, each for the few
//! instructions of one count and never both at once, so requests of different keys and
//! organizations do not wait for each other, and no lock is held across an await.
//!
//! Durability is lazy: every [`SNAPSHOT_EVERY`] a thread of its own writes the windows changed
//! since its last pass as the same items the AWS host keeps (`RATE#…` / `<kind>#<minute>`), and a
//! process that opens the data directory rebuilds its windows from them. A restart therefore
//! forgets at most the admissions and settlements of the last interval, less than a window's
//! minute (docs/traffic-control.md): a caller can be admitted that much more often in the minute
//! of a crash, never charged wrongly, since charges are durable before their answer.

use crate::db::{Database, DbError};
use async_trait::async_trait;
use reelgate::ports::store::{now_secs, Attr, ItemExt, Key, StoreError, TransactOp, EXPIRES_AT};
use reelgate::ports::store::{RateWindows, WindowAdmission, WindowCounts, WindowOutcome};
use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
use std::sync::{Arc, Mutex, Weak};

/// Shards of the window map: a few times the cores a local server runs on, so two busy keys
/// rarely share one.
const SHARDS: usize = 64;

/// How often changed windows are written to the database: what a restart can forget.
pub const SNAPSHOT_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

#[derive(Clone, Copy, Debug, Default)]
struct Window {
    // Signed as the store's numbers are: a settlement below the estimate subtracts.
    requests: i64,
    tokens: i64,
    expires_at: i64,
    /// Changed since the last snapshot.
    dirty: bool,
}

impl Window {
    fn counts(&self) -> WindowCounts {
        WindowCounts {
            requests: self.requests.max(0) as u64,
            tokens: self.tokens.max(0) as u64,
        }
    }

    fn admits(&self, a: &WindowAdmission) -> bool {
        let counts = self.counts();
        a.max_requests.is_none_or(|max| counts.requests < max)
            && a.max_tokens
                .is_none_or(|max| counts.tokens <= max.saturating_sub(a.tokens))
    }
}

type Shard = Mutex<HashMap<Key, Window>>;

pub struct MemoryRateWindows {
    shards: Box<[Shard]>,
}

impl MemoryRateWindows {
    /// Windows that start empty and are never written anywhere.
    pub fn empty() -> Self {
        MemoryRateWindows {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
        }
    }

    /// The windows `db` holds from the last snapshot (those not yet expired), kept up to date in
    /// `db` by a snapshot thread that stops once the windows are dropped.
    pub fn persisted(db: &Database) -> Result<Arc<Self>, DbError> {
        let windows = Arc::new(Self::empty());
        let now = now_secs();
        let stored = db.read_now(move |c| {
            // `RATE#…` as a range ('$' sorts right after '#'), not LIKE: ids contain `_`.
            let mut stmt = c.prepare(
                "SELECT data FROM items WHERE pk >= 'RATE#' AND pk < 'RATE$' AND expires_at > ?1",
            )?;
            let rows = stmt.query_map([now], |r| r.get::<_, String>(0))?;
            rows.map(|text| crate::items::decode(&text?))
                .collect::<Result<Vec<_>, _>>()
        })?;
        for item in stored {
            let Some(key) = item.key() else { continue };
            let window = Window {
                requests: item.i64_attr("requests").unwrap_or(0),
                tokens: item.i64_attr("tokens").unwrap_or(0),
                expires_at: item.i64_attr(EXPIRES_AT).unwrap_or(now),
                dirty: false,
            };
            windows.lock_shard_of(&key).insert(key, window);
        }
        let watched = Arc::downgrade(&windows);
        let db = db.clone();
        std::thread::Builder::new()
            .name("reelgate-rate-snapshot".into())
            .spawn(move || snapshot_while(watched, db))
            .map_err(|e| DbError::Worker(e.to_string()))?;
        Ok(windows)
    }

    fn shard_of(&self, scope_pk: &str) -> usize {
        // A fixed hasher: the same scope maps to the same shard for the process's life.
        let hash = BuildHasherDefault::<DefaultHasher>::default().hash_one(scope_pk);
        (hash % self.shards.len() as u64) as usize
    }

    fn lock_shard_of(&self, key: &Key) -> std::sync::MutexGuard<'_, HashMap<Key, Window>> {
        // A shard's critical sections cannot panic halfway through a count; recover it anyway.
        self.shards[self.shard_of(&key.pk)]
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn admit(&self, a: &WindowAdmission, now: i64) -> WindowOutcome {
        let mut shard = self.lock_shard_of(&a.key);
        let window = shard.entry(a.key.clone()).or_insert(Window {
            expires_at: a.expires_at,
            ..Window::default()
        });
        if window.expires_at <= now {
            // Expired and not yet pruned: it reads as absent, as an expired store item does.
            *window = Window {
                expires_at: a.expires_at,
                ..Window::default()
            };
        }
        if !window.admits(a) {
            return WindowOutcome::Full(window.counts());
        }
        window.requests += 1;
        window.tokens += a.tokens as i64;
        window.expires_at = a.expires_at;
        window.dirty = true;
        WindowOutcome::Admitted(window.counts())
    }

    /// Adds to a window that exists and has not expired; a window that is gone stays gone.
    fn adjust(&self, key: &Key, requests: i64, tokens: i64) {
        let now = now_secs();
        if let Some(window) = self
            .lock_shard_of(key)
            .get_mut(key)
            .filter(|w| w.expires_at > now)
        {
            window.requests += requests;
            window.tokens += tokens;
            window.dirty = true;
        }
    }

    /// The windows changed since the last call, marked unchanged; expired windows are dropped.
    fn take_changes(&self, now: i64) -> Vec<(Key, Window)> {
        let mut changed = Vec::new();
        for shard in self.shards.iter() {
            let mut shard = shard.lock().unwrap_or_else(|p| p.into_inner());
            shard.retain(|_, w| w.expires_at > now);
            for (key, window) in shard.iter_mut().filter(|(_, w)| w.dirty) {
                window.dirty = false;
                changed.push((key.clone(), *window));
            }
        }
        changed
    }
}

#[async_trait]
impl RateWindows for MemoryRateWindows {
    async fn admit_each(
        &self,
        admissions: Vec<WindowAdmission>,
    ) -> Vec<Result<WindowOutcome, StoreError>> {
        let now = now_secs();
        admissions.iter().map(|a| Ok(self.admit(a, now))).collect()
    }

    async fn give_back(&self, key: &Key, tokens: u64) {
        self.adjust(key, -1, -(tokens as i64));
    }

    async fn settle(&self, key: &Key, delta: i64) {
        self.adjust(key, 0, delta);
    }

    fn settlement_write(&self, _key: &Key, _delta: i64, _expires_at: i64) -> Option<TransactOp> {
        None
    }
}

/// The snapshot thread: every [`SNAPSHOT_EVERY`] while the windows live, writes the changed
/// ones in one transaction, off the request path (a request never waits for it: it takes a
/// shard's lock only to copy that shard's changed counts).
fn snapshot_while(windows: Weak<MemoryRateWindows>, db: Database) {
    loop {
        std::thread::sleep(SNAPSHOT_EVERY);
        let Some(live) = windows.upgrade() else {
            return;
        };
        let changed = live.take_changes(now_secs());
        drop(live);
        if changed.is_empty() {
            continue;
        }
        let written = futures::executor::block_on(db.write(move |tx| {
            for (key, window) in &changed {
                let mut item = reelgate::ports::store::item(key);
                item.insert("requests".into(), Attr::from(window.requests));
                item.insert("tokens".into(), Attr::from(window.tokens));
                item.insert(EXPIRES_AT.into(), Attr::from(window.expires_at));
                crate::items::save(tx, &item)?;
            }
            Ok(())
        }));
        if let Err(e) = written {
            // The next change of those windows writes them again; until then a restart would
            // forget a little more.
            tracing::warn!(error = %e, "snapshotting the rate-limit windows failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admission(pk: &str, max_requests: u64) -> WindowAdmission {
        WindowAdmission {
            key: Key::new(pk, "TEXT#1"),
            max_requests: Some(max_requests),
            max_tokens: None,
            tokens: 0,
            expires_at: now_secs() + 120,
        }
    }

    /// The contention check of issue 48: a request's window lock is its own scope's shard, not
    /// one lock of the whole map. With one organization's shard held (as a long count there
    /// would hold it), another organization's admission still goes through. It fails if the
    /// windows go back to one global Mutex: then no organization lies outside the held shard
    /// (`SHARDS = 1`), or the admission waits past the deadline.
    #[test]
    fn a_held_shard_does_not_stop_another_organizations_admission() {
        let windows = MemoryRateWindows::empty();
        let held_pk = "RATE#org_held";
        let other_pk = (0..1000)
            .map(|i| format!("RATE#org_{i}"))
            .find(|pk| windows.shard_of(pk) != windows.shard_of(held_pk))
            .expect(
                "an organization outside the held organization's shard: the windows are one lock",
            );
        let held = windows.shards[windows.shard_of(held_pk)]
            .lock()
            .expect("lock");
        let (done, answer) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| {
                let outcome = windows.admit(&admission(&other_pk, 10), now_secs());
                let _ = done.send(outcome);
            });
            let outcome = answer.recv_timeout(std::time::Duration::from_secs(5));
            // Released before any assertion: the scope joins the admitting thread, which a
            // lock shared with the held shard would otherwise keep waiting forever.
            drop(held);
            let outcome =
                outcome.expect("another organization's admission waited for the held shard");
            assert!(matches!(outcome, WindowOutcome::Admitted(c) if c.requests == 1));
        });
    }

    /// Organizations spread over the shards (a hash that sent every scope to a few shards would
    /// be a global lock in practice).
    #[test]
    fn scopes_spread_over_the_shards() {
        let windows = MemoryRateWindows::empty();
        let used: std::collections::HashSet<usize> = (0..1000)
            .map(|i| windows.shard_of(&format!("RATE#org_{i}")))
            .collect();
        assert!(
            used.len() > SHARDS / 2,
            "{} of {SHARDS} shards used",
            used.len()
        );
    }

    /// 8 threads × 100 admissions into one 500-request window admit exactly 500; a give-back
    /// and a settlement change only the window that exists.
    #[test]
    fn counts_are_exact_across_threads() {
        let windows = MemoryRateWindows::empty();
        let admitted = std::sync::atomic::AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..100 {
                        let a = admission("RATE#org_busy", 500);
                        if matches!(windows.admit(&a, now_secs()), WindowOutcome::Admitted(_)) {
                            admitted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        assert_eq!(admitted.into_inner(), 500);
        let key = Key::new("RATE#org_busy", "TEXT#1");
        windows.adjust(&key, -1, 0);
        let a = admission("RATE#org_busy", 500);
        assert!(matches!(
            windows.admit(&a, now_secs()),
            WindowOutcome::Admitted(c) if c.requests == 500
        ));
        windows.adjust(&Key::new("RATE#org_none", "TEXT#1"), 0, 5);
        assert!(windows
            .take_changes(now_secs())
            .iter()
            .all(|(k, _)| k.pk == "RATE#org_busy"));
    }

    /// What was admitted before a snapshot is there after a restart; a window whose minute has
    /// passed is not.
    #[tokio::test]
    async fn windows_are_rebuilt_from_the_last_snapshot() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("w.sqlite3");
        let a = admission("RATE#org_kept", 3);
        {
            let db = Database::open(&path).expect("db");
            let windows = MemoryRateWindows::persisted(&db).expect("windows");
            for _ in 0..2 {
                windows.admit(&a, now_secs());
            }
            let mut expired = admission("RATE#org_gone", 3);
            expired.expires_at = now_secs() + 1;
            windows.admit(&expired, now_secs());
            let before = db.commits();
            let deadline = std::time::Instant::now() + 5 * SNAPSHOT_EVERY;
            while db.commits() == before && std::time::Instant::now() < deadline {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            assert!(db.commits() > before, "no snapshot was written");
        }
        tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
        let db = Database::open(&path).expect("db again");
        let windows = MemoryRateWindows::persisted(&db).expect("windows again");
        assert!(matches!(
            windows.admit(&a, now_secs()),
            WindowOutcome::Admitted(c) if c.requests == 3
        ));
        assert!(matches!(
            windows.admit(&a, now_secs()),
            WindowOutcome::Full(_)
        ));
        assert!(windows
            .lock_shard_of(&Key::new("RATE#org_gone", "TEXT#1"))
            .get(&Key::new("RATE#org_gone", "TEXT#1"))
            .is_none());
    }
}
