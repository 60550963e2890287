//! The embedded runner: executions as tokio tasks, journaled after every transition.

use crate::dispatch::{lambda_invoke_result, TaskCall, TaskDispatcher, TaskFailure, TaskOutcome};
use crate::error::{names, StatesError};
use crate::journal::{ExecutionJournal, ExecutionSnapshot, ExecutionStatus, JournalError, Step};
use crate::model::{
    error_matches, place_result, select, Source, State, StateKind, StateMachine, TaskState,
    Transition, WaitFor, LAMBDA_INVOKE,
};
use crate::time::{now_ms, rfc3339};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::AbortHandle;

/// Errors of the runner's API, named like Step Functions' API errors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunnerError {
    /// An execution with this name exists with a different input, or has already finished.
    #[error("ExecutionAlreadyExists: {0}")]
    ExecutionAlreadyExists(String),
    /// The execution name breaks Step Functions' naming rules.
    #[error("InvalidName: {0}")]
    InvalidName(String),
    /// No execution has this id.
    #[error("ExecutionDoesNotExist: {0}")]
    ExecutionDoesNotExist(String),
    /// The token is malformed or names no execution of this state machine.
    #[error("InvalidToken: {0}")]
    InvalidToken(String),
    /// The token was valid but its task is no longer waiting (completed, failed, timed out,
    /// retried, or the execution stopped): a duplicate callback lands here.
    #[error("TaskTimedOut: {0}")]
    TaskTimedOut(String),
    /// `wait_for` gave up before the execution finished.
    #[error("timed out waiting for execution {0}")]
    WaitTimedOut(String),
    /// The runner was shut down while the call was in flight.
    #[error("the runner has shut down")]
    Shutdown,
    /// The journal failed.
    #[error(transparent)]
    Journal(#[from] JournalError),
}

/// Runner settings.
#[derive(Debug, Clone, PartialEq)]
pub struct RunnerOptions {
    /// Multiplies every duration the runner waits: `Wait` seconds, `Retry` intervals, Task
    /// `TimeoutSeconds`/`HeartbeatSeconds` and the machine's `TimeoutSeconds`. `1.0` (the default)
    /// is real time; tests use e.g. `0.01` so that a 1-second retry interval takes 10 ms. Values
    /// that are not finite and positive are treated as `1.0`. Deadlines are journaled already
    /// scaled.
    pub time_scale: f64,
    /// Region used in execution ids (default `local`).
    pub region: String,
    /// Account used in execution ids (default `000000000000`).
    pub account: String,
}

impl Default for RunnerOptions {
    fn default() -> Self {
        Self {
            time_scale: 1.0,
            region: "local".into(),
            account: "000000000000".into(),
        }
    }
}

impl RunnerOptions {
    /// Default options with this time scale.
    pub fn with_time_scale(time_scale: f64) -> Self {
        Self {
            time_scale,
            ..Self::default()
        }
    }

    fn scale(&self) -> f64 {
        if self.time_scale.is_finite() && self.time_scale > 0.0 {
            self.time_scale
        } else {
            1.0
        }
    }

    fn scaled_ms(&self, seconds: f64) -> u64 {
        let ms = seconds * 1000.0 * self.scale();
        if ms.is_finite() && ms > 0.0 {
            ms.round() as u64
        } else {
            0
        }
    }
}

type Ack = oneshot::Sender<Result<(), RunnerError>>;

enum Control {
    Success {
        token: String,
        output: Value,
        ack: Ack,
    },
    Failure {
        token: String,
        error: String,
        cause: String,
        ack: Ack,
    },
    Heartbeat {
        token: String,
        ack: Ack,
    },
    Stop {
        error: Option<String>,
        cause: Option<String>,
        ack: Ack,
    },
}

impl Control {
    fn reject(self) {
        let (token, ack) = match self {
            Control::Success { token, ack, .. }
            | Control::Failure { token, ack, .. }
            | Control::Heartbeat { token, ack } => (token, ack),
            Control::Stop { ack, .. } => {
                let _ = ack.send(Ok(()));
                return;
            }
        };
        let _ = ack.send(Err(RunnerError::TaskTimedOut(format!(
            "task token {token} is not waiting"
        ))));
    }
}

struct Live {
    control: mpsc::UnboundedSender<Control>,
    abort: AbortHandle,
}

struct Inner {
    machine: StateMachine,
    dispatcher: Arc<dyn TaskDispatcher>,
    journal: Arc<dyn ExecutionJournal>,
    options: RunnerOptions,
    live: Mutex<HashMap<String, Live>>,
    tokens: Mutex<HashMap<String, String>>,
    changes: watch::Sender<u64>,
    start_lock: tokio::sync::Mutex<()>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section is a plain map insert/remove, so a poisoned lock holds a
    // consistent map.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Inner {
    fn register_token(&self, token: &str, execution_id: &str) {
        lock(&self.tokens).insert(token.to_string(), execution_id.to_string());
    }

