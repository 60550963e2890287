//! The embedded database: one SQLite file shared by the item store, the queue and the workflow
//! journal. WAL mode lets readers run beside a writer; writes go through one writer thread that
//! group-commits them (see [`Database::write`]) inside `BEGIN IMMEDIATE` with a busy timeout,
//! which also serialises them with a second process (the admin command) on the same file.

use rusqlite::{Connection, TransactionBehavior};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use tokio::sync::oneshot;

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("the database worker stopped: {0}")]
    Worker(String),
}

#[derive(Clone)]
pub struct Database {
    writes: Arc<mpsc::Sender<Box<dyn PendingWrite>>>,
    readers: Arc<Vec<Mutex<Connection>>>,
    commits: Arc<AtomicU64>,
    /// Held by every handle; the checkpointer stops once the last one is gone.
    _checkpointer_alive: Arc<()>,
    path: PathBuf,
}

/// How often the checkpointer folds the write-ahead log back into the database file.
const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

/// Writes waiting when the writer takes a batch, at most, committed together.
const MAX_BATCH: usize = 128;

/// Reader connections: reads of different requests run side by side (WAL lets them run beside
/// the writer too) instead of queueing behind one connection.
const READERS: usize = 4;

/// One caller's write, run inside the writer's batch transaction under its own savepoint.
trait PendingWrite: Send {
    /// Runs the work; false if it failed (its savepoint is then rolled back).
    fn run(&mut self, tx: &rusqlite::Transaction<'_>) -> bool;
    /// Answers the caller once the batch's outcome is known.
    fn finish(self: Box<Self>, committed: Result<(), String>);
}

struct Pending<T, F> {
    work: Option<F>,
    outcome: Option<Result<T, rusqlite::Error>>,
    reply: oneshot::Sender<Result<T, DbError>>,
}

impl<T, F> PendingWrite for Pending<T, F>
where
    T: Send + 'static,
    F: FnOnce(&rusqlite::Transaction<'_>) -> Result<T, rusqlite::Error> + Send + 'static,
{
    fn run(&mut self, tx: &rusqlite::Transaction<'_>) -> bool {
        let outcome = match self.work.take() {
            Some(work) => work(tx),
            None => Err(rusqlite::Error::InvalidQuery),
        };
        let ok = outcome.is_ok();
        self.outcome = Some(outcome);
        ok
    }

    fn finish(self: Box<Self>, committed: Result<(), String>) {
        let answer = match (self.outcome, committed) {
            (Some(Err(e)), _) => Err(DbError::Sqlite(e)),
            (Some(Ok(value)), Ok(())) => Ok(value),
            (Some(Ok(_)), Err(e)) => Err(DbError::Worker(e)),
            (None, Err(e)) => Err(DbError::Worker(e)),
            (None, Ok(())) => Err(DbError::Worker("the write never ran".into())),
        };
        // The caller may have gone (its request was dropped); the write stands regardless.
        let _ = self.reply.send(answer);
    }
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS items (
    pk TEXT NOT NULL,
    sk TEXT NOT NULL,
    data TEXT NOT NULL,
    expires_at INTEGER,
    PRIMARY KEY (pk, sk)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS items_expiry ON items (expires_at) WHERE expires_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS queue_messages (
    queue TEXT NOT NULL,
    message_id TEXT NOT NULL,
    body TEXT NOT NULL,
    visible_at_ms INTEGER NOT NULL,
    receive_count INTEGER NOT NULL DEFAULT 0,
    receipt TEXT,
    dead INTEGER NOT NULL DEFAULT 0,
    sent_at_ms INTEGER NOT NULL,
    PRIMARY KEY (queue, message_id)
);
CREATE INDEX IF NOT EXISTS queue_ready ON queue_messages (queue, dead, visible_at_ms);
CREATE TABLE IF NOT EXISTS workflow_executions (
    execution_id TEXT PRIMARY KEY,
    running INTEGER NOT NULL,
    snapshot TEXT NOT NULL
);
";

fn open_connection(path: &Path) -> Result<Connection, rusqlite::Error> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(std::time::Duration::from_secs(30))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    Ok(conn)
}

impl Database {
    pub fn open(path: &Path) -> Result<Self, DbError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| DbError::Worker(e.to_string()))?;
        }
        let writer = open_connection(path)?;
        writer.execute_batch(SCHEMA)?;
        // The writer never checkpoints: SQLite's automatic checkpoint runs inside the commit that
        // crosses the threshold, copying pages and syncing the file while every queued write
        // waits. A thread of its own does it instead, passively (it never blocks the writer).
        writer.pragma_update(None, "wal_autocheckpoint", 0)?;
        let checkpointer = open_connection(path)?;
        let readers = (0..READERS)
            .map(|_| open_connection(path).map(Mutex::new))
            .collect::<Result<Vec<_>, _>>()?;
        let (writes, queue) = mpsc::channel();
        let commits = Arc::new(AtomicU64::new(0));
        let counted = commits.clone();
        std::thread::Builder::new()
            .name("reelgate-sqlite-writer".into())
            .spawn(move || write_batches(writer, queue, &counted))
            .map_err(|e| DbError::Worker(e.to_string()))?;
        let alive = Arc::new(());
        let watched = Arc::downgrade(&alive);
        std::thread::Builder::new()
            .name("reelgate-sqlite-checkpoint".into())
            .spawn(move || checkpoint_while(checkpointer, watched))
            .map_err(|e| DbError::Worker(e.to_string()))?;
        Ok(Database {
            writes: Arc::new(writes),
            readers: Arc::new(readers),
            commits,
            _checkpointer_alive: alive,
            path: path.to_owned(),
        })
    }

