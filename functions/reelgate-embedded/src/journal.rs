//! The workflow runner's execution journal: one row per execution in the shared SQLite file, so
//! a restarted process resumes what was running. Its own module because three readers share it
//! without sharing each other: the runner (`workflow`), the retention sweep (finished
//! executions carry prompts) and the reconcile pass (executions that ended unsuccessfully).

use crate::db::Database;
use async_trait::async_trait;
use reelgate_asl::{ExecutionJournal, ExecutionSnapshot, JournalError};
use rusqlite::{params, OptionalExtension};

/// The journal: one row per execution in the shared SQLite file.
pub struct SqliteJournal {
    db: Database,
}

impl SqliteJournal {
    pub fn new(db: Database) -> Self {
        SqliteJournal { db }
    }
}

fn journal_err(e: impl std::fmt::Display) -> JournalError {
    JournalError(e.to_string())
}

#[async_trait]
impl ExecutionJournal for SqliteJournal {
    async fn save(&self, snapshot: &ExecutionSnapshot) -> Result<(), JournalError> {
        let text = serde_json::to_string(snapshot).map_err(journal_err)?;
        let id = snapshot.execution_id.clone();
        let running = !snapshot.is_finished();
        self.db
            .write(move |tx| {
                tx.execute(
                    "INSERT INTO workflow_executions (execution_id, running, snapshot) VALUES (?1, ?2, ?3)
                     ON CONFLICT (execution_id) DO UPDATE SET running = excluded.running, snapshot = excluded.snapshot",
                    params![id, running, text],
                )
            })
            .await
            .map(|_| ())
            .map_err(journal_err)
    }

    async fn load_unfinished(&self) -> Result<Vec<ExecutionSnapshot>, JournalError> {
        let rows: Vec<String> = self
            .db
            .read(|c| {
                let mut stmt =
                    c.prepare("SELECT snapshot FROM workflow_executions WHERE running = 1")?;
                let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
                rows.collect()
            })
            .await
            .map_err(journal_err)?;
        rows.iter()
            .map(|t| serde_json::from_str(t).map_err(journal_err))
            .collect()
    }

    async fn load(&self, execution_id: &str) -> Result<Option<ExecutionSnapshot>, JournalError> {
        self.load_one(execution_id).await
    }
}

impl SqliteJournal {
    /// Deletes executions that finished and started before `before_ms`: their input holds the
    /// job's prompt, which must not outlive the job. Returns how many.
    pub async fn prune_finished(&self, before_ms: i64) -> Result<usize, JournalError> {
        self.db
            .write(move |tx| {
                tx.execute(
                    "DELETE FROM workflow_executions WHERE running = 0 \
                     AND json_extract(snapshot, '$.start_time_ms') < ?1",
                    params![before_ms],
                )
            })
            .await
            .map_err(journal_err)
    }

    /// Executions that ended without succeeding (failed, timed out, aborted).
    pub async fn unsuccessful(&self) -> Result<Vec<ExecutionSnapshot>, JournalError> {
        let rows: Vec<String> = self
            .db
            .read(|c| {
                let mut stmt =
                    c.prepare("SELECT snapshot FROM workflow_executions WHERE running = 0")?;
                let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
                rows.collect()
            })
            .await
            .map_err(journal_err)?;
        let all: Result<Vec<ExecutionSnapshot>, _> = rows
            .iter()
            .map(|t| serde_json::from_str(t).map_err(journal_err))
            .collect();
        Ok(all?
            .into_iter()
            .filter(|s| s.status != reelgate_asl::ExecutionStatus::Succeeded)
            .collect())
    }

    async fn load_one(
        &self,
        execution_id: &str,
    ) -> Result<Option<ExecutionSnapshot>, JournalError> {
        let id = execution_id.to_owned();
        let row: Option<String> = self
            .db
            .read(move |c| {
                c.query_row(
                    "SELECT snapshot FROM workflow_executions WHERE execution_id = ?1",
                    params![id],
                    |r| r.get(0),
                )
                .optional()
            })
            .await
            .map_err(journal_err)?;
        row.map(|t| serde_json::from_str(&t).map_err(journal_err))
            .transpose()
    }
}