    /// Removes the token; `true` if it was still registered (nobody else claimed it).
    fn withdraw_token(&self, token: &str) -> bool {
        lock(&self.tokens).remove(token).is_some()
    }
}

/// Runs one state machine's executions. Dropping the last `Arc<Runner>` (or calling
/// [`Runner::shutdown`]) stops every execution task where it is, as a process exit would; the
/// journal keeps them `Running` for [`Runner::resume_unfinished`].
pub struct Runner {
    inner: Arc<Inner>,
}

impl Drop for Runner {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl Runner {
    /// A runner in real time ([`RunnerOptions::default`]).
    pub fn new(
        definition: StateMachine,
        dispatcher: Arc<dyn TaskDispatcher>,
        journal: Arc<dyn ExecutionJournal>,
    ) -> Arc<Self> {
        Self::with_options(definition, dispatcher, journal, RunnerOptions::default())
    }

    /// A runner with options (e.g. a `time_scale` for tests).
    pub fn with_options(
        definition: StateMachine,
        dispatcher: Arc<dyn TaskDispatcher>,
        journal: Arc<dyn ExecutionJournal>,
        options: RunnerOptions,
    ) -> Arc<Self> {
        let (changes, _) = watch::channel(0);
        Arc::new(Self {
            inner: Arc::new(Inner {
                machine: definition,
                dispatcher,
                journal,
                options,
                live: Mutex::new(HashMap::new()),
                tokens: Mutex::new(HashMap::new()),
                changes,
                start_lock: tokio::sync::Mutex::new(()),
            }),
        })
    }

    /// The state machine this runner executes.
    pub fn definition(&self) -> &StateMachine {
        &self.inner.machine
    }

    /// The id an execution with this name gets.
    pub fn execution_id(&self, name: &str) -> String {
        let o = &self.inner.options;
        format!(
            "arn:aws:states:{}:{}:execution:{}:{}",
            o.region,
            o.account,
            self.inner.machine.name(),
            name
        )
    }

    fn state_machine_id(&self) -> String {
        state_machine_id(&self.inner)
    }

    /// Starts an execution. Idempotent like Step Functions: the same name and input while that
    /// execution runs returns the same id; a different input, or a finished execution of that
    /// name, is `ExecutionAlreadyExists`.
    pub async fn start_execution(
        self: &Arc<Self>,
        name: &str,
        input: Value,
    ) -> Result<String, RunnerError> {
        validate_name(name)?;
        let id = self.execution_id(name);
        let _guard = self.inner.start_lock.lock().await;
        if let Some(existing) = self.inner.journal.load(&id).await? {
            if existing.status == ExecutionStatus::Running && existing.input == input {
                return Ok(id);
            }
            return Err(RunnerError::ExecutionAlreadyExists(format!(
                "execution {name} already exists ({:?}) with {}",
                existing.status,
                if existing.input == input {
                    "the same input"
                } else {
                    "a different input"
                }
            )));
        }
        let now = now_ms();
        let machine = &self.inner.machine;
        let snapshot = ExecutionSnapshot {
            execution_id: id.clone(),
            name: name.to_string(),
            definition_name: machine.name().to_string(),
            definition_version: machine.version().to_string(),
            status: ExecutionStatus::Running,
            input: input.clone(),
            start_time: rfc3339(now),
            start_time_ms: now,
            execution_deadline_ms: machine
                .timeout_seconds()
                .map(|s| now + self.inner.options.scaled_ms(s as f64)),
            stop_time: None,
            current_state: machine.start_at().to_string(),
            current_input: input,
            entered_time: rfc3339(now),
            step: Step::Entering,
            retry_counts: Vec::new(),
            attempt: 0,
            task_token: None,
            task_timeout_at_ms: None,
            heartbeat_timeout_at_ms: None,
            wake_at_ms: None,
            pending_output: None,
            output: None,
            error: None,
            cause: None,
            revision: 1,
        };
        self.inner.journal.save(&snapshot).await?;
        self.inner.changes.send_modify(|n| *n += 1);
        tracing::info!(execution = %log_name(&id), "execution started");
        self.spawn(snapshot);
        Ok(id)
    }

    /// Continues every `Running` execution of this state machine found in the journal (those
    /// not already running in this runner). Returns how many were resumed.
    pub async fn resume_unfinished(self: &Arc<Self>) -> Result<usize, RunnerError> {
        let mut resumed = 0;
        for snapshot in self.inner.journal.load_unfinished().await? {
            if snapshot.definition_name != self.inner.machine.name() {
                continue;
            }
            if snapshot.definition_version != self.inner.machine.version() {
                tracing::warn!(
                    execution = %log_name(&snapshot.execution_id),
                    "resuming an execution started with another version of the definition"
                );
            }
            if self.spawn(snapshot) {
                resumed += 1;
            }
        }
        Ok(resumed)
    }

    /// Completes the waiting task that issued `token` with `output` as its result. Returns once
    /// the transition is journaled.
    pub async fn send_task_success(&self, token: &str, output: Value) -> Result<(), RunnerError> {
        self.callback(token, false, |ack| Control::Success {
            token: token.to_string(),
            output,
            ack,
        })
        .await
    }

