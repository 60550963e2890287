//! The embedded database: one SQLite file shared by the item store, the queue and the workflow
//! journal. WAL mode lets readers run beside a writer. A write runs on the caller's thread when
//! the write connection is free, else it waits for one writer thread that group-commits every
//! waiting write (see [`Database::write`]); either way inside `BEGIN IMMEDIATE`, which also
//! serialises writes with a second process (the admin command) on the same file.

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
    /// The one write connection: taken by a caller that finds it free, else by the writer thread.
    writer: Arc<Mutex<Connection>>,
    writes: Arc<mpsc::Sender<WriterJob>>,
    readers: Arc<Vec<Mutex<Connection>>>,
    commits: Arc<AtomicU64>,
    /// Writes handed to the writer thread (the write connection was busy).
    queued: Arc<AtomicU64>,
    /// Checkpoint passes the checkpointer has finished.
    checkpoints: Arc<AtomicU64>,
    /// Held by every handle; the checkpointer stops once the last one is gone.
    _checkpointer_alive: Arc<()>,
    path: PathBuf,
}

/// How often the checkpointer folds the write-ahead log back into the database file.
const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

/// Log frames (pages of 4 KiB) beyond which a checkpoint pass also starts the log again from its
/// beginning, bounding the log file near 4 MiB plus what one pass interval writes. SQLite's own
/// automatic checkpoint uses the same threshold.
const RESTART_AT_FRAMES: i64 = 1000;

/// How long a log restart waits for readers of older snapshots while it holds this process's
/// writes back.
const RESTART_WAIT: std::time::Duration = std::time::Duration::from_millis(20);

/// How often a log restart looks again for readers of older snapshots.
const RESTART_POLL: std::time::Duration = std::time::Duration::from_micros(50);

/// Writes waiting when the writer takes a batch, at most, committed together.
const MAX_BATCH: usize = 128;

/// Reader connections: reads of different requests run side by side (WAL lets them run beside
/// the writer too) instead of queueing behind one connection.
const READERS: usize = 4;

/// What the writer thread is asked to do.
enum WriterJob {
    /// A caller's write, for the next batch.
    Write(Box<dyn PendingWrite>),
    /// Restart the write-ahead log (the checkpointer found it long): done here, at the writer's
    /// own priority, because it holds the write connection while it runs.
    RestartLog,
}

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

/// How long a queued write waits for another process's write lock before it fails.
const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

