//! The Messages API's use cases: a message (`POST /v1/messages`), answered by the chat use case
//! itself, and a token count (`POST /v1/messages/count_tokens`), admitted as a message is (a
//! funded organization, the key's budget and the rate limits' request windows) and not billed.

use crate::domain::accounts::Caller;
use crate::domain::catalog::ChatModel;
use crate::domain::chat::body::ChatCompletionBody;
use crate::domain::chat::complete::{admit, ChatAnswer, ChatPorts};
use crate::domain::chat::dialect::Dialect;
use crate::domain::chat::validate;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::messages::body::{
    MessageCountTokensRequest, MessageCreateRequest, MessagesRequest,
};
use crate::domain::messages::reply::MessageTokensCount;
use crate::domain::messages::request::{self, Served};
use crate::ports::pdf::PdfRasterizer;
use std::sync::Arc;

/// Translates the request into a chat request and answers it through the chat use case (the
/// same admission, rate limits, budgets, routing, fallback, usage rows and ledger), in the
/// dialect `dialect` makes from the request's stop sequences.
pub async fn create(
    ports: ChatPorts<'_>,
    pdf: &dyn PdfRasterizer,
    caller: Caller,
    body: MessageCreateRequest,
    dialect: impl FnOnce(Vec<String>) -> Arc<dyn Dialect>,
) -> ApiResult<ChatAnswer> {
    let cx = ports.cx();
    let body = MessagesRequest::Create(body);
    let model = validate::chat_model(cx.catalog, body.model())?.clone();
    // Fetching URLs and rasterizing documents is work done before the request can be checked:
    // only a funded caller within its rate limits gets it, and the request counts against
    // those limits even when the work fails (a request without any is admitted once, by the
    // chat use case). Its prompt is not known yet, so no prompt tokens are reserved for it.
    let admitted = if body.needs_work() {
        match admit(ports, &caller, 0).await? {
            Ok(grant) => Some(grant),
            Err(limited) => return Ok(ChatAnswer::Limited(limited)),
        }
    } else {
        None
    };
    let served = served(cx.catalog, &model);
    let prepared = async {
        let native = native_body(served, &body)?;
        let mut t = request::translate(cx.fetcher, pdf, &model, body, served).await?;
        let extensions = t.take_extensions();
        let chat = ChatCompletionBody::try_from(std::mem::take(&mut t.chat))?;
        let mut v = validate::validate(cx.catalog, chat)?;
        extensions.carry(&mut v.request);
        v.request.anthropic_request = native;
        Ok::<_, crate::domain::error::ApiError>((v, t.stop_sequences))
    };
    let (v, stop_sequences) = match prepared.await {
        Ok(prepared) => prepared,
        Err(e) => {
            if let Some(grant) = &admitted {
                crate::domain::billing::rate_limits::settle(cx.store, grant, 0).await;
            }
            return Err(e);
        }
    };
    crate::domain::chat::complete::complete_admitted(
        ports,
        caller,
        v,
        dialect(stop_sequences),
        admitted,
    )
    .await
}

/// The caller's own body for a model served by Anthropic itself, as read (fields sent as
/// `null` left out); none for one served through the chat translation.
fn native_body(served: Served, body: &MessagesRequest) -> ApiResult<Option<serde_json::Value>> {
    if served != Served::NativeAnthropic {
        return Ok(None);
    }
    let native = match body {
        MessagesRequest::Create(r) => serde_json::to_value(r),
        MessagesRequest::CountTokens(r) => serde_json::to_value(r),
    };
    native
        .map(Some)
        .map_err(|e| ApiError::internal("encoding the caller's Messages body", e))
}

/// How `model`'s Messages requests are served: natively when every deployment is an
/// `anthropic` upstream (the caller's body goes to Anthropic as sent), else through the chat
/// translation (which a mixed set of deployments can all take).
fn served(catalog: &crate::domain::catalog::Catalog, model: &ChatModel) -> Served {
    let deployments = model.deployments();
    let native = !deployments.is_empty()
        && deployments.iter().all(|d| {
            catalog
                .upstream(&d.upstream)
                .is_some_and(|u| u.kind == "anthropic")
        });
    if native {
        Served::NativeAnthropic
    } else {
        Served::Translated
    }
}

/// `{"input_tokens": n}`: the upstream's own count where it has a counter (Bedrock's
/// CountTokens, for Claude), else the documented estimate of `request::estimate_input_tokens`
/// (also when the counter fails: a count is advice, never worth an error). Checked like a
/// message (the model's capabilities included).
pub async fn count_tokens(
    ports: ChatPorts<'_>,
    pdf: &dyn PdfRasterizer,
    caller: &Caller,
    body: MessageCountTokensRequest,
) -> ApiResult<TokenCountAnswer> {
    let cx = ports.cx();
    let body = MessagesRequest::CountTokens(body);
    let model = validate::chat_model(cx.catalog, body.model())?.clone();
    // Admitted before any URL is fetched or document rasterized: an unfunded key, or one over
    // its limits, makes the service do no work on its behalf.
    let grant = match admit(ports, caller, 0).await? {
        Ok(grant) => grant,
        Err(limited) => return Ok(TokenCountAnswer::Limited(limited)),
    };
    let counted = count(ports, pdf, &model, body).await;
    crate::domain::billing::rate_limits::settle(cx.store, &grant, 0).await;
    Ok(TokenCountAnswer::Counted {
        count: counted?,
        status: grant.status.clone(),
    })
}

/// A token count's answer: the count with the caller's rate-limit status, or the refusal.
pub enum TokenCountAnswer {
    Counted {
        count: MessageTokensCount,
        status: crate::domain::billing::rate_limits::RateStatus,
    },
    Limited(crate::domain::billing::rate_limits::RateLimited),
}

async fn count(
    ports: ChatPorts<'_>,
    pdf: &dyn PdfRasterizer,
    model: &crate::domain::catalog::ChatModel,
    body: MessagesRequest,
) -> ApiResult<MessageTokensCount> {
    let cx = ports.cx();
    let served = served(cx.catalog, model);
    let native = native_body(served, &body)?;
    let mut t = request::translate(cx.fetcher, pdf, model, body, served).await?;
    let extensions = t.take_extensions();
    let chat = ChatCompletionBody::try_from(std::mem::take(&mut t.chat))?;
    let mut v = validate::validate(cx.catalog, chat)?;
    // The documented estimate, should the upstream have no counter.
    let estimate = request::estimate_input_tokens(&v.request);
    extensions.carry(&mut v.request);
    v.request.anthropic_request = native;
    let upstream = ports.upstreams.for_model(&ports.shared.catalog, model);
    let counted = match upstream.count_tokens(v.request).await {
        Ok(counted) => counted,
        Err(e) => {
            tracing::warn!(model = %model.id, error = %e, "the upstream's token counter failed; estimating");
            None
        }
    };
    // The URL images and documents were measured and dropped: a counter that saw only their
    // placeholders, or the estimate, gets their tokens added. Anthropic itself was sent the
    // caller's body, URLs and all, and counted them.
    let input_tokens = match counted {
        Some(n) if served == Served::NativeAnthropic => n,
        Some(n) => n + t.measured_tokens,
        None => estimate + t.measured_tokens,
    };
    Ok(MessageTokensCount { input_tokens })
}

#[cfg(test)]
mod tests;
