//! The chat completions gateway: `GET /v1/models` (the chat model catalog) and
//! `POST /v1/chat/completions`, proxied to the upstream that serves the model.
//!
//! A request is validated by hand (every failure names its `param`), admitted by the billing
//! rule (balance above zero), its file parts are turned into short-lived signed URLs, and it goes
//! to the upstream under the upstream's own model name. The reply is re-stamped with our id and
//! model name; streams are forwarded chunk by chunk as they arrive (see [`stream`]). Usage is
//! charged once the completion has ended.

use crate::api::chat_stream as stream;
use crate::api::extract::ApiJson;
use crate::app::App;
use crate::domain::accounts::Caller;
use crate::domain::catalog::ChatModel;
use crate::domain::chat::{message_chars, new_completion_id, resolve_files, validate};
use crate::domain::error::ApiResult;
use crate::domain::usage::{self, TokenUsage};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Map, Value};

pub fn routes() -> Router<App> {
    Router::new()
        .route("/v1/models", get(crate::api::models::list))
        .route("/v1/models/{model}", get(crate::api::models::retrieve))
        .route("/v1/chat/completions", post(completions))
}

/// The routes this module serves, for `http::API_ROUTES`.
pub const ROUTES: &[(&str, &str)] = &[
    ("GET", "/v1/models"),
    ("GET", "/v1/models/{model}"),
    ("POST", "/v1/chat/completions"),
];

async fn completions(
    State(app): State<App>,
    caller: Caller,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Response> {
    complete(app, caller, body).await
}

/// A chat completion (streamed when asked) for the caller; shared by `/v1/chat/completions`
/// and the console's chat.
pub async fn complete(app: App, caller: Caller, body: Value) -> ApiResult<Response> {
    let v = validate::validate(&app.catalog, &body)?;
    usage::admit(app.context(), &caller.org).await?;
    let mut request = v.upstream_body;
    resolve_files(app.context(), &caller, &v.model, &mut request, &v.files).await?;
    request.insert(
        "model".into(),
        Value::String(
            v.model
                .upstream_model
                .clone()
                .unwrap_or_else(|| v.model.id.clone()),
        ),
    );
    let upstream = app
        .upstreams
        .get_or_connect(&app.catalog, &v.model.upstream)
        .await
        .map_err(|e| crate::api::upstream_error(&e))?;
    let id = new_completion_id();
    let created = crate::ports::store::now_secs();
    if v.stream {
        let chunks = upstream
            .stream(Value::Object(request))
            .await
            .map_err(|e| crate::api::upstream_error(&e))?;
        let ctx = stream::StreamContext {
            app: app.clone(),
            org: caller.org,
            person: caller.person,
            model: v.model,
            id,
            created,
            include_usage: v.include_usage,
            prompt_chars: v.prompt_chars,
        };
        return Ok(stream::respond(ctx, chunks));
    }
    let reply = upstream
        .complete(Value::Object(request))
        .await
        .map_err(|e| crate::api::upstream_error(&e))?;
    let (completion, used) = restamp_completion(reply, &id, created, &v.model, v.prompt_chars);
    // Its own task: a client leaving now cannot cancel the charge halfway.
    let charge = stream::charge(app.clone(), caller.org, caller.person, v.model, id, used);
    let _ = tokio::spawn(charge).await;
    Ok(Json(completion).into_response())
}

/// Our view of an upstream completion: our id, created time and model name; usage always
/// present (estimated from text length when the upstream gave none). Returns the usage to bill.
fn restamp_completion(
    reply: Value,
    id: &str,
    created: i64,
    model: &ChatModel,
    prompt_chars: usize,
) -> (Value, TokenUsage) {
    let mut obj = match reply {
        Value::Object(o) => o,
        _ => Map::new(),
    };
    obj.insert("id".into(), id.into());
    obj.insert("object".into(), "chat.completion".into());
    obj.insert("created".into(), created.into());
    obj.insert("model".into(), model.id.clone().into());
    let used = match obj.get("usage").and_then(TokenUsage::from_json) {
        Some(used) => used,
        None => {
            let completion_chars: usize = obj
                .get("choices")
                .and_then(Value::as_array)
                .map(|choices| choices.iter().map(|c| message_chars(&c["message"])).sum())
                .unwrap_or(0);
            let estimate = TokenUsage::estimate(prompt_chars, completion_chars);
            obj.insert("usage".into(), estimate.to_chat_json());
            estimate
        }
    };
    (Value::Object(obj), used)
}