fn open_connection(path: &Path) -> Result<Connection, rusqlite::Error> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
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
        let writer = Arc::new(Mutex::new(writer));
        let (writes, queue) = mpsc::channel();
        let commits = Arc::new(AtomicU64::new(0));
        let counted = commits.clone();
        let shared = writer.clone();
        std::thread::Builder::new()
            .name("reelgate-sqlite-writer".into())
            .spawn(move || write_batches(&shared, queue, &counted))
            .map_err(|e| DbError::Worker(e.to_string()))?;
        let alive = Arc::new(());
        let watched = Arc::downgrade(&alive);
        let checkpoints = Arc::new(AtomicU64::new(0));
        let passes = checkpoints.clone();
        let restarts = writes.clone();
        std::thread::Builder::new()
            .name("reelgate-sqlite-checkpoint".into())
            .spawn(move || checkpoint_while(checkpointer, restarts, watched, &passes))
            .map_err(|e| DbError::Worker(e.to_string()))?;
        Ok(Database {
            writer,
            writes: Arc::new(writes),
            readers: Arc::new(readers),
            commits,
            queued: Arc::new(AtomicU64::new(0)),
            checkpoints,
            _checkpointer_alive: alive,
            path: path.to_owned(),
        })
    }

    /// Batches committed so far (each holds one or more writes).
    pub fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }

    /// Checkpoint passes finished so far.
    pub fn checkpoints(&self) -> u64 {
        self.checkpoints.load(Ordering::Relaxed)
    }

    /// Writes that waited for the writer thread so far.
    pub fn queued_writes(&self) -> u64 {
        self.queued.load(Ordering::Relaxed)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `work` atomically inside an immediate transaction and answers once it is committed.
    ///
    /// When the write connection is free, the write runs at once on the calling thread, in a
    /// transaction of its own: a small write takes tens of microseconds, less than waking another
    /// thread and being woken back, which on a busy machine waits for a free core. When the
    /// connection is busy (another write is running) or another process holds the file's write
    /// lock, the write is queued instead: one writer thread takes every write waiting at that
    /// moment, runs each under its own savepoint (a failing one is rolled back alone) and commits
    /// them together, so a burst of concurrent writes pays for one commit instead of one each.
    /// Either way a write is answered only after its commit, atomic and durable as with a
    /// transaction of its own.
    pub async fn write<T, F>(&self, work: F) -> Result<T, DbError>
    where
        T: Send + 'static,
        F: FnOnce(&rusqlite::Transaction<'_>) -> Result<T, rusqlite::Error> + Send + 'static,
    {
        let work = match self.writer.try_lock() {
            Ok(mut conn) => match write_inline(&mut conn, work) {
                Inline::Done(outcome) => {
                    self.commits.fetch_add(1, Ordering::Relaxed);
                    return outcome;
                }
                Inline::Busy(work) => work,
            },
            Err(_) => work,
        };
        self.write_queued(work).await
    }

    /// Queues `work` for the writer thread's next batch.
    async fn write_queued<T, F>(&self, work: F) -> Result<T, DbError>
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
            .send(WriterJob::Write(Box::new(pending)))
            .map_err(|_| DbError::Worker("the database writer stopped".into()))?;
        self.queued.fetch_add(1, Ordering::Relaxed);
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
    /// Runs a read at once on the calling thread, waiting for a reader connection if every one
    /// is busy: for startup, before any runtime serves requests.
    pub fn read_now<T, F>(&self, work: F) -> Result<T, DbError>
    where
        F: FnOnce(&Connection) -> Result<T, rusqlite::Error>,
    {
        let guard = free_reader(&self.readers)?;
        Ok(work(&guard)?)
    }

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

enum Inline<T, F> {
    Done(Result<T, DbError>),
    /// Another process holds the write lock: the work, not run, goes to the writer thread,
    /// which waits for the lock (the calling thread must not).
    Busy(F),
}

/// Runs one write in a transaction of its own on the calling thread, without waiting for
/// another process's write lock.
fn write_inline<T, F>(conn: &mut Connection, work: F) -> Inline<T, F>
where
    F: FnOnce(&rusqlite::Transaction<'_>) -> Result<T, rusqlite::Error>,
{
    if let Err(e) = conn.busy_timeout(std::time::Duration::ZERO) {
        return Inline::Done(Err(e.into()));
    }
    // A failed begin leaves the zero timeout behind: the writer thread sets its own before each
    // batch, and every inline write sets zero again.
    let tx = match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
        Ok(tx) => tx,
        Err(rusqlite::Error::SqliteFailure(f, _))
            if f.code == rusqlite::ErrorCode::DatabaseBusy =>
        {
            return Inline::Busy(work)
        }
        Err(e) => return Inline::Done(Err(e.into())),
    };
    if let Err(e) = tx.busy_timeout(BUSY_TIMEOUT) {
        return Inline::Done(Err(e.into()));
    }
    // A panicking write is a failed write; the connection stays usable for the next one.
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(&tx)));
    Inline::Done(match ran {
        Ok(Ok(value)) => tx.commit().map(|()| value).map_err(DbError::from),
        Ok(Err(e)) => {
            let _ = tx.rollback();
            Err(e.into())
        }
        Err(_) => {
            let _ = tx.rollback();
            Err(DbError::Worker("the write panicked".into()))
        }
    })
}

