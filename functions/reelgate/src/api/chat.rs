//! The chat completions gateway: `POST /v1/chat/completions`, proxied to the upstream that serves the model.
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
use crate::domain::billing::rate_limits::{self, Grant};
use crate::domain::billing::token_charges::{self, TokenUsage};
use crate::domain::catalog::ChatModel;
use crate::domain::chat::{message_chars, resolve_files, validate};
use crate::domain::error::ApiResult;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Map, Value};
use std::sync::Arc;

pub fn routes() -> Router<App> {
    completions_route()
}

// One function per path (the unit a Lambda function serves, `api::PathRoutes`).

pub fn completions_route() -> Router<App> {
    Router::new().route("/v1/chat/completions", post(completions))
}

async fn completions(
    State(app): State<App>,
    caller: Caller,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Response> {
    complete(app, caller, body).await
}

/// A chat completion (streamed when asked) for the caller; shared by `/v1/chat/completions`
/// and the console's chat. Every answer after admission carries the rate-limit headers.
pub async fn complete(app: App, caller: Caller, body: Value) -> ApiResult<Response> {
    let v = validate::validate(&app.catalog, &body)?;
    let dialect = stream::OpenAiChat {
        include_usage: v.include_usage,
    };
    complete_validated(app, caller, v, Arc::new(dialect)).await
}

/// The chat use case for a validated request, answered in `dialect` (the Messages API runs
/// through here too, so admission, limits, fallback and billing are one rule).
pub async fn complete_validated(
    app: App,
    caller: Caller,
    v: validate::Validated,
    dialect: Arc<dyn stream::Dialect>,
) -> ApiResult<Response> {
    crate::observability::telemetry::note_model(&v.model.id);
    crate::observability::telemetry::note_prompt(|| {
        v.upstream_body
            .get("messages")
            .map(Value::to_string)
            .unwrap_or_default()
    });
    let max_completion = ["max_completion_tokens", "max_tokens"]
        .iter()
        .find_map(|k| v.upstream_body.get(*k).and_then(Value::as_u64));
    let estimate = token_charges::admission_estimate(
        TokenUsage::estimate(v.prompt_chars, 0).prompt_tokens,
        max_completion,
    );
    use crate::domain::billing::admission::{admit_text, TextAdmission};
    let grant = match admit_text(app.context(), &app.credentials, &caller, estimate).await? {
        TextAdmission::Admitted(_org, grant) => grant,
        TextAdmission::Limited(limited) => return Ok(crate::api::rate_limits::refused(limited)),
    };
    let status = grant.status.clone();
    let mut response = answer(app, caller, v, grant, dialect).await.into_response();
    crate::api::rate_limits::apply(&status, response.headers_mut());
    Ok(response)
}

async fn answer(
    app: App,
    caller: Caller,
    v: validate::Validated,
    grant: Grant,
    dialect: Arc<dyn stream::Dialect>,
) -> ApiResult<Response> {
    let mut request = v.upstream_body;
    if let Err(e) = resolve_files(app.context(), &caller, &v.model, &mut request, &v.files).await {
        rate_limits::settle(app.store.as_ref(), &grant, 0).await;
        return Err(e);
    }
    let upstream = app.upstreams.for_model(&app.catalog, &v.model);
    let id = dialect.new_id();
    let created = crate::ports::store::now_secs();
    if v.stream {
        let chunks = match upstream.stream(Value::Object(request)).await {
            Ok(chunks) => chunks,
            Err(e) => {
                rate_limits::settle(app.store.as_ref(), &grant, 0).await;
                return Err(crate::api::upstream_error(&e));
            }
        };
        let format = dialect.stream_format(&id, &v.model.id, created);
        let ctx = stream::StreamContext {
            app: app.clone(),
            caller,
            model: v.model,
            format,
            id,
            created,
            prompt_chars: v.prompt_chars,
            grant,
        };
        return Ok(stream::respond(ctx, chunks));
    }
    let reply = match upstream.complete(Value::Object(request)).await {
        Ok(reply) => reply,
        Err(e) => {
            // Nothing was generated: the reservation goes back.
            rate_limits::settle(app.store.as_ref(), &grant, 0).await;
            return Err(crate::api::upstream_error(&e));
        }
    };
    let (completion, used) = restamp_completion(reply, &id, created, &v.model, v.prompt_chars);
    let spec = stream::ChargeSpec {
        app: app.clone(),
        caller,
        model: v.model,
        id,
        grant,
    };
    stream::charge(spec, used).await;
    Ok(Json(dialect.whole(completion)).into_response())
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
