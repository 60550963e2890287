//! The chat completion use case, for `/v1/chat/completions`, the Messages API and the console's
//! chat alike: admission (balance and rate limits), the caller's file parts resolved, the
//! upstream that serves the model, and the one charge policy of text requests once the
//! completion has ended (whole or streamed). Only what the caller reads differs, by dialect.

use crate::domain::accounts::{AccountCache, Caller};
use crate::domain::billing::admission::{admit_text, TextAdmission};
use crate::domain::billing::rate_limits::{self, Grant, RateLimited, RateStatus};
use crate::domain::billing::token_charges::{self, ReportedUsage, TokenUsage};
use crate::domain::catalog::ChatModel;
use crate::domain::chat::completion::{ChatCompletion, CompletionUsage};
use crate::domain::chat::dialect::Dialect;
use crate::domain::chat::stream::{self, ChargeSpec, StreamContext};
use crate::domain::chat::upstreams::Upstreams;
use crate::domain::chat::{resolve_files, validate};
use crate::domain::error::{upstream_error, ApiResult};
use crate::domain::{Context, SharedContext};
use crate::ports::store::ItemStore;
use crate::ports::upstream::{Completion, UpstreamError};
use bytes::Bytes;
use futures::stream::BoxStream;
use serde::Deserialize;
use std::sync::Arc;

/// What the chat use case needs: the use cases' ports (their store and catalog are cloned
/// where a charge or a routed upstream outlives the request, as with a client that left a
/// stream), the account cache and the upstreams.
#[derive(Clone, Copy)]
pub struct ChatPorts<'a> {
    pub shared: &'a SharedContext,
    /// Organizations' plans this process knows (admission in one round trip).
    pub accounts: &'a AccountCache,
    pub upstreams: &'a Arc<Upstreams>,
}

impl<'a> ChatPorts<'a> {
    pub fn cx(&self) -> Context<'a> {
        self.shared.context()
    }
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
    /// The whole answer in the caller's dialect, as JSON, and what its charge took from the
    /// balance (`None` when the charge could not be written).
    Whole {
        body: Bytes,
        cost: Option<rust_decimal::Decimal>,
    },
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
    complete_admitted(ports, caller, v, dialect, None).await
}

/// [`complete`] for a request admitted already: a caller whose request needed costly work
/// before it could be validated (fetching URLs, rasterizing documents) took its grant first,
/// so that work counts against its rate limits even when it fails.
pub async fn complete_admitted(
    ports: ChatPorts<'_>,
    caller: Caller,
    v: validate::Validated,
    dialect: Arc<dyn Dialect>,
    admitted: Option<Grant>,
) -> ApiResult<ChatAnswer> {
    crate::observability::telemetry::note_model(&v.model.id);
    crate::observability::telemetry::note_prompt(|| {
        serde_json::to_string(&v.request.messages).unwrap_or_default()
    });
    let max_completion = [&v.request.max_completion_tokens, &v.request.max_tokens]
        .into_iter()
        .find_map(|n| n.as_ref().and_then(serde_json::Number::as_u64));
    let estimate = token_charges::admission_estimate(
        TokenUsage::estimate(v.prompt_chars, 0).prompt_tokens,
        max_completion,
    );
    let grant = match admitted {
        Some(grant) => grant,
        None => match admit(ports, &caller, estimate).await? {
            Ok(grant) => grant,
            Err(limited) => return Ok(ChatAnswer::Limited(limited)),
        },
    };
    let status = grant.status.clone();
    let reply = answer(ports, caller, v, grant, dialect).await;
    Ok(ChatAnswer::Admitted { reply, status })
}

/// The one admission of a text request (chat completions, Messages, Responses): a funded
/// organization, the key's budget and the rate limits of the key and its plan, reserving
/// `tokens` until the charge (or [`call_upstream`]'s refusal) settles them. `Err` is the rate
/// limit that refused it.
pub async fn admit(
    ports: ChatPorts<'_>,
    caller: &Caller,
    tokens: u64,
) -> ApiResult<Result<Grant, RateLimited>> {
    Ok(
        match admit_text(ports.cx(), ports.accounts, caller, tokens).await? {
            TextAdmission::Admitted(_org, grant) => Ok(grant),
            TextAdmission::Limited(limited) => Err(limited),
        },
    )
}

