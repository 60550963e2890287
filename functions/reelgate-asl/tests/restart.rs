//! A process restart: a new runner over the same journal resumes what the old one left.

mod common;

use common::{runner_with, FakeDispatcher, FakeReply, FAST, PATIENCE};
use reelgate_asl::{ExecutionJournal, ExecutionStatus, MemoryJournal, Step};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

fn workflow(render_timeout: u64) -> Value {
    json!({"StartAt": "Moderate", "States": {
        "Moderate": {
            "Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
            "Parameters": {"FunctionName": "moderate", "Payload.$": "$"},
            "ResultSelector": {"verdict.$": "$.Payload.verdict"},
            "ResultPath": "$.moderation",
            "Next": "Render"
        },
        "Render": {
            "Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
            "Parameters": {"QueueUrl": "q", "MessageBody": {"token.$": "$$.Task.Token"}},
            "TimeoutSeconds": render_timeout,
            "ResultPath": "$.render",
            "Catch": [{"ErrorEquals": ["States.Timeout"], "ResultPath": "$.error", "Next": "TimedOut"}],
            "Next": "Bill"
        },
        "Bill": {"Type": "Task", "Resource": "arn:aws:states:::dynamodb:updateItem",
                 "Parameters": {"job.$": "$.job_id"}, "ResultPath": null, "End": true},
        "TimedOut": {"Type": "Fail", "Error": "render_timeout"}
    }})
}

