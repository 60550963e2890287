//! Retry and Catch.

mod common;

use common::{runner, FakeDispatcher, FakeReply, PATIENCE};
use reelgate_asl::model::Retrier;
use reelgate_asl::{ExecutionSnapshot, ExecutionStatus, Runner, TaskFailure};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Instant;

async fn run(runner: &Arc<Runner>, name: &str, input: Value) -> ExecutionSnapshot {
    let id = runner.start_execution(name, input).await.unwrap();
    runner.wait_for(&id, PATIENCE).await.unwrap()
}

fn transient() -> FakeReply {
    FakeReply::Fail(TaskFailure::new("Transient", "try again"))
}

fn retry_then_catch() -> Value {
    json!({"StartAt": "Work", "States": {
        "Work": {
            "Type": "Task",
            "Resource": "arn:aws:states:::lambda:invoke",
            "Parameters": {"FunctionName": "work", "Payload.$": "$"},
            "Retry": [
                {"ErrorEquals": ["Other"], "MaxAttempts": 5},
                {"ErrorEquals": ["Transient"], "IntervalSeconds": 2, "MaxAttempts": 2, "BackoffRate": 3}
            ],
            "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Record"}],
            "End": true
        },
        "Record": {"Type": "Pass", "Next": "Failed"},
        "Failed": {"Type": "Fail", "ErrorPath": "$.error.Error", "CausePath": "$.error.Cause"}
    }})
}

#[tokio::test]
async fn retries_with_backoff_then_catches_into_fail_keeping_the_input() {
    let fake = FakeDispatcher::new();
    fake.script(
        "Work",
        vec![transient(), transient(), transient(), transient()],
    );
    let runner = runner(retry_then_catch(), fake.clone());
    let started = Instant::now();
    let id = runner
        .start_execution("job", json!({"job_id": "j1"}))
        .await
        .unwrap();
    // The Pass state between Catch and Fail shows the preserved input with the error added.
    let at_record = runner
        .wait_until(&id, PATIENCE, |s| {
            s.current_state == "Record" || s.is_finished()
        })
        .await
        .unwrap();
    assert_eq!(
        at_record.current_input,
        json!({"job_id": "j1", "error": {"Error": "Transient", "Cause": "try again"}})
    );
    let done = runner.wait_for(&id, PATIENCE).await.unwrap();
    assert_eq!(done.status, ExecutionStatus::Failed);
    assert_eq!(done.error.as_deref(), Some("Transient"));
    assert_eq!(done.cause.as_deref(), Some("try again"));
    // First attempt plus MaxAttempts = 2 retries; attempts numbered 1, 2, 3.
    let attempts: Vec<u32> = fake.calls_to("Work").iter().map(|c| c.attempt).collect();
    assert_eq!(attempts, [1, 2, 3]);
    // Intervals 2 s then 6 s (BackoffRate 3), scaled by 0.01: at least 80 ms in total.
    assert!(started.elapsed().as_millis() >= 80);
}

#[test]
fn backoff_delays_grow_and_are_capped() {
    let retrier = Retrier {
        error_equals: vec!["X".into()],
        interval_seconds: 1,
        max_attempts: 5,
        backoff_rate: 2.5,
        max_delay_seconds: Some(4),
    };
    let delays: Vec<f64> = (0..4).map(|n| retrier.delay_seconds(n)).collect();
    assert_eq!(delays, [1.0, 2.5, 4.0, 4.0]);
}

#[tokio::test]
async fn a_retry_that_succeeds_continues_normally() {
    let fake = FakeDispatcher::new();
    fake.script(
        "Work",
        vec![transient(), FakeReply::Complete(json!({"ok": true}))],
    );
    let runner = runner(retry_then_catch(), fake.clone());
    let done = run(&runner, "job", json!({})).await;
    assert_eq!(done.status, ExecutionStatus::Succeeded, "{done:?}");
    assert_eq!(done.output.unwrap()["Payload"], json!({"ok": true}));
    assert_eq!(fake.calls_to("Work").len(), 2);
}

#[tokio::test]
async fn max_attempts_zero_never_retries_and_only_the_first_matching_retrier_counts() {
    let fake = FakeDispatcher::new();
    fake.script("Work", vec![transient(), transient()]);
    let runner = runner(
        json!({"StartAt": "Work", "States": {"Work": {
            "Type": "Task", "Resource": "r",
            "Retry": [
                {"ErrorEquals": ["Transient"], "MaxAttempts": 0},
                {"ErrorEquals": ["States.ALL"], "MaxAttempts": 3}
            ],
            "End": true}}}),
        fake.clone(),
    );
    let done = run(&runner, "job", json!({})).await;
    assert_eq!(done.status, ExecutionStatus::Failed);
    assert_eq!(done.error.as_deref(), Some("Transient"));
    assert_eq!(fake.calls_to("Work").len(), 1);
}

