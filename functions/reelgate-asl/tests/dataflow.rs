//! Input and output processing, intrinsic functions, Choice and Wait, run end to end.

mod common;

use common::{runner, FakeDispatcher, FakeReply, PATIENCE};
use reelgate_asl::{ExecutionSnapshot, ExecutionStatus, Runner};
use serde_json::{json, Value};
use std::sync::Arc;

async fn run(runner: &Arc<Runner>, name: &str, input: Value) -> ExecutionSnapshot {
    let id = runner.start_execution(name, input).await.unwrap();
    runner.wait_for(&id, PATIENCE).await.unwrap()
}

async fn output_of(definition: Value, input: Value) -> Value {
    let fake = FakeDispatcher::new();
    let runner = runner(definition, fake);
    let done = run(&runner, "run", input).await;
    assert_eq!(done.status, ExecutionStatus::Succeeded, "{done:?}");
    done.output.unwrap()
}

#[tokio::test]
async fn lambda_invoke_parameters_result_selector_result_path_output_path() {
    let fake = FakeDispatcher::new();
    fake.script(
        "Moderate",
        vec![FakeReply::Complete(
            json!({"verdict": "allow", "score": 0.1}),
        )],
    );
    let definition = json!({
        "StartAt": "Moderate",
        "States": {
            "Moderate": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke",
                "InputPath": "$.request",
                "Parameters": {
                    "FunctionName": "moderate",
                    "Payload": {
                        "prompt.$": "$.prompt",
                        "first.$": "$.tags[0]",
                        "execution.$": "$$.Execution.Id",
                        "name.$": "$$.Execution.Name",
                        "state.$": "$$.State.Name",
                        "original.$": "$$.Execution.Input.request.prompt",
                        "fixed": [1, 2]
                    }
                },
                "ResultSelector": {
                    "verdict.$": "$.Payload.verdict",
                    "status.$": "$.StatusCode"
                },
                "ResultPath": "$.moderation",
                "OutputPath": "$.moderation",
                "End": true
            }
        }
    });
    let runner = runner(definition, fake.clone());
    let done = run(
        &runner,
        "job-1",
        json!({"request": {"prompt": "a cat", "tags": ["x", "y"]}, "other": true}),
    )
    .await;
    assert_eq!(done.status, ExecutionStatus::Succeeded, "{done:?}");
    assert_eq!(
        done.output,
        Some(json!({"verdict": "allow", "status": 200}))
    );
    let calls = fake.calls();
    assert_eq!(calls.len(), 1);
    let call = &calls[0];
    assert_eq!(call.resource, "arn:aws:states:::lambda:invoke");
    assert_eq!(call.attempt, 1);
    assert_eq!(call.task_token, None);
    assert_eq!(
        call.parameters,
        json!({
            "FunctionName": "moderate",
            "Payload": {
                "prompt": "a cat",
                "first": "x",
                "execution": done.execution_id,
                "name": "job-1",
                "state": "Moderate",
                "original": "a cat",
                "fixed": [1, 2]
            }
        })
    );
    assert_eq!(
        done.execution_id,
        "arn:aws:states:local:000000000000:execution:test-machine:job-1"
    );
}

#[tokio::test]
async fn lambda_invoke_result_has_the_step_functions_envelope() {
    let fake = FakeDispatcher::new();
    fake.script("Call", vec![FakeReply::Complete(json!({"x": 1}))]);
    let runner = runner(
        json!({"StartAt": "Call", "States": {"Call": {
            "Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
            "Parameters": {"FunctionName": "f", "Payload.$": "$"}, "End": true}}}),
        fake,
    );
    let done = run(&runner, "e", json!({})).await;
    let out = done.output.unwrap();
    assert_eq!(out["Payload"], json!({"x": 1}));
    assert_eq!(out["StatusCode"], json!(200));
    assert_eq!(out["ExecutedVersion"], json!("$LATEST"));
}

#[tokio::test]
async fn other_resources_return_the_raw_result_and_result_path_null_discards_it() {
    let fake = FakeDispatcher::new();
    fake.script(
        "Update",
        vec![FakeReply::Complete(json!({"Attributes": {}}))],
    );
    fake.script("Get", vec![FakeReply::Complete(json!({"Item": {"n": 1}}))]);
    let runner = runner(
        json!({"StartAt": "Update", "States": {
            "Update": {"Type": "Task", "Resource": "arn:aws:states:::dynamodb:updateItem",
                       "ResultPath": null, "Next": "Get"},
            "Get": {"Type": "Task", "Resource": "arn:aws:states:::dynamodb:getItem",
                    "ResultPath": "$.deep.item", "End": true}
        }}),
        fake,
    );
    let done = run(&runner, "e", json!({"job": "j1"})).await;
    assert_eq!(
        done.output,
        Some(json!({"job": "j1", "deep": {"item": {"Item": {"n": 1}}}}))
    );
}