    /// Fails the waiting task that issued `token` (then its `Retry`/`Catch` apply).
    pub async fn send_task_failure(
        &self,
        token: &str,
        error: &str,
        cause: &str,
    ) -> Result<(), RunnerError> {
        self.callback(token, false, |ack| Control::Failure {
            token: token.to_string(),
            error: error.to_string(),
            cause: cause.to_string(),
            ack,
        })
        .await
    }

    /// Resets the heartbeat clock of the waiting task that issued `token`.
    pub async fn send_task_heartbeat(&self, token: &str) -> Result<(), RunnerError> {
        self.callback(token, true, |ack| Control::Heartbeat {
            token: token.to_string(),
            ack,
        })
        .await
    }

    /// Routes a callback to the execution waiting on `token`. A heartbeat leaves the token
    /// registered; success and failure claim it, so a second callback finds it gone.
    async fn callback(
        &self,
        token: &str,
        heartbeat: bool,
        make: impl FnOnce(Ack) -> Control,
    ) -> Result<(), RunnerError> {
        let mut make = Some(make);
        for _ in 0..2 {
            // Never hold the token lock while taking the live lock (`spawn` nests them the
            // other way round).
            let owner = {
                let mut tokens = lock(&self.inner.tokens);
                if heartbeat {
                    tokens.get(token).cloned()
                } else {
                    tokens.remove(token)
                }
            };
            let routed = owner.and_then(|id| {
                lock(&self.inner.live)
                    .get(&id)
                    .map(|live| live.control.clone())
            });
            if let Some((control, make)) = routed.and_then(|c| Some((c, make.take()?))) {
                let (ack_tx, ack_rx) = oneshot::channel();
                if control.send(make(ack_tx)).is_err() {
                    return Err(RunnerError::TaskTimedOut(format!(
                        "task token {token} is not waiting"
                    )));
                }
                return ack_rx.await.unwrap_or(Err(RunnerError::Shutdown));
            }
            // Not waiting in this process: maybe journaled but not resumed yet.
            let execution_id = decode_token(token).ok_or_else(|| {
                RunnerError::InvalidToken(format!("malformed task token {token}"))
            })?;
            let snapshot = self
                .inner
                .journal
                .load(&execution_id)
                .await?
                .ok_or_else(|| {
                    RunnerError::InvalidToken(format!("task token {token} names no execution"))
                })?;
            if snapshot.definition_name != self.inner.machine.name() {
                return Err(RunnerError::InvalidToken(format!(
                    "task token {token} belongs to another state machine"
                )));
            }
            let waiting = snapshot.status == ExecutionStatus::Running
                && snapshot.task_token.as_deref() == Some(token)
                && matches!(snapshot.step, Step::Dispatching | Step::AwaitingCallback);
            if !waiting || lock(&self.inner.live).contains_key(&execution_id) {
                break;
            }
            self.spawn(snapshot);
        }
        Err(RunnerError::TaskTimedOut(format!(
            "task token {token} is not waiting"
        )))
    }

    /// Stops a running execution (status `Aborted`). Stopping a finished execution does nothing.
    pub async fn stop_execution(
        &self,
        execution_id: &str,
        error: Option<&str>,
        cause: Option<&str>,
    ) -> Result<(), RunnerError> {
        let control = lock(&self.inner.live)
            .get(execution_id)
            .map(|l| l.control.clone());
        if let Some(control) = control {
            let (ack_tx, ack_rx) = oneshot::channel();
            let sent = control.send(Control::Stop {
                error: error.map(str::to_string),
                cause: cause.map(str::to_string),
                ack: ack_tx,
            });
            if sent.is_ok() {
                return ack_rx.await.unwrap_or(Err(RunnerError::Shutdown));
            }
        }
        let mut snapshot = self
            .inner
            .journal
            .load(execution_id)
            .await?
            .ok_or_else(|| RunnerError::ExecutionDoesNotExist(execution_id.to_string()))?;
        if snapshot.is_finished() {
            return Ok(());
        }
        let now = now_ms();
        snapshot.status = ExecutionStatus::Aborted;
        snapshot.stop_time = Some(rfc3339(now));
        snapshot.error = error.map(str::to_string);
        snapshot.cause = cause.map(str::to_string);
        snapshot.task_token = None;
        snapshot.revision += 1;
        self.inner.journal.save(&snapshot).await?;
        self.inner.changes.send_modify(|n| *n += 1);
        Ok(())
    }

    /// The execution's latest journaled snapshot.
    pub async fn describe(
        &self,
        execution_id: &str,
    ) -> Result<Option<ExecutionSnapshot>, RunnerError> {
        Ok(self.inner.journal.load(execution_id).await?)
    }

