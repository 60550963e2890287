//! The OpenAPI document (`GET /openapi.json`, committed at `docs/openapi.json`) against the code:
//! the committed file is what the code generates, and the document has exactly the router's
//! operations: every public route of `API_ROUTES`, every console route, with the statuses and
//! content types the issue asks for.
//!
//! To refresh the committed file after changing the API:
//!     UPDATE_OPENAPI=1 cargo test -p reelgate --test openapi

use reelgate::api::openapi::{document_json, OPERATIONS};
use reelgate::api::operation::Auth;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::PathBuf;

fn committed_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/openapi.json")
}

fn doc() -> Value {
    serde_json::from_str(&document_json()).expect("the document is JSON")
}

#[test]
fn committed_document_matches_the_code() {
    let generated = document_json();
    let path = committed_path();
    if std::env::var_os("UPDATE_OPENAPI").is_some() {
        std::fs::write(&path, &generated).expect("write docs/openapi.json");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/openapi.json differs from the document the code generates (GET /openapi.json). \
         Run `UPDATE_OPENAPI=1 cargo test -p reelgate --test openapi` to update it, review the \
         diff and commit it."
    );
}

#[test]
fn it_is_openapi_3_1_with_unique_operation_ids() {
    let d = doc();
    assert_eq!(d["openapi"], "3.1.0");
    let ids: Vec<&str> = OPERATIONS.iter().map(|o| o.id).collect();
    let unique: BTreeSet<&str> = ids.iter().copied().collect();
    assert_eq!(ids.len(), unique.len(), "operation ids repeat: {ids:?}");
    // Every reference points at a schema the document has.
    let text = document_json();
    let schemas = d["components"]["schemas"].as_object().expect("schemas");
    for part in text.split("\"$ref\": \"#/components/schemas/").skip(1) {
        let name = part.split('"').next().unwrap_or_default();
        assert!(schemas.contains_key(name), "dangling $ref to {name}");
    }
    // Links are spelled as OpenAPI spells them.
    assert!(
        !text.contains("\"operation_id\""),
        "a link with operation_id"
    );
    assert_eq!(
        d["paths"]["/v1/videos"]["post"]["responses"]["200"]["links"]["GetVideo"]["operationId"],
        "RetrieveVideo"
    );
    // Every link names an operation of the document, by a path parameter of its path.
    for op in OPERATIONS {
        for l in op.links {
            assert!(
                ids.contains(&l.op.id),
                "{} links to unlisted {}",
                op.id,
                l.op.id
            );
            assert!(
                l.op.path.contains(&format!("{{{}}}", l.param.name)),
                "{} links {} to {}, which has no such path parameter",
                op.id,
                l.param.name,
                l.op.id
            );
        }
    }
}

/// `OPERATIONS` is the one declaration of each route's method and path: `API_ROUTES` and the
/// console's `ROUTES` derive from it (the router, the Lambda manifest and the template are
/// checked against those), so each route is declared exactly once there, and every row is a
/// public, console or operator route.
#[test]
fn every_route_is_declared_once() {
    let mut seen = BTreeSet::new();
    for o in OPERATIONS {
        assert!(
            seen.insert((o.method, o.path)),
            "{} {} is declared twice",
            o.method,
            o.path
        );
    }
    let derived: BTreeSet<(&str, &str)> = reelgate::api::API_ROUTES
        .iter()
        .chain(reelgate::api::CONSOLE_ROUTES.iter())
        .copied()
        .collect();
    for o in OPERATIONS {
        // Operator routes of the local server, not public API routes (no Lambda serves them:
        // on AWS metrics leave as CloudWatch EMF lines).
        let operator = ["/health", "/metrics"].contains(&o.path);
        assert!(
            derived.contains(&(o.method, o.path)) || operator,
            "{} {} is neither a public, a console nor an operator route",
            o.method,
            o.path
        );
    }
    assert!(reelgate::api::API_ROUTES.contains(&("POST", "/v1/videos")));
    assert!(reelgate::api::CONSOLE_ROUTES.contains(&("GET", "/console/api/videos")));
}

#[test]
fn every_operation_declares_its_errors_in_the_envelope() {
    let d = doc();
    for op in OPERATIONS {
        let responses = &d["paths"][op.path][op.method.to_ascii_lowercase().as_str()]["responses"];
        assert!(responses.is_object(), "{} has no responses", op.id);
        if op.auth != Auth::None {
            assert!(
                responses.get("401").is_some(),
                "{} needs a credential but does not declare 401",
                op.id
            );
        }
        for (status, r) in responses.as_object().expect("map") {
            let html = r["content"].get("text/html; charset=utf-8").is_some();
            if (status.starts_with('4') || status.starts_with('5')) && !html {
                // The Messages API's routes answer Anthropic's envelope (docs/messages.md).
                let envelope = if op.path.starts_with("/v1/messages") {
                    "#/components/schemas/AnthropicErrorResponse"
                } else {
                    "#/components/schemas/ErrorResponse"
                };
                assert_eq!(
                    r["content"]["application/json"]["schema"]["$ref"], envelope,
                    "{} {status}",
                    op.id
                );
            }
        }
        assert!(
            responses.get("500").is_none(),
            "{}: a 500 is a bug, never part of the contract",
            op.id
        );
    }
}

#[test]
fn streaming_routes_declare_event_streams_and_videos_the_poll_hint() {
    let d = doc();
    for path in ["/v1/chat/completions", "/v1/responses"] {
        let ok = &d["paths"][path]["post"]["responses"]["200"]["content"];
        assert!(ok.get("text/event-stream").is_some(), "{path}: {ok}");
        assert!(ok.get("application/json").is_some(), "{path}: {ok}");
    }
    let poll = &d["paths"]["/v1/videos/{video_id}"]["get"]["responses"]["200"]["headers"]
        ["openai-poll-after-ms"]["schema"];
    assert_eq!(poll["minimum"], 10000, "{poll}");
    assert_eq!(poll["maximum"], 30000, "{poll}");
    let create = &d["paths"]["/v1/videos"]["post"];
    assert!(create["requestBody"]["content"]["multipart/form-data"].is_object());
    assert!(create["responses"]["200"]["links"]["GetVideo"].is_object());
    let upload = &d["paths"]["/v1/files"]["post"]["requestBody"]["content"];
    assert!(upload["multipart/form-data"].is_object(), "{upload}");
    assert!(d["paths"]["/openapi.json"]["get"]["security"]
        .as_array()
        .is_some_and(Vec::is_empty));
}

/// Doc comments become the document's descriptions, so a rustdoc link (`` [`Type`] ``) written
/// for the code's readers would reach the API's readers as a name they cannot look up.
#[test]
fn descriptions_carry_no_rustdoc_links() {
    fn walk(at: &str, value: &Value, found: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (key, inner) in map {
                    if let (true, Value::String(text)) = (key == "description", inner) {
                        if text.contains("[`") {
                            found.push(format!("{at}/{key}: {text}"));
                        }
                    }
                    walk(&format!("{at}/{key}"), inner, found);
                }
            }
            Value::Array(items) => {
                for (i, inner) in items.iter().enumerate() {
                    walk(&format!("{at}/{i}"), inner, found);
                }
            }
            _ => {}
        }
    }
    let mut found = Vec::new();
    walk("", &doc(), &mut found);
    assert!(
        found.is_empty(),
        "descriptions with rustdoc links (word them for the API's reader):\n{}",
        found.join("\n")
    );
}