#[tokio::test]
async fn pass_result_result_path_and_null_paths() {
    let out = output_of(
        json!({"StartAt": "A", "States": {
            "A": {"Type": "Pass", "Result": {"k": "v"}, "ResultPath": "$.added", "Next": "B"},
            "B": {"Type": "Pass", "InputPath": "$.added", "ResultPath": "$.copy", "Next": "C"},
            "C": {"Type": "Pass", "OutputPath": "$.copy", "Next": "D"},
            "D": {"Type": "Pass", "InputPath": null, "ResultPath": "$.empty", "Next": "E"},
            "E": {"Type": "Succeed", "OutputPath": "$.empty"}
        }}),
        json!({"in": 1}),
    )
    .await;
    assert_eq!(out, json!({}));
    let out = output_of(
        json!({"StartAt": "A", "States": {
            "A": {"Type": "Pass", "Result": {"k": "v"}, "ResultPath": "$.added", "Next": "B"},
            "B": {"Type": "Pass", "InputPath": "$.added", "ResultPath": "$.copy", "End": true}
        }}),
        json!({"in": 1}),
    )
    .await;
    // ResultPath places the result into the state's raw input, not the InputPath selection.
    assert_eq!(
        out,
        json!({"in": 1, "added": {"k": "v"}, "copy": {"k": "v"}})
    );
}

#[tokio::test]
async fn intrinsic_functions_in_parameters() {
    let out = output_of(
        json!({"StartAt": "A", "States": {"A": {
            "Type": "Pass",
            "Parameters": {
                "greeting.$": "States.Format('Job {} for {} ({})', $.job, $.user.name, $.count)",
                "parsed.$": "States.StringToJson($.raw)",
                "text.$": "States.JsonToString($.user)",
                "list.$": "States.Array($.job, 'lit', 7, States.Array())",
                "key.$": "States.Format('EXEC#{}', $$.Execution.Name)",
                "nested": {"again.$": "$.count"}
            },
            "End": true
        }}}),
        json!({"job": "j1", "count": 3, "user": {"name": "ada"}, "raw": "{\"a\":[1,true]}"}),
    )
    .await;
    assert_eq!(
        out,
        json!({
            "greeting": "Job j1 for ada (3)",
            "parsed": {"a": [1, true]},
            "text": "{\"name\":\"ada\"}",
            "list": ["j1", "lit", 7, []],
            "key": "EXEC#run",
            "nested": {"again": 3}
        })
    );
}

#[tokio::test]
async fn a_missing_parameter_path_is_a_runtime_failure() {
    let fake = FakeDispatcher::new();
    let runner = runner(
        json!({"StartAt": "A", "States": {"A": {
            "Type": "Pass", "Parameters": {"x.$": "$.missing"}, "End": true}}}),
        fake,
    );
    let done = run(&runner, "e", json!({})).await;
    assert_eq!(done.status, ExecutionStatus::Failed);
    assert_eq!(done.error.as_deref(), Some("States.Runtime"));
    assert!(done.cause.unwrap().contains("$.missing"));
}

fn choice_machine() -> Value {
    json!({"StartAt": "Route", "States": {
        "Route": {"Type": "Choice", "Choices": [
            {"Variable": "$.kind", "StringEquals": "video", "Next": "Video"},
            {"And": [
                {"Variable": "$.n", "IsPresent": true},
                {"Variable": "$.n", "NumericGreaterThanEquals": 10},
                {"Variable": "$.n", "NumericLessThan": 20}
            ], "Next": "Teens"},
            {"Variable": "$.n", "NumericEquals": 1, "Next": "One"},
            {"Or": [
                {"Variable": "$.flag", "BooleanEquals": true},
                {"Not": {"Variable": "$.maybe", "IsNull": false}}
            ], "Next": "FlagOrNull"},
            {"Variable": "$.a", "StringEqualsPath": "$.b", "Next": "Same"}
        ], "Default": "Other"},
        "Video": {"Type": "Pass", "Result": "video", "End": true},
        "Teens": {"Type": "Pass", "Result": "teens", "End": true},
        "One": {"Type": "Pass", "Result": "one", "End": true},
        "FlagOrNull": {"Type": "Pass", "Result": "flag-or-null", "End": true},
        "Same": {"Type": "Pass", "Result": "same", "End": true},
        "Other": {"Type": "Pass", "Result": "other", "End": true}
    }})
}