    /// Waits until the execution has finished and returns its final snapshot.
    pub async fn wait_for(
        &self,
        execution_id: &str,
        timeout: Duration,
    ) -> Result<ExecutionSnapshot, RunnerError> {
        self.wait_until(execution_id, timeout, ExecutionSnapshot::is_finished)
            .await
    }

    /// Waits until the execution's snapshot satisfies `condition` (checked after every save by
    /// this runner) and returns that snapshot.
    pub async fn wait_until(
        &self,
        execution_id: &str,
        timeout: Duration,
        condition: impl Fn(&ExecutionSnapshot) -> bool,
    ) -> Result<ExecutionSnapshot, RunnerError> {
        let mut changes = self.inner.changes.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            changes.borrow_and_update();
            let snapshot = self
                .inner
                .journal
                .load(execution_id)
                .await?
                .ok_or_else(|| RunnerError::ExecutionDoesNotExist(execution_id.to_string()))?;
            if condition(&snapshot) {
                return Ok(snapshot);
            }
            match tokio::time::timeout_at(deadline, changes.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => return Err(RunnerError::Shutdown),
                Err(_) => return Err(RunnerError::WaitTimedOut(execution_id.to_string())),
            }
        }
    }

    /// Stops every execution task of this runner where it is (they stay `Running` in the
    /// journal). Called on drop.
    pub fn shutdown(&self) {
        let live: Vec<Live> = lock(&self.inner.live).drain().map(|(_, l)| l).collect();
        for l in live {
            l.abort.abort();
        }
        lock(&self.inner.tokens).clear();
    }

    /// Spawns the execution task unless it already runs here. `true` if spawned.
    fn spawn(&self, snapshot: ExecutionSnapshot) -> bool {
        let mut live = lock(&self.inner.live);
        if live.contains_key(&snapshot.execution_id) {
            return false;
        }
        if let Some(token) = &snapshot.task_token {
            if matches!(snapshot.step, Step::Dispatching | Step::AwaitingCallback) {
                self.inner.register_token(token, &snapshot.execution_id);
            }
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let id = snapshot.execution_id.clone();
        let execution = Execution {
            inner: self.inner.clone(),
            snap: snapshot,
            rx,
            state_machine_id: self.state_machine_id(),
        };
        let handle = tokio::spawn(execution.run());
        live.insert(
            id,
            Live {
                control: tx,
                abort: handle.abort_handle(),
            },
        );
        true
    }
}

fn state_machine_id(inner: &Inner) -> String {
    let o = &inner.options;
    format!(
        "arn:aws:states:{}:{}:stateMachine:{}",
        o.region,
        o.account,
        inner.machine.name()
    )
}

fn validate_name(name: &str) -> Result<(), RunnerError> {
    let bad = name.is_empty()
        || name.chars().count() > 80
        || name.chars().any(|c| {
            c.is_whitespace()
                || c.is_control()
                || "<>{}[]?*\"#%\\^|~`$&,;:/".contains(c)
                || ('\u{7f}'..='\u{9f}').contains(&c)
        });
    if bad {
        return Err(RunnerError::InvalidName(format!(
            "{name:?}: 1 to 80 characters, no whitespace, brackets, wildcards or special characters"
        )));
    }
    Ok(())
}

const TOKEN_PREFIX: &str = "tt1";

fn new_token(execution_id: &str, attempt: u32) -> String {
    let nonce: u128 = rand::random();
    let hex: String = execution_id.bytes().map(|b| format!("{b:02x}")).collect();
    format!("{TOKEN_PREFIX}.{hex}.{attempt}.{nonce:032x}")
}

fn decode_token(token: &str) -> Option<String> {
    let mut parts = token.split('.');
    if parts.next()? != TOKEN_PREFIX {
        return None;
    }
    let hex = parts.next()?;
    let attempt = parts.next()?;
    let nonce = parts.next()?;
    if parts.next().is_some()
        || attempt.parse::<u32>().is_err()
        || nonce.len() != 32
        || hex.len() % 2 != 0
    {
        return None;
    }
    let bytes = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect::<Option<Vec<u8>>>()?;
    String::from_utf8(bytes).ok()
}

// ---------------------------------------------------------------------------------------------
// One execution

type DispatchFuture = Pin<Box<dyn Future<Output = Result<TaskOutcome, TaskFailure>> + Send>>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Timer {
    Execution,
    Wake,
    TaskTimeout,
    Heartbeat,
}

enum Event {
    Dispatched(Result<TaskOutcome, TaskFailure>),
    Timer(Timer),
    Control(Control),
}

struct Execution {
    inner: Arc<Inner>,
    snap: ExecutionSnapshot,
    rx: mpsc::UnboundedReceiver<Control>,
    state_machine_id: String,
}

async fn poll_dispatch(fut: &mut Option<DispatchFuture>) -> Result<TaskOutcome, TaskFailure> {
    match fut {
        Some(f) => f.await,
        None => std::future::pending().await,
    }
}

impl Execution {
    async fn run(mut self) {
        let id = self.snap.execution_id.clone();
        if let Err(err) = self.drive().await {
            tracing::error!(execution = %log_name(&id), error = %err, "execution stopped");
        }
        if let Some(token) = &self.snap.task_token {
            self.inner.withdraw_token(token);
        }
        lock(&self.inner.live).remove(&id);
        // Refuse callbacks that raced with the end of the execution.
        self.rx.close();
        while let Ok(control) = self.rx.try_recv() {
            control.reject();
        }
    }