/// Calls the upstream for an admitted request. Its refusal means nothing was generated: the
/// grant's reservation goes back before the refusal is answered.
pub async fn call_upstream<T>(
    store: &dyn ItemStore,
    grant: &Grant,
    call: impl std::future::Future<Output = Result<T, UpstreamError>>,
) -> Result<T, UpstreamError> {
    let answered = call.await;
    if answered.is_err() {
        rate_limits::settle(store, grant, 0).await;
    }
    answered
}

async fn answer(
    ports: ChatPorts<'_>,
    caller: Caller,
    v: validate::Validated,
    grant: Grant,
    dialect: Arc<dyn Dialect>,
) -> ApiResult<Reply> {
    let cx = ports.cx();
    let mut request = v.request;
    if let Err(e) = resolve_files(cx, &caller, &v.model, &mut request, &v.files).await {
        rate_limits::settle(cx.store, &grant, 0).await;
        return Err(e);
    }
    crate::domain::chat::caching::place(&v.model, &mut request);
    let upstream = ports.upstreams.for_model(&ports.shared.catalog, &v.model);
    let id = dialect.new_id();
    let created = crate::ports::store::now_secs();
    if v.stream {
        let chunks = call_upstream(cx.store, &grant, upstream.stream(request))
            .await
            .map_err(|e| upstream_error(&e))?;
        let format = dialect.stream_format(&id, &v.model.id, created);
        let ctx = StreamContext {
            store: ports.shared.store.clone(),
            caller,
            model: v.model,
            format,
            id,
            created,
            prompt_chars: v.prompt_chars,
            grant,
            on_leave: v.on_leave,
        };
        return Ok(Reply::Stream(stream::metered(ctx, chunks)));
    }
    let reply = call_upstream(cx.store, &grant, upstream.complete(request))
        .await
        .map_err(|e| upstream_error(&e))?;
    let (mut completion, used) = restamp_completion(reply, &id, created, &v.model, v.prompt_chars);
    let spec = ChargeSpec {
        store: ports.shared.store.clone(),
        caller,
        model: v.model,
        kind: stream::CHAT_COMPLETION,
        id,
        grant,
    };
    // Charged before the answer is written, so the answer can say what it cost.
    let cost = stream::charge(spec, used).await;
    completion.usage.cost = cost.map(token_charges::cost_text);
    Ok(Reply::Whole {
        body: dialect.whole(completion)?,
        cost,
    })
}

/// Our view of an upstream completion: our id, created time and model name; usage always
/// present (estimated from text length when the upstream gave none). Returns the usage to bill.
fn restamp_completion(
    reply: Completion,
    id: &str,
    created: i64,
    model: &ChatModel,
    prompt_chars: usize,
) -> (ChatCompletion, TokenUsage) {
    let reported = reply.usage.as_ref();
    let counted = reported
        .and_then(|u| ReportedUsage::deserialize(u).ok())
        .as_ref()
        .and_then(TokenUsage::reported);
    let (used, shown) = match counted {
        Some(used) => {
            // A report with the three counts is shown as written.
            let written = reported.and_then(|u| CompletionUsage::deserialize(u).ok());
            (used, CompletionUsage::shown(written, used.chat_usage()))
        }
        None => {
            let completion_chars: usize = reply
                .choices
                .iter()
                .map(|c| c.message.generated_chars())
                .sum();
            let estimate = TokenUsage::estimate(prompt_chars, completion_chars);
            (estimate, CompletionUsage::from(estimate.chat_usage()))
        }
    };
    let completion = ChatCompletion::restamped(reply, id, created, &model.id, shown);
    (completion, used)
}
