//! Persistence of executions, so a restarted process resumes them.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// Where executions are persisted. `save` is called after every transition (and before every
/// dispatch); it replaces the previous snapshot of the same `execution_id`.
#[async_trait]
pub trait ExecutionJournal: Send + Sync {
    /// Stores (insert or replace) a snapshot.
    async fn save(&self, snapshot: &ExecutionSnapshot) -> Result<(), JournalError>;
    /// Every snapshot whose status is `Running`.
    async fn load_unfinished(&self) -> Result<Vec<ExecutionSnapshot>, JournalError>;
    /// One snapshot by execution id.
    async fn load(&self, execution_id: &str) -> Result<Option<ExecutionSnapshot>, JournalError>;
}

/// A journal failure (the adapter's message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("execution journal: {0}")]
pub struct JournalError(pub String);

/// The status of an execution, as Step Functions names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ExecutionStatus {
    /// Still running (including waiting for a callback).
    Running,
    /// Reached a Succeed state or an End.
    Succeeded,
    /// Reached a Fail state or an uncaught error.
    Failed,
    /// The machine's top-level `TimeoutSeconds` passed.
    TimedOut,
    /// Stopped by `stop_execution`.
    Aborted,
}

/// Where inside the current state an execution is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Step {
    /// About to run the current state from its input.
    Entering,
    /// A Task is being dispatched (a restart dispatches it again).
    Dispatching,
    /// A `….waitForTaskToken` Task was dispatched and waits for its callback.
    AwaitingCallback,
    /// A Task failed and waits out its retry interval (`wake_at_ms`), then is dispatched again.
    RetryBackoff,
    /// A Wait state waits until `wake_at_ms`, then moves on with `pending_output`.
    Waiting,
}

/// Everything needed to describe and to resume an execution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecutionSnapshot {
    /// Execution id (ARN-shaped: `arn:aws:states:local:000000000000:execution:<machine>:<name>`).
    pub execution_id: String,
    /// Execution name (unique per state machine).
    pub name: String,
    /// The state machine's name.
    pub definition_name: String,
    /// The fingerprint of the definition the execution started with.
    pub definition_version: String,
    /// Status.
    pub status: ExecutionStatus,
    /// The execution's input (`$$.Execution.Input`).
    pub input: Value,
    /// Start time, RFC 3339 (`$$.Execution.StartTime`).
    pub start_time: String,
    /// Start time, milliseconds since the Unix epoch.
    pub start_time_ms: u64,
    /// When the execution must time out (top-level `TimeoutSeconds`), ms since the epoch.
    pub execution_deadline_ms: Option<u64>,
    /// Stop time, RFC 3339, once finished.
    pub stop_time: Option<String>,
    /// The current state (the last one, once finished).
    pub current_state: String,
    /// The current state's raw input.
    pub current_input: Value,
    /// When the current state was entered, RFC 3339 (`$$.State.EnteredTime`).
    pub entered_time: String,
    /// Where inside the current state the execution is.
    pub step: Step,
    /// Retries used so far in the current Task, per `Retry` entry.
    pub retry_counts: Vec<u32>,
    /// The current Task attempt (1-based).
    pub attempt: u32,
    /// The token of the current `….waitForTaskToken` attempt.
    pub task_token: Option<String>,
    /// The current Task attempt fails with `States.Timeout` at this time (ms since the epoch).
    pub task_timeout_at_ms: Option<u64>,
    /// The current Task attempt fails with `States.HeartbeatTimeout` at this time.
    pub heartbeat_timeout_at_ms: Option<u64>,
    /// End of a retry interval or of a Wait state (ms since the epoch).
    pub wake_at_ms: Option<u64>,
    /// A Wait state's output, carried until it moves on.
    pub pending_output: Option<Value>,
    /// The output, once succeeded.
    pub output: Option<Value>,
    /// The error name, once failed / timed out / aborted.
    pub error: Option<String>,
    /// The cause, once failed / timed out / aborted.
    pub cause: Option<String>,
    /// How many times this snapshot was saved (a sequence number for adapters).
    pub revision: u64,
}

impl ExecutionSnapshot {
    /// Whether the execution has finished.
    pub fn is_finished(&self) -> bool {
        self.status != ExecutionStatus::Running
    }
}

/// A journal kept in memory: for tests and for callers that want no persistence. Clones of the
/// `Arc` holding it share its contents, so a second `Runner` over the same `MemoryJournal` sees
/// what the first one saved (which is how the restart tests work).
#[derive(Debug, Default)]
pub struct MemoryJournal {
    snapshots: Mutex<BTreeMap<String, ExecutionSnapshot>>,
}

impl MemoryJournal {
    /// An empty journal.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every stored snapshot, finished or not.
    pub fn all(&self) -> Vec<ExecutionSnapshot> {
        self.lock().values().cloned().collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, ExecutionSnapshot>> {
        // A panic while holding the lock cannot leave a half-written map (inserts are atomic),
        // so a poisoned lock is safe to keep using.
        self.snapshots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[async_trait]
impl ExecutionJournal for MemoryJournal {
    async fn save(&self, snapshot: &ExecutionSnapshot) -> Result<(), JournalError> {
        self.lock()
            .insert(snapshot.execution_id.clone(), snapshot.clone());
        Ok(())
    }

    async fn load_unfinished(&self) -> Result<Vec<ExecutionSnapshot>, JournalError> {
        Ok(self
            .lock()
            .values()
            .filter(|s| !s.is_finished())
            .cloned()
            .collect())
    }

    async fn load(&self, execution_id: &str) -> Result<Option<ExecutionSnapshot>, JournalError> {
        Ok(self.lock().get(execution_id).cloned())
    }
}