    async fn drive(&mut self) -> Result<(), RunnerError> {
        while !self.snap.is_finished() {
            if self
                .snap
                .execution_deadline_ms
                .is_some_and(|d| now_ms() >= d)
            {
                self.time_out_execution().await?;
                break;
            }
            let machine = self.inner.clone();
            let Some(state) = machine.machine.state(&self.snap.current_state) else {
                let cause = format!(
                    "state {:?} is not in the definition",
                    self.snap.current_state
                );
                self.fail(StatesError::runtime(cause)).await?;
                break;
            };
            match (&state.kind, self.snap.step) {
                (_, Step::Entering) => self.enter(state).await?,
                (StateKind::Task(task), Step::Dispatching | Step::AwaitingCallback) => {
                    self.task_attempt(state, task).await?
                }
                (StateKind::Task(task), Step::RetryBackoff) => self.backoff(task).await?,
                (StateKind::Wait { transition, .. }, Step::Waiting) => {
                    self.wait_state(transition).await?
                }
                (_, step) => {
                    let cause = format!(
                        "journaled step {step:?} does not fit state {:?}",
                        state.name
                    );
                    self.fail(StatesError::runtime(cause)).await?;
                }
            }
        }
        Ok(())
    }

    fn context(&self, state: &State) -> Value {
        let s = &self.snap;
        let mut context = json!({
            "Execution": {
                "Id": s.execution_id,
                "Input": s.input,
                "Name": s.name,
                "RoleArn": format!("arn:aws:iam::{}:role/local", self.inner.options.account),
                "StartTime": s.start_time,
            },
            "State": {
                "EnteredTime": s.entered_time,
                "Name": state.name,
                "RetryCount": s.attempt.saturating_sub(1),
            },
            "StateMachine": {
                "Id": self.state_machine_id,
                "Name": self.inner.machine.name(),
            },
        });
        if let (Some(token), Some(map)) = (&s.task_token, context.as_object_mut()) {
            map.insert("Task".into(), json!({ "Token": token }));
        }
        context
    }

    async fn save(&mut self) -> Result<(), RunnerError> {
        self.snap.revision += 1;
        self.inner.journal.save(&self.snap).await?;
        self.inner.changes.send_modify(|n| *n += 1);
        Ok(())
    }

    fn clear_task(&mut self) {
        if let Some(token) = self.snap.task_token.take() {
            self.inner.withdraw_token(&token);
        }
        self.snap.task_timeout_at_ms = None;
        self.snap.heartbeat_timeout_at_ms = None;
        self.snap.wake_at_ms = None;
        self.snap.pending_output = None;
    }

    async fn finish(
        &mut self,
        status: ExecutionStatus,
        output: Option<Value>,
        error: Option<String>,
        cause: Option<String>,
    ) -> Result<(), RunnerError> {
        self.clear_task();
        self.snap.status = status;
        self.snap.stop_time = Some(rfc3339(now_ms()));
        self.snap.output = output;
        self.snap.error = error;
        self.snap.cause = cause;
        tracing::info!(execution = %log_name(&self.snap.execution_id), ?status, "execution finished");
        self.save().await
    }

    async fn fail(&mut self, err: StatesError) -> Result<(), RunnerError> {
        self.finish(
            ExecutionStatus::Failed,
            None,
            Some(err.error),
            Some(err.cause),
        )
        .await
    }

    async fn time_out_execution(&mut self) -> Result<(), RunnerError> {
        self.finish(
            ExecutionStatus::TimedOut,
            None,
            Some(names::TIMEOUT.into()),
            Some("The execution ran longer than the state machine's TimeoutSeconds".into()),
        )
        .await
    }

    async fn abort(
        &mut self,
        error: Option<String>,
        cause: Option<String>,
    ) -> Result<(), RunnerError> {
        self.finish(ExecutionStatus::Aborted, None, error, cause)
            .await
    }

    async fn transition(&mut self, t: &Transition, output: Value) -> Result<(), RunnerError> {
        self.clear_task();
        match t {
            Transition::End => {
                self.finish(ExecutionStatus::Succeeded, Some(output), None, None)
                    .await
            }
            Transition::Next(next) => self.goto(next, output).await,
        }
    }

    async fn goto(&mut self, next: &str, input: Value) -> Result<(), RunnerError> {
        self.clear_task();
        self.snap.current_state = next.to_string();
        self.snap.current_input = input;
        self.snap.entered_time = rfc3339(now_ms());
        self.snap.step = Step::Entering;
        self.snap.retry_counts.clear();
        self.snap.attempt = 0;
        self.save().await
    }