#[tokio::test]
async fn choice_rules_route_like_step_functions() {
    // Every input has `kind`: a comparison on an absent variable is a runtime error.
    let cases = [
        (json!({"kind": "video"}), "video"),
        (json!({"kind": 5, "n": 15}), "teens"),
        (
            json!({"kind": "k", "n": 20.0, "flag": false, "maybe": 1, "a": "x", "b": "y"}),
            "other",
        ),
        (json!({"kind": "k", "n": 1.0}), "one"),
        (json!({"kind": "k", "n": 2, "flag": true}), "flag-or-null"),
        (
            json!({"kind": "k", "n": 2, "flag": "true", "maybe": null}),
            "flag-or-null",
        ),
        (
            json!({"kind": "k", "n": 2, "flag": 1, "maybe": 0, "a": "x", "b": "x"}),
            "same",
        ),
        (
            json!({"kind": "k", "n": "15", "flag": 0, "maybe": 0, "a": 1, "b": 1}),
            "other",
        ),
    ];
    let fake = FakeDispatcher::new();
    let runner = runner(choice_machine(), fake);
    for (i, (input, expected)) in cases.into_iter().enumerate() {
        let done = run(&runner, &format!("c{i}"), input.clone()).await;
        assert_eq!(done.output, Some(json!(expected)), "input {input}");
    }
}

#[tokio::test]
async fn choice_without_match_or_with_a_missing_variable_fails() {
    let fake = FakeDispatcher::new();
    let runner = runner(
        json!({"StartAt": "C", "States": {
            "C": {"Type": "Choice", "Choices": [
                {"Variable": "$.n", "NumericEquals": 1, "Next": "Done"}]},
            "Done": {"Type": "Succeed"}
        }}),
        fake,
    );
    let done = run(&runner, "nomatch", json!({"n": 2})).await;
    assert_eq!(done.status, ExecutionStatus::Failed);
    assert_eq!(done.error.as_deref(), Some("States.NoChoiceMatched"));
    let done = run(&runner, "missing", json!({})).await;
    assert_eq!(done.status, ExecutionStatus::Failed);
    assert_eq!(done.error.as_deref(), Some("States.Runtime"));
    let done = run(&runner, "match", json!({"n": 1})).await;
    assert_eq!(done.status, ExecutionStatus::Succeeded);
    assert_eq!(done.output, Some(json!({"n": 1})));
}

#[tokio::test]
async fn wait_seconds_path_passes_input_through() {
    let out = output_of(
        json!({"StartAt": "W", "States": {
            "W": {"Type": "Wait", "SecondsPath": "$.delay", "Next": "W2"},
            "W2": {"Type": "Wait", "Seconds": 1, "OutputPath": "$.keep", "End": true}
        }}),
        json!({"delay": 2, "keep": {"k": 1}}),
    )
    .await;
    assert_eq!(out, json!({"k": 1}));
}

#[tokio::test]
async fn fail_state_error_and_cause_from_paths_or_literals() {
    let fake = FakeDispatcher::new();
    let runner = runner(
        json!({"StartAt": "C", "States": {
            "C": {"Type": "Choice", "Choices": [
                {"Variable": "$.literal", "IsPresent": true, "Next": "Literal"}], "Default": "FromPath"},
            "Literal": {"Type": "Fail", "Error": "job_failed", "Cause": "because"},
            "FromPath": {"Type": "Fail", "ErrorPath": "$.code",
                         "CausePath": "States.Format('job {} failed', $.job)"}
        }}),
        fake,
    );
    let done = run(&runner, "lit", json!({"literal": 1})).await;
    assert_eq!(done.status, ExecutionStatus::Failed);
    assert_eq!(
        (done.error.as_deref(), done.cause.as_deref()),
        (Some("job_failed"), Some("because"))
    );
    let done = run(&runner, "path", json!({"code": "engine_down", "job": "j9"})).await;
    assert_eq!(
        (done.error.as_deref(), done.cause.as_deref()),
        (Some("engine_down"), Some("job j9 failed"))
    );
}

#[tokio::test]
async fn context_object_times_are_rfc3339() {
    let out = output_of(
        json!({"StartAt": "A", "States": {"A": {
            "Type": "Pass",
            "Parameters": {"entered.$": "$$.State.EnteredTime", "started.$": "$$.Execution.StartTime",
                           "retry.$": "$$.State.RetryCount", "machine.$": "$$.StateMachine.Name"},
            "End": true}}}),
        json!({}),
    )
    .await;
    for key in ["entered", "started"] {
        let text = out[key].as_str().unwrap();
        assert_eq!(text.len(), 24, "{text}");
        assert!(text.ends_with('Z') && text.as_bytes()[10] == b'T', "{text}");
    }
    assert_eq!(out["retry"], json!(0));
    assert_eq!(out["machine"], json!("test-machine"));
}