    /// Batches committed so far (each holds one or more writes).
    pub fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `work` atomically inside an immediate transaction and answers once it is committed.
    ///
    /// Writes are group-committed: one writer thread takes every write waiting at that moment,
    /// runs each under its own savepoint (a failing one is rolled back alone) and commits them
    /// together. A write is answered only after its commit, so durability and atomicity per
    /// write are as with a transaction of its own, while a burst of concurrent writes (a rate
    /// limit's window, a charge, a job's status) pays for one commit instead of one each.
    pub async fn write<T, F>(&self, work: F) -> Result<T, DbError>
    where
        T: Send + 'static,
        F: FnOnce(&rusqlite::Transaction<'_>) -> Result<T, rusqlite::Error> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let pending = Pending {
            work: Some(work),
            outcome: None,
            reply,
        };
        self.writes
            .send(Box::new(pending))
            .map_err(|_| DbError::Worker("the database writer stopped".into()))?;
        answer
            .await
            .map_err(|_| DbError::Worker("the database writer stopped".into()))?
    }

    /// Runs a read on a free reader connection (a consistent snapshot per statement).
    pub async fn read<T, F>(&self, work: F) -> Result<T, DbError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, rusqlite::Error> + Send + 'static,
    {
        let readers = self.readers.clone();
        tokio::task::spawn_blocking(move || {
            let guard = free_reader(&readers)?;
            Ok(work(&guard)?)
        })
        .await
        .map_err(|e| DbError::Worker(e.to_string()))?
    }
}

impl Database {
    /// A point read by primary key: on a free reader connection it runs at once on the calling
    /// thread (it takes microseconds, less than handing it to a blocking thread and back);
    /// when every reader is busy it waits on a blocking thread like [`Database::read`].
    pub async fn read_point<T, F>(&self, work: F) -> Result<T, DbError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, rusqlite::Error> + Send + 'static,
    {
        for reader in self.readers.iter() {
            if let Ok(guard) = reader.try_lock() {
                return Ok(work(&guard)?);
            }
        }
        self.read(work).await
    }
}

/// The first reader connection nobody holds, else waits for the first.
fn free_reader(readers: &[Mutex<Connection>]) -> Result<MutexGuard<'_, Connection>, DbError> {
    for reader in readers {
        if let Ok(guard) = reader.try_lock() {
            return Ok(guard);
        }
    }
    readers[0]
        .lock()
        .map_err(|e| DbError::Worker(e.to_string()))
}

/// The checkpointer thread: while a handle of the database lives, folds the write-ahead log into
/// the database file every [`CHECKPOINT_EVERY`] (passive: pages a reader still needs stay in the
/// log until the next pass), so the log stays small without a commit ever paying for it.
fn checkpoint_while(conn: Connection, alive: std::sync::Weak<()>) {
    while alive.strong_count() > 0 {
        std::thread::sleep(CHECKPOINT_EVERY);
        if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
            tracing::warn!(error = %e, "checkpointing the embedded database failed");
        }
    }
}

