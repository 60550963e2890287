//! `.waitForTaskToken`: callbacks, heartbeats, timeouts, duplicates, idempotent starts.

mod common;

use common::{runner, runner_with, FakeDispatcher, FakeReply, PATIENCE};
use reelgate_asl::{ExecutionStatus, MemoryJournal, RunnerError, Step, TaskFailure};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

fn render_machine(heartbeat: Option<u64>, timeout: Option<u64>) -> Value {
    let mut render = json!({
        "Type": "Task",
        "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
        "Parameters": {
            "QueueUrl": "local://render",
            "MessageBody": {"job.$": "$.job_id", "token.$": "$$.Task.Token"}
        },
        "ResultPath": "$.render",
        "Retry": [{"ErrorEquals": ["Retryable"], "IntervalSeconds": 1, "MaxAttempts": 1}],
        "Catch": [
            {"ErrorEquals": ["States.HeartbeatTimeout"], "ResultPath": "$.error", "Next": "HeartbeatLost"},
            {"ErrorEquals": ["States.Timeout"], "ResultPath": "$.error", "Next": "TooSlow"},
            {"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "RenderFailed"}
        ],
        "Next": "Done"
    });
    if let Some(h) = heartbeat {
        render["HeartbeatSeconds"] = json!(h);
    }
    if let Some(t) = timeout {
        render["TimeoutSeconds"] = json!(t);
    }
    json!({"StartAt": "Render", "States": {
        "Render": render,
        "Done": {"Type": "Succeed"},
        "HeartbeatLost": {"Type": "Fail", "Error": "heartbeat_lost"},
        "TooSlow": {"Type": "Fail", "Error": "too_slow"},
        "RenderFailed": {"Type": "Fail", "ErrorPath": "$.error.Error", "CausePath": "$.error.Cause"}
    }})
}

#[tokio::test]
async fn success_callback_completes_the_task_and_a_duplicate_is_rejected() {
    let fake = FakeDispatcher::new();
    let runner = runner(render_machine(None, None), fake.clone());
    let id = runner
        .start_execution("job-1", json!({"job_id": "j1"}))
        .await
        .unwrap();
    let call = fake.next_call().await;
    let token = call
        .task_token
        .clone()
        .expect("a token for waitForTaskToken");
    assert_eq!(call.parameters["MessageBody"]["token"], json!(token));
    assert_eq!(call.parameters["MessageBody"]["job"], json!("j1"));
    assert_eq!(call.parameters["QueueUrl"], json!("local://render"));
    let waiting = runner
        .wait_until(&id, PATIENCE, |s| s.step == Step::AwaitingCallback)
        .await
        .unwrap();
    assert_eq!(waiting.task_token.as_deref(), Some(token.as_str()));

    runner
        .send_task_success(&token, json!({"video": "v.mp4"}))
        .await
        .unwrap();
    // The callback returns after the transition is journaled.
    let done = runner.wait_for(&id, PATIENCE).await.unwrap();
    assert_eq!(done.status, ExecutionStatus::Succeeded);
    assert_eq!(
        done.output,
        Some(json!({"job_id": "j1", "render": {"video": "v.mp4"}}))
    );

    let again = runner.send_task_success(&token, json!({})).await;
    assert!(
        matches!(again, Err(RunnerError::TaskTimedOut(_))),
        "{again:?}"
    );
    let again = runner.send_task_failure(&token, "E", "c").await;
    assert!(
        matches!(again, Err(RunnerError::TaskTimedOut(_))),
        "{again:?}"
    );
    let heartbeat = runner.send_task_heartbeat(&token).await;
    assert!(
        matches!(heartbeat, Err(RunnerError::TaskTimedOut(_))),
        "{heartbeat:?}"
    );
    assert_eq!(fake.calls().len(), 1);
}

#[tokio::test]
async fn unknown_tokens_are_invalid() {
    let fake = FakeDispatcher::new();
    let runner = runner(render_machine(None, None), fake);
    for token in [
        "",
        "garbage",
        "tt1.zz.1.00",
        "tt1.6162.1.0123456789abcdef0123456789abcdef",
    ] {
        let result = runner.send_task_success(token, json!({})).await;
        assert!(
            matches!(result, Err(RunnerError::InvalidToken(_))),
            "{token}: {result:?}"
        );
    }
}

#[tokio::test]
async fn concurrent_duplicate_callbacks_make_one_transition() {
    let fake = FakeDispatcher::new();
    let runner = runner(render_machine(None, None), fake.clone());
    let id = runner
        .start_execution("job", json!({"job_id": "j"}))
        .await
        .unwrap();
    let token = fake.next_call().await.task_token.unwrap();
    let (a, b) = tokio::join!(
        runner.send_task_success(&token, json!({"n": 1})),
        runner.send_task_success(&token, json!({"n": 2}))
    );
    assert!(a.is_ok() != b.is_ok(), "exactly one wins: {a:?} {b:?}");
    let done = runner.wait_for(&id, PATIENCE).await.unwrap();
    assert_eq!(done.status, ExecutionStatus::Succeeded);
}

#[tokio::test]
async fn failure_callback_goes_through_retry_then_catch() {
    let fake = FakeDispatcher::new();
    let runner = runner(render_machine(None, None), fake.clone());
    let id = runner
        .start_execution("job", json!({"job_id": "j"}))
        .await
        .unwrap();
    let first = fake.next_call().await.task_token.unwrap();
    runner
        .send_task_failure(&first, "Retryable", "engine busy")
        .await
        .unwrap();
    // The retry dispatches again with a new token; the old one is spent.
    let second = fake.next_call().await;
    assert_eq!(second.attempt, 2);
    let second = second.task_token.unwrap();
    assert_ne!(first, second);
    assert!(matches!(
        runner.send_task_success(&first, json!({})).await,
        Err(RunnerError::TaskTimedOut(_))
    ));
    runner
        .wait_until(&id, PATIENCE, |s| s.step == Step::AwaitingCallback)
        .await
        .unwrap();
    runner
        .send_task_failure(&second, "engine_error", "bad prompt")
        .await
        .unwrap();
    let done = runner.wait_for(&id, PATIENCE).await.unwrap();
    assert_eq!(done.status, ExecutionStatus::Failed);
    assert_eq!(done.error.as_deref(), Some("engine_error"));
    assert_eq!(done.cause.as_deref(), Some("bad prompt"));
}

#[tokio::test]
async fn missing_heartbeats_fail_with_heartbeat_timeout() {
    let fake = FakeDispatcher::new();
    let runner = runner(render_machine(Some(2), Some(1000)), fake);
    let id = runner
        .start_execution("job", json!({"job_id": "j"}))
        .await
        .unwrap();
    let done = runner.wait_for(&id, PATIENCE).await.unwrap();
    assert_eq!(done.status, ExecutionStatus::Failed);
    assert_eq!(done.error.as_deref(), Some("heartbeat_lost"));
}

#[tokio::test]
async fn heartbeats_keep_a_task_alive_until_its_callback() {
    let fake = FakeDispatcher::new();
    // HeartbeatSeconds 1 is 500 ms at this scale; a heartbeat every 20 ms for over 600 ms
    // (longer than the heartbeat window, with a wide margin for a loaded machine).
    let runner = runner_with(
        render_machine(Some(1), Some(1000)),
        fake.clone(),
        Arc::new(MemoryJournal::new()),
        0.5,
    );
    let id = runner
        .start_execution("job", json!({"job_id": "j"}))
        .await
        .unwrap();
    let token = fake.next_call().await.task_token.unwrap();
    for _ in 0..30 {
        runner.send_task_heartbeat(&token).await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    runner
        .send_task_success(&token, json!("rendered"))
        .await
        .unwrap();
    let done = runner.wait_for(&id, PATIENCE).await.unwrap();
    assert_eq!(done.status, ExecutionStatus::Succeeded, "{done:?}");
}

#[tokio::test]
async fn the_task_timeout_holds_regardless_of_heartbeats() {
    let fake = FakeDispatcher::new();
    // HeartbeatSeconds 1 is 250 ms, TimeoutSeconds 2 is 500 ms; heartbeats every 10 ms.
    let runner = runner_with(
        render_machine(Some(1), Some(2)),
        fake.clone(),
        Arc::new(MemoryJournal::new()),
        0.25,
    );
    let id = runner
        .start_execution("job", json!({"job_id": "j"}))
        .await
        .unwrap();
    let token = fake.next_call().await.task_token.unwrap();
    let mut beats = 0;
    while runner.send_task_heartbeat(&token).await.is_ok() {
        beats += 1;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(beats > 0);
    let done = runner.wait_for(&id, PATIENCE).await.unwrap();
    assert_eq!(done.error.as_deref(), Some("too_slow"), "{done:?}");
    // The timed-out token is spent.
    assert!(matches!(
        runner.send_task_success(&token, json!({})).await,
        Err(RunnerError::TaskTimedOut(_))
    ));
}

#[tokio::test]
async fn a_dispatch_failure_of_a_callback_task_is_a_task_error() {
    let fake = FakeDispatcher::new();
    fake.script(
        "Render",
        vec![FakeReply::Fail(TaskFailure::new(
            "SQS.QueueDoesNotExist",
            "no queue",
        ))],
    );
    let runner = runner(render_machine(None, None), fake);
    let id = runner
        .start_execution("job", json!({"job_id": "j"}))
        .await
        .unwrap();
    let done = runner.wait_for(&id, PATIENCE).await.unwrap();
    assert_eq!(done.error.as_deref(), Some("SQS.QueueDoesNotExist"));
}

#[tokio::test]
async fn start_is_idempotent_by_name_and_input() {
    let fake = FakeDispatcher::new();
    let runner = runner(render_machine(None, None), fake.clone());
    let input = json!({"job_id": "j"});
    let id = runner
        .start_execution("job-7", input.clone())
        .await
        .unwrap();
    let again = runner
        .start_execution("job-7", input.clone())
        .await
        .unwrap();
    assert_eq!(id, again);
    let token = fake.next_call().await.task_token.unwrap();
    let different = runner
        .start_execution("job-7", json!({"job_id": "other"}))
        .await;
    assert!(
        matches!(different, Err(RunnerError::ExecutionAlreadyExists(_))),
        "{different:?}"
    );
    runner.send_task_success(&token, json!({})).await.unwrap();
    runner.wait_for(&id, PATIENCE).await.unwrap();
    let after = runner.start_execution("job-7", input).await;
    assert!(
        matches!(after, Err(RunnerError::ExecutionAlreadyExists(_))),
        "{after:?}"
    );
    assert_eq!(fake.calls().len(), 1, "one execution, one dispatch");
    for bad in ["", "has space", "a/b", "x:y", &"n".repeat(81)] {
        let result = runner.start_execution(bad, json!({})).await;
        assert!(
            matches!(result, Err(RunnerError::InvalidName(_))),
            "{bad}: {result:?}"
        );
    }
}

#[tokio::test]
async fn stopping_an_execution_aborts_it_and_spends_its_token() {
    let fake = FakeDispatcher::new();
    let runner = runner(render_machine(None, None), fake.clone());
    let id = runner
        .start_execution("job", json!({"job_id": "j"}))
        .await
        .unwrap();
    let token = fake.next_call().await.task_token.unwrap();
    runner
        .stop_execution(&id, Some("cancelled"), Some("user asked"))
        .await
        .unwrap();
    let done = runner.describe(&id).await.unwrap().unwrap();
    assert_eq!(done.status, ExecutionStatus::Aborted);
    assert_eq!(done.error.as_deref(), Some("cancelled"));
    assert!(matches!(
        runner.send_task_success(&token, json!({})).await,
        Err(RunnerError::TaskTimedOut(_))
    ));
    assert!(matches!(
        runner.stop_execution("arn:nope", None, None).await,
        Err(RunnerError::ExecutionDoesNotExist(_))
    ));
}
