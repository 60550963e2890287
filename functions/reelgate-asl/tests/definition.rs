//! Loading definitions: substitutions and validation errors that name the state.

use reelgate_asl::model::{PathField, StateKind, Transition};
use reelgate_asl::{placeholders, DefinitionError, StateMachine};
use serde_json::{json, Value};
use std::collections::BTreeMap;

fn invalid(definition: Value) -> (Option<String>, String) {
    match StateMachine::from_value("m", &definition) {
        Err(DefinitionError::Invalid { state, message }) => (state, message),
        other => panic!("expected a validation error, got {other:?}"),
    }
}

fn one_state(name: &str, state: Value) -> Value {
    json!({"StartAt": name, "States": {name: state}})
}

const VIDEO_LIKE: &str = r#"{
  "Comment": "moderate, render through a queue with a task token, bill",
  "StartAt": "Moderate",
  "TimeoutSeconds": 3600,
  "States": {
    "Moderate": {
      "Type": "Task",
      "Resource": "arn:aws:states:::lambda:invoke",
      "Parameters": {"FunctionName": "${ModerateFunctionArn}", "Payload.$": "$"},
      "ResultSelector": {"verdict.$": "$.Payload.verdict"},
      "ResultPath": "$.moderation",
      "Retry": [{"ErrorEquals": ["Lambda.ServiceException"], "IntervalSeconds": 2, "MaxAttempts": 3, "BackoffRate": 2, "MaxDelaySeconds": 10}],
      "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "ReleaseAndFail"}],
      "Next": "Allowed?"
    },
    "Allowed?": {
      "Type": "Choice",
      "Choices": [{"Variable": "$.moderation.verdict", "StringEquals": "allow", "Next": "Render"}],
      "Default": "ReleaseAndFail"
    },
    "Render": {
      "Type": "Task",
      "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
      "Parameters": {"QueueUrl": "${RenderQueueUrl}", "MessageBody": {"job.$": "$.job_id", "token.$": "$$.Task.Token"}},
      "HeartbeatSeconds": 60,
      "TimeoutSeconds": 900,
      "ResultPath": "$.render",
      "Catch": [{"ErrorEquals": ["States.Timeout", "States.HeartbeatTimeout"], "ResultPath": "$.error", "Next": "ReleaseAndFail"},
                {"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "ReleaseAndFail"}],
      "Next": "Bill"
    },
    "Bill": {
      "Type": "Task",
      "Resource": "arn:aws:states:::dynamodb:updateItem",
      "Parameters": {"TableName": "${TableName}", "Key": {"pk": {"S.$": "States.Format('JOB#{}', $.job_id)"}}},
      "ResultPath": null,
      "End": true
    },
    "ReleaseAndFail": {
      "Type": "Pass",
      "Next": "Failed"
    },
    "Failed": {"Type": "Fail", "ErrorPath": "$.error.Error", "CausePath": "$.error.Cause"}
  }
}"#;

fn video_substitutions() -> BTreeMap<String, String> {
    BTreeMap::from([
        ("ModerateFunctionArn".into(), "moderate-fn".into()),
        ("RenderQueueUrl".into(), "local://render".into()),
        ("TableName".into(), "reelgate".into()),
    ])
}

#[test]
fn a_realistic_definition_loads_with_substitutions() {
    let names: Vec<String> = placeholders(VIDEO_LIKE).into_iter().collect();
    assert_eq!(
        names,
        ["ModerateFunctionArn", "RenderQueueUrl", "TableName"]
    );
    let machine = StateMachine::load("video", VIDEO_LIKE, &video_substitutions()).unwrap();
    assert_eq!(machine.start_at(), "Moderate");
    assert_eq!(machine.timeout_seconds(), Some(3600));
    assert_eq!(machine.name(), "video");
    let Some(StateKind::Task(render)) = machine.state("Render").map(|s| &s.kind) else {
        panic!("Render is a Task");
    };
    assert!(render.waits_for_task_token());
    assert_eq!(render.heartbeat_seconds, Some(60));
    assert_eq!(render.timeout_seconds, Some(900));
    assert_eq!(render.transition, Transition::Next("Bill".into()));
    let Some(StateKind::Task(bill)) = machine.state("Bill").map(|s| &s.kind) else {
        panic!("Bill is a Task");
    };
    assert_eq!(bill.result_path, PathField::Null);
    assert_eq!(bill.transition, Transition::End);
    // The same text with other values is another version.
    let mut other = video_substitutions();
    other.insert("TableName".into(), "elsewhere".into());
    let other = StateMachine::load("video", VIDEO_LIKE, &other).unwrap();
    assert_ne!(machine.version(), other.version());
}

#[test]
fn a_missing_substitution_is_named() {
    let mut values = video_substitutions();
    values.remove("RenderQueueUrl");
    let err = StateMachine::load("video", VIDEO_LIKE, &values).unwrap_err();
    assert_eq!(
        err,
        DefinitionError::MissingSubstitution("RenderQueueUrl".into())
    );
    assert_eq!(
        err.to_string(),
        "definition substitution ${RenderQueueUrl} has no value"
    );
}

#[test]
fn malformed_json_is_reported() {
    assert!(matches!(
        StateMachine::load("m", "{not json", &BTreeMap::new()),
        Err(DefinitionError::Json(_))
    ));
}

#[test]
fn top_level_errors() {
    assert_eq!(
        invalid(json!({"States": {}})).1,
        "StartAt (a string) is required"
    );
    let (state, message) =
        invalid(json!({"StartAt": "Nope", "States": {"A": {"Type": "Succeed"}}}));
    assert_eq!(state, None);
    assert!(message.contains("Nope"), "{message}");
    let (_, message) = invalid(
        json!({"StartAt": "A", "QueryLanguage": "JSONata", "States": {"A": {"Type": "Succeed"}}}),
    );
    assert!(message.contains("QueryLanguage"), "{message}");
}

#[test]
fn state_errors_name_the_state() {
    let cases = [
        (json!({"Type": "Pass"}), "one of Next or End is required"),
        (
            json!({"Type": "Pass", "End": true, "Next": "X"}),
            "mutually exclusive",
        ),
        (
            json!({"Type": "Parallel", "Branches": [], "End": true}),
            "\"Parallel\" is not part",
        ),
        (
            json!({"Type": "Pass", "End": true, "Bogus": 1}),
            "field \"Bogus\"",
        ),
        (json!({"Type": "Task", "End": true}), "Resource"),
        (
            json!({"Type": "Task", "Resource": "r", "End": true, "TimeoutSeconds": 5, "HeartbeatSeconds": 5}),
            "HeartbeatSeconds must be smaller",
        ),
        (
            json!({"Type": "Task", "Resource": "r", "End": true, "TimeoutSeconds": 1.5}),
            "TimeoutSeconds must be a positive integer",
        ),
        (
            json!({"Type": "Task", "Resource": "r", "End": true, "Retry": [{"ErrorEquals": ["States.ALL"]}, {"ErrorEquals": ["X"]}]}),
            "States.ALL must appear alone",
        ),
        (
            json!({"Type": "Task", "Resource": "r", "End": true, "Catch": [{"ErrorEquals": ["States.ALL", "X"], "Next": "S"}]}),
            "States.ALL must appear alone",
        ),
        (
            json!({"Type": "Task", "Resource": "r", "End": true, "Retry": [{"ErrorEquals": ["X"], "BackoffRate": 0.5}]}),
            "BackoffRate",
        ),
        (
            json!({"Type": "Task", "Resource": "r", "End": true, "Retry": [{"ErrorEquals": ["X"], "JitterStrategy": "FULL"}]}),
            "JitterStrategy",
        ),
        (
            json!({"Type": "Pass", "End": true, "InputPath": "$.a[*]"}),
            "InputPath",
        ),
        (
            json!({"Type": "Pass", "End": true, "ResultPath": "$$.Execution"}),
            "context object",
        ),
        (
            json!({"Type": "Pass", "End": true, "Parameters": {"x.$": 3}}),
            "x.$",
        ),
        (
            json!({"Type": "Pass", "End": true, "Parameters": {"x.$": "States.Format('{}')"}}),
            "placeholders",
        ),
        (
            json!({"Type": "Pass", "End": true, "Parameters": {"x.$": "States.UUID()"}}),
            "not supported",
        ),
        (json!({"Type": "Wait", "End": true}), "Seconds"),
        (
            json!({"Type": "Wait", "End": true, "Timestamp": "2020-01-01T00:00:00Z"}),
            "Timestamp",
        ),
        (
            json!({"Type": "Fail", "Error": "E", "ErrorPath": "$.e"}),
            "mutually exclusive",
        ),
        (
            json!({"Type": "Choice", "Choices": []}),
            "Choices must be a non-empty array",
        ),
        (
            json!({"Type": "Choice", "Choices": [{"Variable": "$.a", "StringEquals": "x", "IsNull": true, "Next": "S"}]}),
            "exactly one comparison operator",
        ),
        (
            json!({"Type": "Choice", "Choices": [{"Variable": "$.a", "NumericEquals": "1", "Next": "S"}]}),
            "number operand",
        ),
        (
            json!({"Type": "Choice", "Choices": [{"Variable": "$.a", "StringMatches": "x*", "Next": "S"}]}),
            "StringMatches",
        ),
        (
            json!({"Type": "Choice", "Choices": [{"Not": {"Variable": "$.a", "IsNull": true, "Next": "S"}, "Next": "S"}]}),
            "Next is only allowed",
        ),
        (
            json!({"Type": "Choice", "Choices": [{"Variable": "$.a", "IsNull": true}]}),
            "needs Next",
        ),
    ];
    for (state, expected) in cases {
        let mut definition = one_state("Broken", state.clone());
        definition["States"]["S"] = json!({"Type": "Succeed"});
        // Keep "S" reachable where the broken state does not mention it.
        let (name, message) = match StateMachine::from_value("m", &definition) {
            Err(DefinitionError::Invalid { state, message }) => (state, message),
            other => panic!("{state}: expected a validation error, got {other:?}"),
        };
        assert_eq!(name.as_deref(), Some("Broken"), "{state}: {message}");
        assert!(
            message.contains(expected),
            "{state}: {message:?} lacks {expected:?}"
        );
    }
}

#[test]
fn transitions_must_exist_and_states_must_be_reachable() {
    let (state, message) = invalid(json!({"StartAt": "A", "States": {
        "A": {"Type": "Pass", "Next": "Missing"}
    }}));
    assert_eq!(state.as_deref(), Some("A"));
    assert!(message.contains("\"Missing\""), "{message}");
    let (state, message) = invalid(json!({"StartAt": "A", "States": {
        "A": {"Type": "Task", "Resource": "r", "End": true,
              "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Gone"}]}
    }}));
    assert_eq!(state.as_deref(), Some("A"));
    assert!(message.contains("\"Gone\""), "{message}");
    let (state, message) = invalid(json!({"StartAt": "A", "States": {
        "A": {"Type": "Succeed"},
        "Orphan": {"Type": "Succeed"}
    }}));
    assert_eq!(state.as_deref(), Some("Orphan"));
    assert!(message.contains("not reachable"), "{message}");
    let err = StateMachine::from_value(
        "m",
        &json!({"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "Missing"}}}),
    )
    .unwrap_err();
    assert!(err.to_string().starts_with("state \"A\": "), "{err}");
}

/// Every workflow file in the repository stays inside the subset this runner supports (with a
/// dummy value for each `${Name}` placeholder). Files are optional: none yet is not a failure.
#[test]
fn repository_workflows_load() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../statemachine");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if !path.to_string_lossy().ends_with(".asl.json") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let values: BTreeMap<String, String> = placeholders(&text)
            .into_iter()
            .map(|name| (name.clone(), format!("dummy-{name}")))
            .collect();
        if let Err(err) = StateMachine::load("workflow", &text, &values) {
            panic!("{} is outside the supported subset: {err}", path.display());
        }
    }
}