/// The checkpointer thread: while a handle of the database lives, folds the write-ahead log into
/// the database file every [`CHECKPOINT_EVERY`], so the log stays small without a commit ever
/// paying for it.
///
/// Each pass copies passively on a connection of its own (pages a reader still needs stay in the
/// log), which blocks no one, at the lowest CPU priority: a pass copies the pages of every write
/// since the last one (at 1,000 requests a second, megabytes), and at normal priority that copy
/// held the CPU from the requests sharing it for milliseconds at a time. That alone never lets the
/// log start again from its beginning on a busy server: a write restarts the log only when it
/// begins with every frame copied and no reader on an older snapshot, and with writes and reads
/// always running that moment never comes (the log grew by 134 MB within 15 s at 1,000 requests/s,
/// every append zeroing new file blocks). So once the log holds more than [`RESTART_AT_FRAMES`],
/// the pass asks the writer thread to restart the log: it takes the write connection, which stops
/// this process's writes without waiting for SQLite's file lock, copies the few frames committed
/// meanwhile and waits up to [`RESTART_WAIT`] for the readers of older snapshots, which take
/// microseconds. The next write then starts the log again. If a reader (or another process's
/// write) outlasts the wait, the restart gives up and a later pass asks again: writes are never
/// held longer than that wait plus the copy.
///
/// The restart runs on the writer thread, not here: a thread of the lowest priority that held
/// the write connection could be kept off the CPU by the very requests waiting for it.
fn checkpoint_while(
    conn: Connection,
    restarts: mpsc::Sender<WriterJob>,
    alive: std::sync::Weak<()>,
    passes: &AtomicU64,
) {
    lower_this_threads_priority();
    while alive.strong_count() > 0 {
        std::thread::sleep(CHECKPOINT_EVERY);
        let passive = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get::<_, i64>(1));
        match passive {
            Ok(frames) if frames > RESTART_AT_FRAMES => {
                // The writer thread is gone only once every handle is, and then so is this loop.
                let _ = restarts.send(WriterJob::RestartLog);
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "checkpointing the embedded database failed"),
        }
        passes.fetch_add(1, Ordering::Relaxed);
    }
}

/// Gives the calling thread the lowest CPU priority (nice 19), so that it runs in the time the
/// request path leaves. Linux applies a nice value to one thread; elsewhere this does nothing.
fn lower_this_threads_priority() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid and setpriority take and return plain integers.
        let failed = unsafe {
            let thread = libc::syscall(libc::SYS_gettid) as libc::id_t;
            libc::setpriority(libc::PRIO_PROCESS, thread, 19) != 0
        };
        if failed {
            tracing::debug!("could not lower the checkpointer's priority");
        }
    }
}

/// The busy handler of a log restart: readers of older snapshots finish within microseconds, so
/// it looks again every [`RESTART_POLL`] (SQLite's own handler sleeps 1, 2, 5… ms, holding the
/// writes back that long) and gives up after [`RESTART_WAIT`].
fn wait_for_readers(attempts: i32) -> bool {
    let limit = RESTART_WAIT.as_micros() / RESTART_POLL.as_micros();
    if u128::try_from(attempts).unwrap_or(u128::MAX) >= limit {
        return false;
    }
    std::thread::sleep(RESTART_POLL);
    true
}

/// Copies the rest of the log and waits briefly for the readers of older snapshots, holding the
/// write connection so that no write of this process appends meanwhile.
fn restart_log(writer: &Mutex<Connection>) {
    let conn = writer
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let restarted = conn.busy_handler(Some(wait_for_readers)).and_then(|()| {
        conn.query_row("PRAGMA wal_checkpoint(RESTART)", [], |r| r.get::<_, i64>(0))
    });
    // Replaces the handler; inline writes and the writer thread set their own timeouts anyway.
    let _ = conn.busy_timeout(BUSY_TIMEOUT);
    match restarted {
        Ok(0) => {}
        // A reader (or another process's write) outlasted the wait: the next pass retries.
        Ok(_) => tracing::debug!("the embedded database's log was not restarted this pass"),
        Err(e) => tracing::warn!(error = %e, "restarting the embedded database's log failed"),
    }
}

/// The writer thread: until every `Database` handle and the checkpointer are gone, takes the
/// writes waiting, runs them in one transaction and answers each after the commit; restarts the
/// log when the checkpointer asks, between batches.
fn write_batches(
    writer: &Mutex<Connection>,
    queue: mpsc::Receiver<WriterJob>,
    commits: &AtomicU64,
) {
    while let Ok(job) = queue.recv() {
        let first = match job {
            WriterJob::Write(first) => first,
            WriterJob::RestartLog => {
                restart_log(writer);
                continue;
            }
        };
        let mut batch = vec![first];
        let mut restart = false;
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(WriterJob::Write(next)) => batch.push(next),
                Ok(WriterJob::RestartLog) => {
                    restart = true;
                    break;
                }
                Err(_) => break,
            }
        }
        // A panic is caught inside each write, so the lock is never poisoned by one; recover it
        // all the same rather than stop writing.
        let mut conn = writer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let committed = run_batch(&mut conn, &mut batch);
        drop(conn);
        commits.fetch_add(1, Ordering::Relaxed);
        for pending in batch {
            pending.finish(committed.clone());
        }
        if restart {
            restart_log(writer);
        }
    }
}