    async fn enter(&mut self, state: &State) -> Result<(), RunnerError> {
        let ctx = self.context(state);
        let raw = self.snap.current_input.clone();
        match &state.kind {
            StateKind::Pass {
                parameters,
                result,
                result_path,
                transition,
            } => {
                let out = (|| {
                    let effective = select(&state.input_path, "InputPath", &raw, &ctx)?;
                    let effective = match parameters {
                        Some(t) => t.eval(&effective, &ctx)?,
                        None => effective,
                    };
                    let result = result.clone().unwrap_or(effective);
                    let out = place_result(result_path, &raw, result)?;
                    select(&state.output_path, "OutputPath", &out, &ctx)
                })();
                match out {
                    Ok(out) => self.transition(transition, out).await,
                    Err(e) => self.fail(e).await,
                }
            }
            StateKind::Choice { choices, default } => {
                let decided = (|| {
                    let effective = select(&state.input_path, "InputPath", &raw, &ctx)?;
                    let mut next = None;
                    for choice in choices {
                        if choice.rule.eval(&effective, &ctx)? {
                            next = Some(choice.next.clone());
                            break;
                        }
                    }
                    let next = next.or_else(|| default.clone()).ok_or_else(|| {
                        StatesError::new(
                            names::NO_CHOICE_MATCHED,
                            format!("No Matches! (state {:?})", state.name),
                        )
                    })?;
                    let out = select(&state.output_path, "OutputPath", &effective, &ctx)?;
                    Ok::<_, StatesError>((next, out))
                })();
                match decided {
                    Ok((next, out)) => self.goto(&next, out).await,
                    Err(e) => self.fail(e).await,
                }
            }
            StateKind::Wait { wait, .. } => {
                let planned = (|| {
                    let effective = select(&state.input_path, "InputPath", &raw, &ctx)?;
                    let seconds = match wait {
                        WaitFor::Seconds(s) => *s,
                        WaitFor::SecondsPath(p) => p
                            .get(&effective, &ctx)
                            .and_then(Value::as_u64)
                            .ok_or_else(|| {
                                StatesError::runtime(format!(
                                    "SecondsPath {p} does not name a non-negative integer"
                                ))
                            })?,
                    };
                    let out = select(&state.output_path, "OutputPath", &effective, &ctx)?;
                    Ok::<_, StatesError>((seconds, out))
                })();
                match planned {
                    Ok((seconds, out)) => {
                        self.snap.wake_at_ms =
                            Some(now_ms() + self.inner.options.scaled_ms(seconds as f64));
                        self.snap.pending_output = Some(out);
                        self.snap.step = Step::Waiting;
                        self.save().await
                    }
                    Err(e) => self.fail(e).await,
                }
            }
            StateKind::Succeed => {
                let out = select(&state.input_path, "InputPath", &raw, &ctx)
                    .and_then(|eff| select(&state.output_path, "OutputPath", &eff, &ctx));
                match out {
                    Ok(out) => {
                        self.finish(ExecutionStatus::Succeeded, Some(out), None, None)
                            .await
                    }
                    Err(e) => self.fail(e).await,
                }
            }
            StateKind::Fail { error, cause } => {
                let resolved = (|| {
                    let error = resolve_source(error.as_ref(), &raw, &ctx)?;
                    let cause = resolve_source(cause.as_ref(), &raw, &ctx)?;
                    Ok::<_, StatesError>((error, cause))
                })();
                match resolved {
                    Ok((error, cause)) => {
                        self.finish(ExecutionStatus::Failed, None, error, cause)
                            .await
                    }
                    Err(e) => self.fail(e).await,
                }
            }
            StateKind::Task(task) => {
                self.begin_attempt(task);
                self.save().await
            }
        }
    }

    fn begin_attempt(&mut self, task: &TaskState) {
        self.clear_task();
        let opts = &self.inner.options;
        let now = now_ms();
        self.snap.attempt = 1 + self.snap.retry_counts.iter().sum::<u32>();
        self.snap.task_token = task
            .waits_for_task_token()
            .then(|| new_token(&self.snap.execution_id, self.snap.attempt));
        self.snap.task_timeout_at_ms = task.timeout_seconds.map(|s| now + opts.scaled_ms(s as f64));
        self.snap.heartbeat_timeout_at_ms = match (&self.snap.task_token, task.heartbeat_seconds) {
            (Some(_), Some(s)) => Some(now + opts.scaled_ms(s as f64)),
            _ => None,
        };
        self.snap.step = Step::Dispatching;
    }

    fn timers(&self) -> Vec<(u64, Timer)> {
        let s = &self.snap;
        let mut timers = Vec::new();
        if let Some(at) = s.execution_deadline_ms {
            timers.push((at, Timer::Execution));
        }
        match s.step {
            Step::Dispatching | Step::AwaitingCallback => {
                if let Some(at) = s.task_timeout_at_ms {
                    timers.push((at, Timer::TaskTimeout));
                }
                if let Some(at) = s.heartbeat_timeout_at_ms {
                    timers.push((at, Timer::Heartbeat));
                }
            }
            Step::RetryBackoff | Step::Waiting => {
                if let Some(at) = s.wake_at_ms {
                    timers.push((at, Timer::Wake));
                }
            }
            Step::Entering => {}
        }
        timers
    }