/// The writer thread: until every `Database` handle is gone, takes the writes waiting, runs
/// them in one transaction and answers each after the commit.
fn write_batches(
    mut conn: Connection,
    queue: mpsc::Receiver<Box<dyn PendingWrite>>,
    commits: &AtomicU64,
) {
    while let Ok(first) = queue.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        let committed = run_batch(&mut conn, &mut batch);
        commits.fetch_add(1, Ordering::Relaxed);
        for pending in batch {
            pending.finish(committed.clone());
        }
    }
}

fn run_batch(conn: &mut Connection, batch: &mut [Box<dyn PendingWrite>]) -> Result<(), String> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| e.to_string())?;
    for pending in batch.iter_mut() {
        tx.execute_batch("SAVEPOINT one_write")
            .map_err(|e| e.to_string())?;
        // A panicking write is a failed write, not a dead writer thread.
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| pending.run(&tx)));
        let step = if ran.unwrap_or(false) {
            "RELEASE one_write"
        } else {
            "ROLLBACK TO one_write; RELEASE one_write"
        };
        tx.execute_batch(step).map_err(|e| e.to_string())?;
    }
    tx.commit().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(tx: &rusqlite::Transaction<'_>) -> Result<i64, rusqlite::Error> {
        tx.query_row("SELECT COUNT(*) FROM items", [], |r| r.get(0))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_failing_write_in_a_batch_is_rolled_back_alone() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(&dir.path().join("db.sqlite")).unwrap();
        let writes = (0..300).map(|i| {
            let db = db.clone();
            async move {
                db.write(move |tx| {
                    tx.execute(
                        "INSERT INTO items (pk, sk, data) VALUES (?1, 'x', '{}')",
                        [format!("P{i}")],
                    )?;
                    if i % 3 == 0 {
                        // Fails after writing: its own insert must not survive.
                        return Err(rusqlite::Error::InvalidQuery);
                    }
                    Ok(i)
                })
                .await
            }
        });
        let results = futures::future::join_all(writes).await;
        for (i, result) in results.iter().enumerate() {
            assert_eq!(result.is_ok(), i % 3 != 0, "write {i}: {result:?}");
        }
        assert!(
            db.commits() < 300,
            "300 concurrent writes took {} commits: none were grouped",
            db.commits()
        );
        let stored = db.write(count).await.unwrap();
        assert_eq!(stored, 200);
        let failed_present: i64 = db
            .read(|c| {
                c.query_row(
                    "SELECT COUNT(*) FROM items WHERE pk IN ('P0', 'P3', 'P297')",
                    [],
                    |r| r.get(0),
                )
            })
            .await
            .unwrap();
        assert_eq!(failed_present, 0);
    }

    #[tokio::test]
    async fn a_panicking_write_fails_alone_and_the_writer_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(&dir.path().join("db.sqlite")).unwrap();
        let panicked = db
            .write(|tx| -> Result<(), rusqlite::Error> {
                tx.execute(
                    "INSERT INTO items (pk, sk, data) VALUES ('A', 'x', '{}')",
                    [],
                )?;
                panic!("a write that panics")
            })
            .await;
        assert!(panicked.is_err());
        db.write(|tx| {
            tx.execute(
                "INSERT INTO items (pk, sk, data) VALUES ('B', 'x', '{}')",
                [],
            )
        })
        .await
        .unwrap();
        assert_eq!(db.write(count).await.unwrap(), 1);
    }

    #[tokio::test]
    async fn the_log_is_folded_into_the_database_file_without_a_commit_doing_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("db.sqlite");
        let db = Database::open(&file).unwrap();
        let writes = (0..2000).map(|i| {
            let db = db.clone();
            async move {
                db.write(move |tx| {
                    tx.execute(
                        "INSERT INTO items (pk, sk, data) VALUES (?1, 'x', ?2)",
                        rusqlite::params![format!("P{i}"), "d".repeat(1000)],
                    )
                })
                .await
            }
        });
        for result in futures::future::join_all(writes).await {
            result.unwrap();
        }
        // About 2 MB written; the writer never checkpoints, so only the checkpointer can have
        // moved it from the log into the file.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let size = std::fs::metadata(&file).unwrap().len();
            if size >= 2_000_000 {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the file stayed at {size} bytes"
            );
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }
}