/// Why a group commit is as safe as a commit per write: the batch is one SQLite transaction, and
/// no caller is answered before its COMMIT returns (`write_batches` answers after it). A crash
/// before the COMMIT loses the whole batch, but nobody was told any of it happened; a crash after
/// it keeps every write in it. A savepoint rolled back (a failed condition, an error, a panic)
/// takes exactly its own write's changes with it, so a batch never commits half of one write, and
/// a write's condition sees the writes committed before it and its batch mates released before
/// it, as a transaction of its own run in that order would. Durability is the same as for an
/// inline write (WAL, `synchronous = NORMAL`: a commit survives the process, and the operating
/// system's crash may drop the last commits, batched or not).
fn run_batch(conn: &mut Connection, batch: &mut [Box<dyn PendingWrite>]) -> Result<(), String> {
    // Unlike an inline write, the writer thread waits for another process's lock.
    conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| e.to_string())?;
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

    /// Waits (bounded) until `n` writes have gone to the writer thread.
    async fn until_queued(db: &Database, n: u64) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while db.queued_writes() < n {
            assert!(
                std::time::Instant::now() < deadline,
                "writes were not queued"
            );
            tokio::task::yield_now().await;
        }
    }

    fn insert(tx: &rusqlite::Transaction<'_>, pk: &str) -> Result<usize, rusqlite::Error> {
        tx.execute(
            "INSERT INTO items (pk, sk, data) VALUES (?1, 'x', '{}')",
            [pk],
        )
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    #[allow(clippy::await_holding_lock)] // the held write connection is the point of the test
    async fn writes_waiting_for_a_busy_connection_are_grouped_and_a_failing_one_is_rolled_back_alone(
    ) {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(&dir.path().join("db.sqlite")).unwrap();
        // Hold the write connection, as a long write would: every write below finds it busy.
        let held = db.writer.lock().unwrap();
        let writes: Vec<_> = (0..300)
            .map(|i| {
                let db = db.clone();
                tokio::spawn(async move {
                    db.write(move |tx| {
                        insert(tx, &format!("P{i}"))?;
                        if i % 3 == 0 {
                            // Fails after writing: its own insert must not survive.
                            return Err(rusqlite::Error::InvalidQuery);
                        }
                        Ok(i)
                    })
                    .await
                })
            })
            .collect();
        until_queued(&db, 300).await;
        drop(held);
        for (i, write) in writes.into_iter().enumerate() {
            let result = write.await.unwrap();
            assert_eq!(result.is_ok(), i % 3 != 0, "write {i}: {result:?}");
        }
        assert!(
            db.commits() < 300,
            "300 queued writes took {} commits: none were grouped",
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
    async fn a_write_on_a_free_connection_runs_and_commits_on_the_calling_thread() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(&dir.path().join("db.sqlite")).unwrap();
        let caller = std::thread::current().id();
        let ran_on = db
            .write(|tx| {
                insert(tx, "A")?;
                Ok(std::thread::current().id())
            })
            .await
            .unwrap();
        assert_eq!(ran_on, caller);
        assert_eq!((db.commits(), db.queued_writes()), (1, 0));
        // Committed: another connection sees it.
        assert_eq!(db.read(count_on).await.unwrap(), 1);
        // A failing inline write leaves nothing behind.
        let failed = db
            .write(|tx| {
                insert(tx, "B")?;
                Err::<(), _>(rusqlite::Error::InvalidQuery)
            })
            .await;
        assert!(failed.is_err());
        assert_eq!(db.read(count_on).await.unwrap(), 1);
    }

    fn count_on(c: &Connection) -> Result<i64, rusqlite::Error> {
        c.query_row("SELECT COUNT(*) FROM items", [], |r| r.get(0))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_write_blocked_by_another_process_waits_on_the_writer_thread_not_the_caller() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("db.sqlite");
        let db = Database::open(&file).unwrap();
        // Another process (the admin command) holding the file's write lock.
        let other = open_connection(&file).unwrap();
        other.execute_batch("BEGIN IMMEDIATE").unwrap();
        insert_on(&other, "OTHER");
        let write = {
            let db = db.clone();
            tokio::spawn(async move {
                db.write(|tx| {
                    insert(tx, "MINE")?;
                    Ok(std::thread::current().name().map(str::to_owned))
                })
                .await
            })
        };
        until_queued(&db, 1).await;
        assert!(!write.is_finished(), "the write ran under another's lock");
        other.execute_batch("COMMIT").unwrap();
        let ran_on = write.await.unwrap().unwrap();
        assert_eq!(ran_on.as_deref(), Some("reelgate-sqlite-writer"));
        assert_eq!(db.read(count_on).await.unwrap(), 2);
    }

    fn insert_on(c: &Connection, pk: &str) {
        c.execute(
            "INSERT INTO items (pk, sk, data) VALUES (?1, 'x', '{}')",
            [pk],
        )
        .unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[allow(clippy::await_holding_lock)] // the held write connection queues the second write
    async fn a_panicking_write_fails_alone_inline_and_queued_and_writing_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(&dir.path().join("db.sqlite")).unwrap();
        let panicking = |pk: &'static str| {
            move |tx: &rusqlite::Transaction<'_>| -> Result<(), rusqlite::Error> {
                insert(tx, pk)?;
                panic!("a write that panics")
            }
        };
        assert!(db.write(panicking("INLINE")).await.is_err());
        let held = db.writer.lock().unwrap();
        let queued = {
            let db = db.clone();
            tokio::spawn(async move { db.write(panicking("QUEUED")).await })
        };
        until_queued(&db, 1).await;
        drop(held);
        assert!(queued.await.unwrap().is_err());
        db.write(|tx| insert(tx, "B")).await.unwrap();
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

    /// The frames in the write-ahead log now (SQLite's own count, from a checkpoint that copies
    /// nothing while the log is in use).
    fn log_frames(file: &Path) -> i64 {
        let c = open_connection(file).unwrap();
        c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get(1))
            .unwrap()
    }

    /// Writes `n` rows of about 300 bytes each.
    async fn write_rows(db: &Database, from: usize, n: usize) {
        for i in from..from + n {
            db.write(move |tx| {
                tx.execute(
                    "INSERT INTO items (pk, sk, data) VALUES (?1, 'x', ?2)",
                    rusqlite::params![format!("P{i}"), "d".repeat(300)],
                )
            })
            .await
            .unwrap();
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_log_file_stays_bounded_while_reads_never_stop() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("db.sqlite");
        let log = dir.path().join("db.sqlite-wal");
        let db = Database::open(&file).unwrap();
        // Readers that always have a snapshot open somewhere, as a busy server's requests do
        // (each a lookup by key, as the item store's reads are).
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let readers: Vec<_> = (0..3)
            .map(|_| {
                let (db, stop) = (db.clone(), stop.clone());
                std::thread::spawn(move || {
                    let c = open_connection(db.path()).unwrap();
                    let mut i = 0;
                    while !stop.load(Ordering::Relaxed) {
                        let _ = c.query_row(
                            "SELECT data FROM items WHERE pk = ?1 AND sk = 'x'",
                            [format!("P{i}")],
                            |r| r.get::<_, String>(0),
                        );
                        i = (i + 7) % 1000;
                    }
                })
            })
            .collect();
        // The log's frames per row, from a fresh log.
        const CALIBRATION_ROWS: usize = 200;
        write_rows(&db, 0, CALIBRATION_ROWS).await;
        let frames_per_row = log_frames(&file) as f64 / CALIBRATION_ROWS as f64;
        // Writes that never pause, across several checkpoint passes: a log is only ever started
        // again by a write that finds it wholly copied, which without the restart never happens.
        const PASSES: u64 = 8;
        let until = db.checkpoints() + PASSES;
        let mut rows = CALIBRATION_ROWS;
        while db.checkpoints() < until {
            write_rows(&db, rows, 20).await;
            rows += 20;
        }
        stop.store(true, Ordering::Relaxed);
        for reader in readers {
            reader.join().unwrap();
        }
        // A log that never starts again holds every row; one that does is overwritten from its
        // beginning, so its file holds about one pass's rows.
        let size = std::fs::metadata(&log).unwrap().len() as f64;
        let all_rows = rows as f64 * frames_per_row * 4096.0;
        assert!(
            size < all_rows / 3.0,
            "the log file is {size} bytes after {rows} rows ({all_rows} bytes of log): it never started again"
        );
    }
}
