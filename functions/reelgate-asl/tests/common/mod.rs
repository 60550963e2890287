//! Test helpers: a scripted fake dispatcher and runner builders.
#![allow(dead_code)]

use async_trait::async_trait;
use reelgate_asl::{
    ExecutionJournal, MemoryJournal, Runner, RunnerOptions, StateMachine, TaskCall, TaskDispatcher,
    TaskFailure, TaskOutcome,
};
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

/// Generous bound for anything a test waits on (never reached when things work).
pub const PATIENCE: Duration = Duration::from_secs(10);

/// Scale used by tests: one ASL second is 10 ms.
pub const FAST: f64 = 0.01;

/// What the fake dispatcher does for one call.
#[derive(Debug, Clone)]
pub enum FakeReply {
    /// `Completed(value)`.
    Complete(Value),
    /// `Completed(parameters)`: echoes what it was given.
    Echo,
    /// `Err(failure)`.
    Fail(TaskFailure),
    /// `AwaitingCallback`.
    AwaitCallback,
    /// Never returns (a dispatch in flight when the process stops).
    Hang,
}

/// A fake `TaskDispatcher` for tests: replies from per-state scripts, records every call and
/// reports it on a channel. Without a script it echoes parameters, or awaits the callback for
/// `.waitForTaskToken` resources.
pub struct FakeDispatcher {
    scripts: Mutex<HashMap<String, VecDeque<FakeReply>>>,
    calls: Mutex<Vec<TaskCall>>,
    seen_tx: mpsc::UnboundedSender<TaskCall>,
    seen_rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<TaskCall>>,
}

impl FakeDispatcher {
    pub fn new() -> Arc<Self> {
        let (seen_tx, seen_rx) = mpsc::unbounded_channel();
        Arc::new(Self {
            scripts: Mutex::new(HashMap::new()),
            calls: Mutex::new(Vec::new()),
            seen_tx,
            seen_rx: tokio::sync::Mutex::new(seen_rx),
        })
    }

    /// Replies for successive calls of `state`; once used up, the default applies.
    pub fn script(&self, state: &str, replies: Vec<FakeReply>) {
        self.scripts
            .lock()
            .unwrap()
            .insert(state.to_string(), replies.into());
    }

    pub fn calls(&self) -> Vec<TaskCall> {
        self.calls.lock().unwrap().clone()
    }

    pub fn calls_to(&self, state: &str) -> Vec<TaskCall> {
        self.calls()
            .into_iter()
            .filter(|c| c.state_name == state)
            .collect()
    }

    /// The next call made (in order), waiting for it.
    pub async fn next_call(&self) -> TaskCall {
        let mut rx = self.seen_rx.lock().await;
        tokio::time::timeout(PATIENCE, rx.recv())
            .await
            .expect("a dispatch within the patience bound")
            .expect("dispatcher channel open")
    }
}

#[async_trait]
impl TaskDispatcher for FakeDispatcher {
    async fn dispatch(&self, call: TaskCall) -> Result<TaskOutcome, TaskFailure> {
        self.calls.lock().unwrap().push(call.clone());
        let _ = self.seen_tx.send(call.clone());
        let reply = self
            .scripts
            .lock()
            .unwrap()
            .get_mut(&call.state_name)
            .and_then(VecDeque::pop_front);
        let reply = reply.unwrap_or(if call.task_token.is_some() {
            FakeReply::AwaitCallback
        } else {
            FakeReply::Echo
        });
        match reply {
            FakeReply::Complete(v) => Ok(TaskOutcome::Completed(v)),
            FakeReply::Echo => Ok(TaskOutcome::Completed(call.parameters)),
            FakeReply::Fail(f) => Err(f),
            FakeReply::AwaitCallback => Ok(TaskOutcome::AwaitingCallback),
            FakeReply::Hang => std::future::pending().await,
        }
    }
}

pub fn machine(definition: Value) -> StateMachine {
    StateMachine::from_value("test-machine", &definition).expect("valid test definition")
}

pub fn runner_with(
    definition: Value,
    dispatcher: Arc<FakeDispatcher>,
    journal: Arc<dyn ExecutionJournal>,
    time_scale: f64,
) -> Arc<Runner> {
    Runner::with_options(
        machine(definition),
        dispatcher,
        journal,
        RunnerOptions::with_time_scale(time_scale),
    )
}

/// A fast runner over a fresh memory journal.
pub fn runner(definition: Value, dispatcher: Arc<FakeDispatcher>) -> Arc<Runner> {
    runner_with(definition, dispatcher, Arc::new(MemoryJournal::new()), FAST)
}
