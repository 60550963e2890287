//! An embedded runner for the subset of the Amazon States Language (ASL) that reelgate's
//! workflow (`statemachine/*.asl.json`) uses. On AWS, Step Functions runs that file; locally this
//! crate runs the same file with the same semantics, so local tests exercise the deployed
//! definition.
//!
//! ```text
//! StateMachine::load(name, text, &substitutions)   // ${Name} substitution, parse, validate
//! Runner::new(machine, dispatcher, journal)          // TaskDispatcher performs Task resources
//! runner.start_execution(name, input)                // runs as a tokio task, journaled
//! runner.send_task_success(token, output)            // callbacks for .waitForTaskToken tasks
//! runner.resume_unfinished()                         // after a restart
//! ```
//!
//! # Supported subset
//!
//! **Top level**: `StartAt`, `States`, `Comment`, `TimeoutSeconds`, `Version` (`"1.0"`).
//!
//! **States** (`Type`, `Comment` on all):
//! * `Task`: `Resource`, `Next`/`End`, `InputPath`, `Parameters`, `ResultSelector`,
//!   `ResultPath`, `OutputPath`, `Retry`, `Catch`, `TimeoutSeconds`, `HeartbeatSeconds`.
//!   Resources are opaque to the runner and go to the [`TaskDispatcher`]; those ending in
//!   `.waitForTaskToken` get a task token (`$$.Task.Token`) and wait for a callback;
//!   `arn:aws:states:::lambda:invoke` results are wrapped as Step Functions wraps them
//!   (`{"Payload": …, "StatusCode": 200, …}`).
//! * `Pass`: `Next`/`End`, `InputPath`, `Parameters`, `Result`, `ResultPath`, `OutputPath`.
//! * `Choice`: `Choices`, `Default`, `InputPath`, `OutputPath`. Rules: `And`, `Or`, `Not`, and
//!   `Variable` with one of `StringEquals`, `StringLessThan`, `StringGreaterThan`,
//!   `StringLessThanEquals`, `StringGreaterThanEquals`, the same five `Numeric…` operators,
//!   `BooleanEquals`, each also with a `…Path` form (e.g. `StringEqualsPath`), and `IsPresent`,
//!   `IsNull`, `IsString`, `IsNumeric`, `IsBoolean`.
//! * `Wait`: `Seconds` or `SecondsPath`, `Next`/`End`, `InputPath`, `OutputPath`.
//! * `Succeed`: `InputPath`, `OutputPath`.
//! * `Fail`: `Error`/`ErrorPath`, `Cause`/`CausePath` (paths or intrinsic functions).
//!
//! **Retry**: `ErrorEquals`, `IntervalSeconds` (default 1), `MaxAttempts` (default 3, 0 = no
//! retry), `BackoffRate` (default 2.0), `MaxDelaySeconds`. The first retrier whose `ErrorEquals`
//! matches is used; when its attempts are spent, `Catch` is consulted (later retriers are not).
//! Each retrier counts its own attempts; counters reset when the state is left.
//! **Catch**: `ErrorEquals`, `ResultPath` (default `$`), `Next`; the error output is
//! `{"Error": …, "Cause": …}` placed into the state's raw input.
//!
//! **Error names**: `States.ALL` (everything except `States.Runtime` and
//! `States.DataLimitExceeded`; must be alone and last), `States.TaskFailed` (everything except
//! `States.Timeout` and those two), `States.Timeout`, `States.HeartbeatTimeout`,
//! `States.Runtime`, `States.IntrinsicFailure`, `States.ResultPathMatchFailure`,
//! `States.NoChoiceMatched`, and any custom name a task fails with.
//!
//! **Paths**: `$`, `$.a.b`, `$.a[0]`, `$['a b']`, and the context object `$$` with
//! `$$.Execution.{Id,Input,Name,RoleArn,StartTime}`, `$$.State.{Name,EnteredTime,RetryCount}`,
//! `$$.StateMachine.{Id,Name}`, `$$.Task.Token`. `InputPath`/`OutputPath` `null` give `{}`;
//! `ResultPath: null` discards the result; a `ResultPath` path creates missing objects.
//!
//! **Payload templates** (`Parameters`, `ResultSelector`): keys ending in `.$` take a path
//! (`$…` against the effective input — the raw result for `ResultSelector` — or `$$…` against the
//! context object) or an intrinsic function: `States.Format` (string-literal template with `{}`
//! and the escapes `\'`, `\{`, `\}`, `\\`), `States.StringToJson`, `States.JsonToString`,
//! `States.Array`; arguments are string literals, numbers, booleans, `null`, paths and nested
//! calls. Objects nested in templates are processed recursively; arrays are copied as they are
//! (as in Step Functions: build dynamic arrays with `States.Array`).
//!
//! **Definition substitutions**: `${Name}` placeholders in strings are replaced from a map
//! before parsing (see [`substitute()`], [`placeholders()`]); a placeholder without a value is
//! [`DefinitionError::MissingSubstitution`].
//!
//! **Validation** ([`DefinitionError`] names the state): unknown fields or state types outside
//! the subset, missing `Next`/`End`, transitions to missing states, unreachable states,
//! malformed paths, templates, intrinsic calls and Choice rules, `States.ALL` not alone and
//! last, `HeartbeatSeconds` ≥ `TimeoutSeconds`, non-integer seconds.
//!
//! # Runner semantics
//!
//! * Executions run as tokio tasks; the [`ExecutionJournal`] is written after every transition
//!   and before every dispatch, so [`Runner::resume_unfinished`] continues from the last
//!   journaled point: a Task that was being dispatched is dispatched again (at-least-once, with
//!   the same token and attempt number), a task waiting for its callback keeps its token and its
//!   deadlines, a Wait or retry interval sleeps only what remains, and a deadline that passed
//!   while the process was down fires at once.
//! * Task `TimeoutSeconds` covers dispatch and callback wait; `HeartbeatSeconds` applies to
//!   `.waitForTaskToken` tasks (from dispatch, reset by [`Runner::send_task_heartbeat`]). On
//!   expiry the task fails with `States.Timeout` / `States.HeartbeatTimeout` and `Retry`/`Catch`
//!   apply. The machine's `TimeoutSeconds` ends the execution as `TimedOut` (error
//!   `States.Timeout`). [`Runner::stop_execution`] ends it as `Aborted`.
//! * Callbacks: a token that is malformed or names no execution is `InvalidToken`; a token whose
//!   task is no longer waiting (already completed, failed, timed out, retried) is `TaskTimedOut`
//!   — so a duplicate `send_task_success` is an error, never a second transition. A callback
//!   returns after the resulting transition is journaled. A callback for an execution that is
//!   journaled as waiting but not yet resumed in this process resumes it first.
//! * [`Runner::start_execution`] is idempotent by name like `StartExecution`.
//! * [`RunnerOptions::time_scale`] multiplies every wait (Wait seconds, retry intervals, task and
//!   execution timeouts, heartbeats) so tests run in milliseconds.
//!
//! # Deliberate differences from AWS Step Functions
//!
//! * Only the subset above: no `Parallel`, `Map`, `Timestamp`/`TimestampPath`,
//!   `TimeoutSecondsPath`/`HeartbeatSecondsPath`, `StringMatches`, `Timestamp…` operators,
//!   `IsTimestamp`, other intrinsic functions, JSONata, `Assign`/variables, `Credentials`,
//!   `JitterStrategy`, JsonPath wildcards, filters, slices or recursive descent. They are
//!   rejected when the definition is loaded, never ignored.
//! * Resources are not interpreted: there is no `.sync` pattern and no IAM. Only the
//!   `lambda:invoke` result envelope is reproduced (`ExecutedVersion`, `Payload`,
//!   `SdkHttpMetadata`, `SdkResponseMetadata`, `StatusCode`), with placeholder metadata.
//! * For `.waitForTaskToken` resources a `Completed` dispatch result is discarded and the task
//!   waits for its callback (Step Functions discards the service response too); a dispatcher
//!   that returns `AwaitingCallback` for any other resource fails the execution with
//!   `States.Runtime`.
//! * A path missing in `Parameters`/`ResultSelector`/`InputPath`/`OutputPath`/Choice
//!   `Variable` is `States.Runtime` (not retriable, not catchable), as Step Functions reports it.
//!   Intrinsic-function failures are `States.IntrinsicFailure` and, inside a Task, go through
//!   `Retry`/`Catch`.
//! * Task tokens are this runner's own format (`tt1.<hex execution id>.<attempt>.<nonce>`) and
//!   are valid only for this runner's journal; execution ids are ARN-shaped with region
//!   `local` and account `000000000000` by default ([`RunnerOptions`]).
//! * No execution history, no 90-day name retention beyond what the journal keeps, no payload
//!   size limits (`States.DataLimitExceeded` is never raised), no state-transition quotas.
//! * A restart re-dispatches a Task that was in flight (at-least-once), which Step Functions
//!   does not do within one execution; dispatchers must be idempotent per
//!   (`execution_id`, `state_name`, `attempt`).
//! * A callback that arrives while its task's dispatch is still in flight completes the task
//!   at once; the in-flight dispatch future is dropped.
//! * Resuming uses the runner's current definition even if the execution started with another
//!   version (logged); Step Functions pins the version.
//! * Timers use the local wall clock (deadlines are journaled as epoch milliseconds) and can be
//!   scaled with `time_scale`; `IntervalSeconds` etc. stay integers as ASL requires.

pub mod dispatch;
pub mod error;
pub mod intrinsic;
pub mod journal;
pub mod model;
pub mod path;
pub mod runner;
pub mod substitute;
mod time;

pub use dispatch::{lambda_invoke_result, TaskCall, TaskDispatcher, TaskFailure, TaskOutcome};
pub use error::{names, DefinitionError, StatesError};
pub use journal::{
    ExecutionJournal, ExecutionSnapshot, ExecutionStatus, JournalError, MemoryJournal, Step,
};
pub use model::{StateMachine, LAMBDA_INVOKE};
pub use path::JsonPath;
pub use runner::{Runner, RunnerError, RunnerOptions};
pub use substitute::{placeholders, substitute};