    async fn next_event(&mut self, fut: &mut Option<DispatchFuture>) -> Event {
        let earliest = self.timers().into_iter().min_by_key(|(at, _)| *at);
        let timer = async move {
            match earliest {
                Some((at, timer)) => {
                    let wait = at.saturating_sub(now_ms());
                    tokio::time::sleep(Duration::from_millis(wait)).await;
                    timer
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            Some(control) = self.rx.recv() => Event::Control(control),
            result = poll_dispatch(fut) => Event::Dispatched(result),
            timer = timer => Event::Timer(timer),
        }
    }

    /// Handles a control message that is not a callback for the current task.
    async fn other_control(&mut self, control: Control) -> Result<bool, RunnerError> {
        match control {
            Control::Stop { error, cause, ack } => {
                let result = self.abort(error, cause).await;
                let _ = ack.send(result.clone());
                result.map(|()| true)
            }
            other => {
                other.reject();
                Ok(false)
            }
        }
    }

    async fn task_attempt(&mut self, state: &State, task: &TaskState) -> Result<(), RunnerError> {
        let token = self.snap.task_token.clone();
        if let Some(t) = &token {
            self.inner.register_token(t, &self.snap.execution_id);
        } else if self.snap.step == Step::AwaitingCallback {
            let cause = "journaled as awaiting a callback without a task token";
            return self.fail(StatesError::runtime(cause)).await;
        }
        let mut fut: Option<DispatchFuture> = None;
        if self.snap.step == Step::Dispatching {
            let ctx = self.context(state);
            let raw = &self.snap.current_input;
            let parameters = select(&state.input_path, "InputPath", raw, &ctx).and_then(|eff| {
                match &task.parameters {
                    Some(t) => t.eval(&eff, &ctx),
                    None => Ok(eff),
                }
            });
            let parameters = match parameters {
                Ok(p) => p,
                Err(e) => return self.task_error(task, e).await,
            };
            let call = TaskCall {
                execution_id: self.snap.execution_id.clone(),
                state_name: state.name.clone(),
                resource: task.resource.clone(),
                parameters,
                task_token: token.clone(),
                attempt: self.snap.attempt,
            };
            tracing::debug!(execution = %log_name(&call.execution_id), state = %call.state_name,
                attempt = call.attempt, "dispatching task");
            let dispatcher = self.inner.dispatcher.clone();
            fut = Some(Box::pin(async move { dispatcher.dispatch(call).await }));
        }
        let ours = |t: &str| token.as_deref() == Some(t);
        loop {
            match self.next_event(&mut fut).await {
                Event::Dispatched(result) => {
                    fut = None;
                    match (result, token.is_some()) {
                        (Ok(_), true) => {
                            self.snap.step = Step::AwaitingCallback;
                            self.save().await?;
                        }
                        (Ok(TaskOutcome::Completed(value)), false) => {
                            let value = if task.resource == LAMBDA_INVOKE {
                                lambda_invoke_result(value)
                            } else {
                                value
                            };
                            return self.task_result(state, task, value).await;
                        }
                        (Ok(TaskOutcome::AwaitingCallback), false) => {
                            let cause = format!(
                                "the dispatcher returned AwaitingCallback for {}, which does not \
                                 end in .waitForTaskToken",
                                task.resource
                            );
                            return self.task_error(task, StatesError::runtime(cause)).await;
                        }
                        (Err(failure), _) => {
                            if let Some(t) = &token {
                                if !self.inner.withdraw_token(t) {
                                    // A callback already claimed the token; it wins.
                                    continue;
                                }
                            }
                            let err = StatesError::new(failure.error, failure.cause);
                            return self.task_error(task, err).await;
                        }
                    }
                }
                Event::Timer(Timer::Execution) => return self.time_out_execution().await,
                Event::Timer(timer @ (Timer::TaskTimeout | Timer::Heartbeat)) => {
                    if let Some(t) = &token {
                        if !self.inner.withdraw_token(t) {
                            continue;
                        }
                    }
                    let err = if timer == Timer::Heartbeat {
                        StatesError::new(
                            names::HEARTBEAT_TIMEOUT,
                            "The task did not send a heartbeat within HeartbeatSeconds",
                        )
                    } else {
                        StatesError::new(
                            names::TIMEOUT,
                            "The task did not finish within TimeoutSeconds",
                        )
                    };
                    return self.task_error(task, err).await;
                }
                Event::Timer(Timer::Wake) => {}
                Event::Control(Control::Success {
                    token: t,
                    output,
                    ack,
                }) if ours(&t) => {
                    let result = self.task_result(state, task, output).await;
                    let _ = ack.send(result.clone());
                    return result;
                }
                Event::Control(Control::Failure {
                    token: t,
                    error,
                    cause,
                    ack,
                }) if ours(&t) => {
                    let result = self.task_error(task, StatesError::new(error, cause)).await;
                    let _ = ack.send(result.clone());
                    return result;
                }
                Event::Control(Control::Heartbeat { token: t, ack }) if ours(&t) => {
                    let mut result = Ok(());
                    if let Some(s) = task.heartbeat_seconds {
                        self.snap.heartbeat_timeout_at_ms =
                            Some(now_ms() + self.inner.options.scaled_ms(s as f64));
                        result = self.save().await;
                    }
                    let _ = ack.send(result.clone());
                    result?;
                }
                Event::Control(other) => {
                    if self.other_control(other).await? {
                        return Ok(());
                    }
                }
            }
        }
    }

    async fn task_result(
        &mut self,
        state: &State,
        task: &TaskState,
        result: Value,
    ) -> Result<(), RunnerError> {
        let ctx = self.context(state);
        let raw = self.snap.current_input.clone();
        let out = (|| {
            let selected = match &task.result_selector {
                Some(t) => t.eval(&result, &ctx)?,
                None => result,
            };
            let out = place_result(&task.result_path, &raw, selected)?;
            select(&state.output_path, "OutputPath", &out, &ctx)
        })();
        match out {
            Ok(out) => self.transition(&task.transition, out).await,
            Err(e) => self.task_error(task, e).await,
        }
    }

    async fn task_error(&mut self, task: &TaskState, err: StatesError) -> Result<(), RunnerError> {
        tracing::debug!(execution = %log_name(&self.snap.execution_id), state = %self.snap.current_state,
            error = %err.error, "task failed");
        self.clear_task();
        if err.error == names::RUNTIME || err.error == names::DATA_LIMIT_EXCEEDED {
            return self.fail(err).await;
        }
        self.snap.retry_counts.resize(task.retry.len(), 0);
        if let Some(i) = task
            .retry
            .iter()
            .position(|r| error_matches(&r.error_equals, &err.error))
        {
            let retrier = &task.retry[i];
            let used = self.snap.retry_counts[i];
            if used < retrier.max_attempts {
                let delay = retrier.delay_seconds(used);
                self.snap.retry_counts[i] = used + 1;
                self.snap.wake_at_ms = Some(now_ms() + self.inner.options.scaled_ms(delay));
                self.snap.step = Step::RetryBackoff;
                return self.save().await;
            }
        }
        if let Some(catcher) = task
            .catch
            .iter()
            .find(|c| error_matches(&c.error_equals, &err.error))
        {
            let error_output = json!({ "Error": err.error, "Cause": err.cause });
            return match place_result(&catcher.result_path, &self.snap.current_input, error_output)
            {
                Ok(out) => self.goto(&catcher.next, out).await,
                Err(e) => self.fail(e).await,
            };
        }
        self.fail(err).await
    }

    async fn backoff(&mut self, task: &TaskState) -> Result<(), RunnerError> {
        loop {
            match self.next_event(&mut None).await {
                Event::Timer(Timer::Wake) => {
                    self.begin_attempt(task);
                    return self.save().await;
                }
                Event::Timer(Timer::Execution) => return self.time_out_execution().await,
                Event::Control(control) => {
                    if self.other_control(control).await? {
                        return Ok(());
                    }
                }
                Event::Timer(_) | Event::Dispatched(_) => {}
            }
        }
    }

    async fn wait_state(&mut self, transition: &Transition) -> Result<(), RunnerError> {
        loop {
            match self.next_event(&mut None).await {
                Event::Timer(Timer::Wake) => {
                    let out = self.snap.pending_output.take().unwrap_or(Value::Null);
                    return self.transition(transition, out).await;
                }
                Event::Timer(Timer::Execution) => return self.time_out_execution().await,
                Event::Control(control) => {
                    if self.other_control(control).await? {
                        return Ok(());
                    }
                }
                Event::Timer(_) | Event::Dispatched(_) => {}
            }
        }
    }
}

fn resolve_source(
    source: Option<&Source>,
    input: &Value,
    ctx: &Value,
) -> Result<Option<String>, StatesError> {
    let value = match source {
        None => return Ok(None),
        Some(Source::Literal(s)) => return Ok(Some(s.clone())),
        Some(Source::Path(p)) => p.get(input, ctx).cloned().ok_or_else(|| {
            StatesError::runtime(format!("the path {p} of a Fail state was not found"))
        })?,
        Some(Source::Call(c)) => c.eval(input, ctx)?,
    };
    match value {
        Value::String(s) => Ok(Some(s)),
        other => Err(StatesError::runtime(format!(
            "a Fail state's ErrorPath/CausePath must produce a string, got {other}"
        ))),
    }
}

/// What a log line names an execution by: its name, the last segment of its ARN, so no log line
/// carries an account id or an ARN.
pub fn log_name(execution_id: &str) -> &str {
    execution_id.rsplit(':').next().unwrap_or(execution_id)
}