#[tokio::test]
async fn a_task_waiting_for_its_token_survives_a_restart() {
    let journal = Arc::new(MemoryJournal::new());
    let first_fake = FakeDispatcher::new();
    first_fake.script(
        "Moderate",
        vec![FakeReply::Complete(json!({"verdict": "allow"}))],
    );
    let first = runner_with(workflow(100_000), first_fake.clone(), journal.clone(), FAST);
    let id = first
        .start_execution("job", json!({"job_id": "j1"}))
        .await
        .unwrap();
    first
        .wait_until(&id, PATIENCE, |s| {
            s.current_state == "Render" && s.step == Step::AwaitingCallback
        })
        .await
        .unwrap();
    let token = first_fake.calls_to("Render")[0].task_token.clone().unwrap();
    drop(first); // the process stops

    let second_fake = FakeDispatcher::new();
    let second = runner_with(
        workflow(100_000),
        second_fake.clone(),
        journal.clone(),
        FAST,
    );
    assert_eq!(second.resume_unfinished().await.unwrap(), 1);
    assert_eq!(
        second.resume_unfinished().await.unwrap(),
        0,
        "already running"
    );
    second
        .send_task_success(&token, json!({"video": "v"}))
        .await
        .unwrap();
    let done = second.wait_for(&id, PATIENCE).await.unwrap();
    assert_eq!(done.status, ExecutionStatus::Succeeded, "{done:?}");
    assert_eq!(
        done.output,
        Some(json!({"job_id": "j1", "moderation": {"verdict": "allow"}, "render": {"video": "v"}}))
    );
    // The waiting task was not dispatched again; only the next state was.
    let states: Vec<String> = second_fake
        .calls()
        .into_iter()
        .map(|c| c.state_name)
        .collect();
    assert_eq!(states, ["Bill"]);
    assert!(journal.load_unfinished().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_callback_before_resume_resumes_the_execution() {
    let journal = Arc::new(MemoryJournal::new());
    let first_fake = FakeDispatcher::new();
    first_fake.script(
        "Moderate",
        vec![FakeReply::Complete(json!({"verdict": "allow"}))],
    );
    let first = runner_with(workflow(100_000), first_fake.clone(), journal.clone(), FAST);
    let id = first
        .start_execution("job", json!({"job_id": "j1"}))
        .await
        .unwrap();
    first
        .wait_until(&id, PATIENCE, |s| s.step == Step::AwaitingCallback)
        .await
        .unwrap();
    let token = first_fake.calls_to("Render")[0].task_token.clone().unwrap();
    drop(first);

    let second = runner_with(workflow(100_000), FakeDispatcher::new(), journal, FAST);
    second.send_task_success(&token, json!("ok")).await.unwrap();
    let done = second.wait_for(&id, PATIENCE).await.unwrap();
    assert_eq!(done.status, ExecutionStatus::Succeeded);
    assert!(matches!(
        second.send_task_success(&token, json!("again")).await,
        Err(reelgate_asl::RunnerError::TaskTimedOut(_))
    ));
}

#[tokio::test]
async fn a_task_in_flight_at_the_restart_is_dispatched_again() {
    let journal = Arc::new(MemoryJournal::new());
    let first_fake = FakeDispatcher::new();
    first_fake.script("Moderate", vec![FakeReply::Hang]);
    let first = runner_with(workflow(100_000), first_fake.clone(), journal.clone(), FAST);
    let id = first
        .start_execution("job", json!({"job_id": "j1"}))
        .await
        .unwrap();
    let in_flight = first_fake.next_call().await;
    assert_eq!(in_flight.state_name, "Moderate");
    drop(first);

    let second_fake = FakeDispatcher::new();
    second_fake.script(
        "Moderate",
        vec![FakeReply::Complete(json!({"verdict": "allow"}))],
    );
    let second = runner_with(workflow(100_000), second_fake.clone(), journal, FAST);
    assert_eq!(second.resume_unfinished().await.unwrap(), 1);
    let again = second_fake.next_call().await;
    assert_eq!(again.state_name, "Moderate");
    assert_eq!(again.attempt, in_flight.attempt);
    assert_eq!(again.parameters, in_flight.parameters);
    let render = second_fake.next_call().await;
    second
        .send_task_success(&render.task_token.unwrap(), json!({}))
        .await
        .unwrap();
    let done = second.wait_for(&id, PATIENCE).await.unwrap();
    assert_eq!(done.status, ExecutionStatus::Succeeded, "{done:?}");
}

#[tokio::test]
async fn a_callback_task_in_flight_is_redispatched_with_the_same_token() {
    let journal = Arc::new(MemoryJournal::new());
    let first_fake = FakeDispatcher::new();
    first_fake.script(
        "Moderate",
        vec![FakeReply::Complete(json!({"verdict": "allow"}))],
    );
    first_fake.script("Render", vec![FakeReply::Hang]);
    let first = runner_with(workflow(100_000), first_fake.clone(), journal.clone(), FAST);
    let id = first
        .start_execution("job", json!({"job_id": "j1"}))
        .await
        .unwrap();
    first_fake.next_call().await;
    let in_flight = first_fake.next_call().await;
    assert_eq!(in_flight.state_name, "Render");
    drop(first);

    let second_fake = FakeDispatcher::new();
    let second = runner_with(workflow(100_000), second_fake.clone(), journal, FAST);
    second.resume_unfinished().await.unwrap();
    let again = second_fake.next_call().await;
    assert_eq!(again.task_token, in_flight.task_token);
    second
        .send_task_success(&again.task_token.unwrap(), json!({}))
        .await
        .unwrap();
    let done = second.wait_for(&id, PATIENCE).await.unwrap();
    assert_eq!(done.status, ExecutionStatus::Succeeded);
}

#[tokio::test]
async fn a_deadline_that_passed_while_down_fires_on_resume() {
    let journal = Arc::new(MemoryJournal::new());
    let first_fake = FakeDispatcher::new();
    first_fake.script(
        "Moderate",
        vec![FakeReply::Complete(json!({"verdict": "allow"}))],
    );
    // TimeoutSeconds 20 at scale 0.01: 200 ms.
    let first = runner_with(workflow(20), first_fake, journal.clone(), FAST);
    let id = first
        .start_execution("job", json!({"job_id": "j1"}))
        .await
        .unwrap();
    let waiting = first
        .wait_until(&id, PATIENCE, |s| s.step == Step::AwaitingCallback)
        .await
        .unwrap();
    drop(first);
    let deadline = waiting
        .task_timeout_at_ms
        .expect("a journaled task deadline");
    tokio::time::sleep(Duration::from_millis(300)).await;

    let second = runner_with(workflow(20), FakeDispatcher::new(), journal, FAST);
    let before = second.describe(&id).await.unwrap().unwrap();
    assert_eq!(before.status, ExecutionStatus::Running);
    assert_eq!(before.task_timeout_at_ms, Some(deadline));
    second.resume_unfinished().await.unwrap();
    let done = second.wait_for(&id, PATIENCE).await.unwrap();
    assert_eq!(done.status, ExecutionStatus::Failed);
    assert_eq!(done.error.as_deref(), Some("render_timeout"));
}

#[tokio::test]
async fn a_retry_interval_continues_after_a_restart() {
    let journal = Arc::new(MemoryJournal::new());
    let definition = json!({"StartAt": "Work", "States": {"Work": {
        "Type": "Task", "Resource": "r",
        "Retry": [{"ErrorEquals": ["Transient"], "IntervalSeconds": 30, "MaxAttempts": 1}],
        "End": true}}});
    let first_fake = FakeDispatcher::new();
    first_fake.script(
        "Work",
        vec![FakeReply::Fail(reelgate_asl::TaskFailure::new(
            "Transient",
            "x",
        ))],
    );
    let first = runner_with(definition.clone(), first_fake, journal.clone(), FAST);
    let id = first.start_execution("job", json!({"a": 1})).await.unwrap();
    let backing_off = first
        .wait_until(&id, PATIENCE, |s| s.step == Step::RetryBackoff)
        .await
        .unwrap();
    assert_eq!(backing_off.retry_counts, [1]);
    drop(first);

    let second_fake = FakeDispatcher::new();
    let second = runner_with(definition, second_fake.clone(), journal, FAST);
    second.resume_unfinished().await.unwrap();
    let done = second.wait_for(&id, PATIENCE).await.unwrap();
    assert_eq!(done.status, ExecutionStatus::Succeeded);
    assert_eq!(done.output, Some(json!({"a": 1})));
    assert_eq!(second_fake.calls()[0].attempt, 2);
}

#[tokio::test]
async fn snapshots_serialize_for_durable_journals() {
    let journal = Arc::new(MemoryJournal::new());
    let fake = FakeDispatcher::new();
    fake.script(
        "Moderate",
        vec![FakeReply::Complete(json!({"verdict": "allow"}))],
    );
    let runner = runner_with(workflow(100), fake, journal.clone(), FAST);
    let id = runner
        .start_execution("job", json!({"job_id": "j1"}))
        .await
        .unwrap();
    let snapshot = runner
        .wait_until(&id, PATIENCE, |s| s.step == Step::AwaitingCallback)
        .await
        .unwrap();
    let text = serde_json::to_string(&snapshot).unwrap();
    let back: reelgate_asl::ExecutionSnapshot = serde_json::from_str(&text).unwrap();
    assert_eq!(back, snapshot);
    assert_eq!(back.status, ExecutionStatus::Running);
    assert_eq!(back.current_state, "Render");
}
