//! The chat completion use case, for `/v1/chat/completions`, the Messages API and the console's
//! chat alike: admission (balance and rate limits), the caller's file parts resolved, the
//! upstream that serves the model, and the one charge policy of text requests once the
//! completion has ended (whole or streamed). Only what the caller reads differs, by dialect.

use crate::domain::accounts::{AccountCache, Caller};
use crate::domain::billing::admission::{admit_text, TextAdmission};
use crate::domain::billing::rate_limits::{self, Grant, RateLimited, RateStatus};
use crate::domain::billing::token_charges::{self, TokenUsage};
use crate::domain::catalog::providers::Upstreams;
use crate::domain::catalog::ChatModel;
use crate::domain::chat::dialect::Dialect;
use crate::domain::chat::stream::{self, ChargeSpec, StreamContext};
use crate::domain::chat::{message_chars, resolve_files, validate};
use crate::domain::error::{upstream_error, ApiResult};
use crate::domain::Context;
use crate::ports::store::ItemStore;
use bytes::Bytes;
use futures::stream::BoxStream;
use serde_json::{Map, Value};
use std::sync::Arc;

/// What the chat use case needs beyond the request context.
pub struct ChatPorts<'a> {
    pub cx: Context<'a>,
    /// Owned: a charge may be written after the request is gone (a client that left).
    pub store: Arc<dyn ItemStore>,
    /// Organizations' plans this process knows (admission in one round trip).
    pub accounts: &'a AccountCache,
    pub upstreams: &'a Arc<Upstreams>,
    /// Shared with the routed upstream, which outlives the request when streaming.
    pub catalog: &'a Arc<crate::domain::catalog::Catalog>,
}

/// A chat request's answer, as the caller's API renders it.
pub enum ChatAnswer {
    /// Refused by a rate limit of the key or the organization.
    Limited(RateLimited),
    /// Admitted: the whole answer, its stream, or why it failed; with the limits' status.
    Admitted {
        reply: ApiResult<Reply>,
        status: RateStatus,
    },
}

pub enum Reply {
    /// The whole answer in the caller's dialect.
    Whole(Value),
    /// The answer's events as they arrive, already in the caller's dialect.
    Stream(BoxStream<'static, Bytes>),
}

/// Answers a validated chat request for `caller` in `dialect`.
pub async fn complete(
    ports: ChatPorts<'_>,
    caller: Caller,
    v: validate::Validated,
    dialect: Arc<dyn Dialect>,
) -> ApiResult<ChatAnswer> {
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
    let grant = match admit_text(ports.cx, ports.accounts, &caller, estimate).await? {
        TextAdmission::Admitted(_org, grant) => grant,
        TextAdmission::Limited(limited) => return Ok(ChatAnswer::Limited(limited)),
    };
    let status = grant.status.clone();
    let reply = answer(ports, caller, v, grant, dialect).await;
    Ok(ChatAnswer::Admitted { reply, status })
}

async fn answer(
    ports: ChatPorts<'_>,
    caller: Caller,
    v: validate::Validated,
    grant: Grant,
    dialect: Arc<dyn Dialect>,
) -> ApiResult<Reply> {
    let cx = ports.cx;
    let mut request = v.upstream_body;
    if let Err(e) = resolve_files(cx, &caller, &v.model, &mut request, &v.files).await {
        rate_limits::settle(cx.store, &grant, 0).await;
        return Err(e);
    }
    let upstream = ports.upstreams.for_model(ports.catalog, &v.model);
    let id = dialect.new_id();
    let created = crate::ports::store::now_secs();
    if v.stream {
        let chunks = match upstream.stream(Value::Object(request)).await {
            Ok(chunks) => chunks,
            Err(e) => {
                rate_limits::settle(cx.store, &grant, 0).await;
                return Err(upstream_error(&e));
            }
        };
        let format = dialect.stream_format(&id, &v.model.id, created);
        let ctx = StreamContext {
            store: ports.store,
            caller,
            model: v.model,
            format,
            id,
            created,
            prompt_chars: v.prompt_chars,
            grant,
        };
        return Ok(Reply::Stream(stream::metered(ctx, chunks)));
    }
    let reply = match upstream.complete(Value::Object(request)).await {
        Ok(reply) => reply,
        Err(e) => {
            // Nothing was generated: the reservation goes back.
            rate_limits::settle(cx.store, &grant, 0).await;
            return Err(upstream_error(&e));
        }
    };
    let (completion, used) = restamp_completion(reply, &id, created, &v.model, v.prompt_chars);
    let spec = ChargeSpec {
        store: ports.store,
        caller,
        model: v.model,
        id,
        grant,
    };
    stream::charge(spec, used).await;
    Ok(Reply::Whole(dialect.whole(completion)))
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