fn catch_order() -> Value {
    json!({"StartAt": "Work", "States": {
        "Work": {
            "Type": "Task", "Resource": "r", "TimeoutSeconds": 1,
            "Catch": [
                {"ErrorEquals": ["ModerationUnavailable"], "Next": "Specific"},
                {"ErrorEquals": ["States.TaskFailed"], "ResultPath": "$.failed", "Next": "TaskFailed"},
                {"ErrorEquals": ["States.ALL"], "ResultPath": null, "Next": "All"}
            ],
            "End": true
        },
        "Specific": {"Type": "Pass", "Result": "specific", "ResultPath": "$.route", "End": true},
        "TaskFailed": {"Type": "Pass", "Result": "task-failed", "ResultPath": "$.route", "End": true},
        "All": {"Type": "Pass", "Result": "all", "ResultPath": "$.route", "End": true}
    }})
}

#[tokio::test]
async fn catchers_are_tried_in_order_and_task_failed_excludes_timeout() {
    let fake = FakeDispatcher::new();
    fake.script(
        "Work",
        vec![
            FakeReply::Fail(TaskFailure::lambda_function_error(
                "ModerationUnavailable",
                "provider down",
            )),
            FakeReply::Fail(TaskFailure::new("Boom", "bad")),
            FakeReply::Hang,
        ],
    );
    let runner = runner(catch_order(), fake);
    let specific = run(&runner, "a", json!({"in": 1})).await;
    let specific_out = specific.output.unwrap();
    assert_eq!(specific_out["route"], json!("specific"));
    // Default catcher ResultPath `$` replaces the input with the error output.
    assert_eq!(specific_out["Error"], json!("ModerationUnavailable"));
    let cause: Value = serde_json::from_str(specific_out["Cause"].as_str().unwrap()).unwrap();
    assert_eq!(cause["errorType"], json!("ModerationUnavailable"));
    assert_eq!(cause["errorMessage"], json!("provider down"));

    let task_failed = run(&runner, "b", json!({"in": 2})).await;
    assert_eq!(
        task_failed.output,
        Some(json!({"in": 2, "failed": {"Error": "Boom", "Cause": "bad"}, "route": "task-failed"}))
    );

    // A hung task times out: States.Timeout is not matched by States.TaskFailed.
    let timed_out = run(&runner, "c", json!({"in": 3})).await;
    assert_eq!(timed_out.output, Some(json!({"in": 3, "route": "all"})));
}

#[tokio::test]
async fn runtime_errors_are_not_caught_by_states_all() {
    let fake = FakeDispatcher::new();
    let runner = runner(
        json!({"StartAt": "Work", "States": {
            "Work": {"Type": "Task", "Resource": "r",
                     "Parameters": {"x.$": "$.absent"},
                     "Retry": [{"ErrorEquals": ["States.ALL"]}],
                     "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Caught"}],
                     "End": true},
            "Caught": {"Type": "Succeed"}
        }}),
        fake.clone(),
    );
    let done = run(&runner, "job", json!({})).await;
    assert_eq!(done.status, ExecutionStatus::Failed);
    assert_eq!(done.error.as_deref(), Some("States.Runtime"));
    assert!(fake.calls().is_empty());
}

#[tokio::test]
async fn result_path_match_failure_is_catchable() {
    let fake = FakeDispatcher::new();
    fake.script("Work", vec![FakeReply::Complete(json!(1))]);
    let runner = runner(
        json!({"StartAt": "Work", "States": {
            "Work": {"Type": "Task", "Resource": "r", "ResultPath": "$.scalar.inner",
                     "Catch": [{"ErrorEquals": ["States.ResultPathMatchFailure"], "ResultPath": "$.err", "Next": "Caught"}],
                     "End": true},
            "Caught": {"Type": "Succeed"}
        }}),
        fake,
    );
    let done = run(&runner, "job", json!({"scalar": "text"})).await;
    assert_eq!(done.status, ExecutionStatus::Succeeded, "{done:?}");
    assert_eq!(
        done.output.unwrap()["err"]["Error"],
        json!("States.ResultPathMatchFailure")
    );
}

#[tokio::test]
async fn an_uncaught_task_error_fails_the_execution_with_its_name() {
    let fake = FakeDispatcher::new();
    fake.script(
        "Work",
        vec![FakeReply::Fail(TaskFailure::lambda_function_error(
            "EngineUnreachable",
            "connection refused",
        ))],
    );
    let runner = runner(
        json!({"StartAt": "Work", "States": {"Work": {
            "Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
            "Parameters": {"FunctionName": "f", "Payload": {}}, "End": true}}}),
        fake,
    );
    let done = run(&runner, "job", json!({})).await;
    assert_eq!(done.status, ExecutionStatus::Failed);
    assert_eq!(done.error.as_deref(), Some("EngineUnreachable"));
    assert!(done.cause.unwrap().contains("connection refused"));
}

#[tokio::test]
async fn execution_timeout_ends_as_timed_out() {
    let fake = FakeDispatcher::new();
    fake.script("Work", vec![FakeReply::Hang]);
    let runner = runner(
        json!({"StartAt": "Work", "TimeoutSeconds": 2, "States": {"Work": {
            "Type": "Task", "Resource": "r",
            "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Never"}],
            "End": true},
            "Never": {"Type": "Succeed"}}}),
        fake,
    );
    let done = run(&runner, "job", json!({})).await;
    assert_eq!(done.status, ExecutionStatus::TimedOut);
    assert_eq!(done.error.as_deref(), Some("States.Timeout"));
    assert!(done.stop_time.is_some());
}
