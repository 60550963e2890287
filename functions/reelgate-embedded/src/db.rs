//! The embedded database: one SQLite file shared by the item store, the queue and the workflow
//! journal. WAL mode lets readers run beside a writer; writers serialise with `BEGIN IMMEDIATE`
//! and a busy timeout, which also covers a second process (the admin command) on the same file.

use rusqlite::{Connection, TransactionBehavior};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("the database worker stopped: {0}")]
    Worker(String),
}

#[derive(Clone)]
pub struct Database {
    writer: Arc<Mutex<Connection>>,
    reader: Arc<Mutex<Connection>>,
    path: PathBuf,
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
        let reader = open_connection(path)?;
        Ok(Database {
            writer: Arc::new(Mutex::new(writer)),
            reader: Arc::new(Mutex::new(reader)),
            path: path.to_owned(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `work` inside one immediate transaction, committed when it returns Ok.
    pub async fn write<T, F>(&self, work: F) -> Result<T, DbError>
    where
        T: Send + 'static,
        F: FnOnce(&rusqlite::Transaction<'_>) -> Result<T, rusqlite::Error> + Send + 'static,
    {
        let conn = self.writer.clone();
        tokio::task::spawn_blocking(move || {
            let mut guard = conn.lock().map_err(|e| DbError::Worker(e.to_string()))?;
            let tx = guard.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let value = work(&tx)?;
            tx.commit()?;
            Ok(value)
        })
        .await
        .map_err(|e| DbError::Worker(e.to_string()))?
    }

    /// Runs a read on the reader connection (a consistent snapshot per statement).
    pub async fn read<T, F>(&self, work: F) -> Result<T, DbError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, rusqlite::Error> + Send + 'static,
    {
        let conn = self.reader.clone();
        tokio::task::spawn_blocking(move || {
            let guard = conn.lock().map_err(|e| DbError::Worker(e.to_string()))?;
            Ok(work(&guard)?)
        })
        .await
        .map_err(|e| DbError::Worker(e.to_string()))?
    }
}
