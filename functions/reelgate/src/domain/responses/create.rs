//! `POST /v1/responses`, the use case: one turn from the parsed request to the stored, charged
//! response. The reply is the Response object, or its typed events as they are produced (the
//! HTTP layer writes them as server-sent events).

use crate::domain::accounts::{AccountCache, Caller};
use crate::domain::billing::rate_limits::{Grant, RateLimited, RateStatus};
use crate::domain::billing::token_charges::{admission_estimate, ReportedUsage, TokenUsage};
use crate::domain::catalog::{Catalog, ChatModel};
use crate::domain::chat::complete::{admit, call_upstream, ChatPorts};
use crate::domain::chat::stream::ChargeSpec;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::responses::items::ConversationItem;
use crate::domain::responses::output::{
    self, Draft, Event, Outcome, OutputItem, ResponseObject, ResponseUsage, StreamState,
};
use crate::domain::responses::request::{CreateRequest, ResponseCreateBody};
use crate::domain::responses::{convert, normalize, persist, token_budget};
use crate::domain::SharedContext;
use crate::ports::upstream::{ChatCompletionRequest, ChatUpstream, ChunkStream};
use futures::StreamExt;
use std::sync::Arc;

/// What the Responses use case needs: the request context in a form a streamed turn can keep
/// after the request has gone, the routed upstreams and the PDF rasterizer.
#[derive(Clone)]
pub struct ResponsesPorts {
    pub shared: SharedContext,
    /// Organizations' plans this process knows (admission in one round trip, as for chat).
    pub accounts: Arc<AccountCache>,
    pub upstreams: Arc<crate::domain::chat::upstreams::Upstreams>,
    pub pdf: Arc<dyn crate::ports::pdf::PdfRasterizer>,
}

impl ResponsesPorts {
    /// The chat use case's view of these ports: a turn is admitted, routed and charged by it.
    fn chat(&self) -> ChatPorts<'_> {
        ChatPorts {
            shared: &self.shared,
            accounts: &self.accounts,
            upstreams: &self.upstreams,
        }
    }
}

impl std::ops::Deref for ResponsesPorts {
    type Target = SharedContext;
    fn deref(&self) -> &SharedContext {
        &self.shared
    }
}

/// A create's answer, as the HTTP layer renders it.
pub enum CreateAnswer {
    /// Refused by a rate limit of the key or the organization.
    Limited(RateLimited),
    /// Admitted: the reply, or why it failed; with the limits' status.
    Admitted {
        reply: ApiResult<Reply>,
        status: RateStatus,
    },
}

pub enum Reply {
    /// The Response object.
    Whole(Box<ResponseObject>),
    /// Its events (`(name, data)`), in order, ending with the terminal one.
    Events(tokio::sync::mpsc::Receiver<Event>),
}

/// The chat model a request names; a video model is refused (it has its own endpoint).
pub fn chat_model(catalog: &Catalog, id: &str) -> ApiResult<ChatModel> {
    if let Some(model) = catalog.chat_model(id) {
        return Ok(model.clone());
    }
    if catalog.video_model(id).is_some() {
        return Err(ApiError::invalid(
            "model",
            format!("{id} is a video model; use /v1/videos for it. /v1/responses takes chat models (see /v1/models)."),
        )
        .with_code("model_not_chat_capable"));
    }
    Err(ApiError::not_found(
        "model_not_found",
        format!("The model '{id}' does not exist."),
    )
    .with_param("model"))
}

/// One turn being answered: everything needed to finish it once the upstream has replied.
struct Turn {
    ports: ResponsesPorts,
    caller: Caller,
    model: ChatModel,
    draft: Draft,
    input_items: Vec<ConversationItem>,
    own_ids: Vec<String>,
    prompt_estimate: u64,
    /// The rate-limit reservation, settled with what is charged.
    grant: Grant,
}

impl Turn {
    /// Charges the usage (when `charge`, and then writes what it cost into `usage.cost`), or
    /// gives the reservation back (a failed response is never billed).
    async fn charge(&self, usage: &mut ResponseUsage, tokens: TokenUsage, charge: bool) {
        if !charge {
            crate::domain::billing::rate_limits::settle(self.ports.store.as_ref(), &self.grant, 0)
                .await;
            return;
        }
        let spec = ChargeSpec {
            store: self.ports.store.clone(),
            caller: self.caller.clone(),
            model: self.model.clone(),
            kind: "response",
            id: self.draft.id.clone(),
            grant: self.grant.clone(),
        };
        // The text requests' one charge policy: never an error once the turn was produced.
        let cost = crate::domain::chat::stream::charge(spec, tokens).await;
        usage.cost = cost.map(crate::domain::billing::token_charges::cost_text);
    }

    /// With the request's `store`, keeps the response and its items.
    async fn keep(&self, response: &ResponseObject) -> ApiResult<()> {
        if !self.draft.req.store {
            return Ok(());
        }
        let mut own = self.own_ids.clone();
        own.extend(response.output.iter().map(|item| item.id().to_owned()));
        let stored = persist::Stored {
            response: serde_json::to_value(response)
                .map_err(|e| ApiError::internal("encoding a response", e))?,
            input_items: self.input_items.clone(),
            own_item_ids: own,
            previous_response_id: self.draft.req.previous_response_id.clone(),
        };
        persist::save(self.ports.context(), &self.caller, &stored).await
    }

    /// The response's usage and the tokens to charge: the upstream's count, or (when it
    /// reported none, or no prompt count) the estimate of the prompt and of `output`, which the
    /// ledger records as estimated.
    fn usage(
        &self,
        reported: Option<&ReportedUsage>,
        output: &[OutputItem],
    ) -> (ResponseUsage, TokenUsage) {
        if let Some(reported) = reported {
            if let Some(tokens) = TokenUsage::reported(reported) {
                let shown =
                    ResponseUsage::of(tokens, reported.reasoning_tokens(), reported.total_tokens());
                return (shown, tokens);
            }
        }
        let tokens = TokenUsage {
            prompt_tokens: self.prompt_estimate,
            completion_tokens: output::estimated_output_tokens(output),
            cached_tokens: 0,
            cache_write_tokens: 0,
            estimated: true,
        };
        (ResponseUsage::of(tokens, 0, None), tokens)
    }
}

/// `POST /v1/responses`: the checked body becomes the request with its defaults; builds the turn's chat request from the stored history
/// and the input items, admits it (balance, budget, rate limits), and answers it through the
/// routed upstream, whole or as a stream of events; charges it with the text requests' one
/// charge policy and keeps it when `store` is set.
pub async fn create(
    ports: ResponsesPorts,
    caller: Caller,
    body: ResponseCreateBody,
) -> ApiResult<CreateAnswer> {
    crate::observability::telemetry::note_prompt(|| {
        body.input
            .as_ref()
            .and_then(|input| serde_json::to_string(input).ok())
            .unwrap_or_default()
    });
    let req = CreateRequest::from(body);
    let model = chat_model(&ports.catalog, &req.model)?;
    crate::observability::telemetry::note_model(&model.id);
    req.check_model(&model)?;
    let chat_ports = ports.chat();
    let cx = chat_ports.cx();
    let mut context = match &req.previous_response_id {
        Some(previous) => persist::history(cx, &caller, previous).await?,
        None => Vec::new(),
    };
    let normalized = normalize::normalize(cx, &caller, &req).await?;
    context.extend(normalized.items.iter().cloned());
    let estimate = |prompt_tokens| admission_estimate(prompt_tokens, req.max_output_tokens);
    // Reading files, fetching URLs and rasterizing documents happen before the prompt is known:
    // the request is admitted first (no prompt tokens reserved yet), so that only a funded
    // caller within its limits gets that work, and it counts against the limits even when it
    // fails. A turn without any is admitted once its prompt is estimated, as a chat request is.
    let early = if convert::needs_work(&context) {
        match admit(chat_ports, &caller, estimate(0)).await? {
            Ok(grant) => Some(grant),
            Err(limited) => return Ok(CreateAnswer::Limited(limited)),
        }
    } else {
        None
    };
    let prepared = async {
        // Every file_url of the request together within one request's fetch budget.
        let fetches =
            super::fetch::RequestFetches::new(cx.fetcher, super::fetch::MAX_REQUEST_FETCH_BYTES);
        let messages = convert::to_chat_messages(
            crate::domain::Context {
                fetcher: &fetches,
                ..cx
            },
            ports.pdf.as_ref(),
            &caller,
            &model,
            req.instructions.as_deref(),
            &context,
        )
        .await?;
        token_budget::truncate(messages, u64::from(model.context_window), req.truncation)
    };
    let messages = match prepared.await {
        Ok(messages) => messages,
        Err(e) => {
            if let Some(grant) = &early {
                crate::domain::billing::rate_limits::settle(cx.store, grant, 0).await;
            }
            return Err(e);
        }
    };
    let prompt_estimate = token_budget::estimate_tokens(&messages);
    let mut chat = convert::chat_request(&req, &model, messages, req.stream);
    crate::domain::chat::caching::place(&model, &mut chat);

    let grant = match early {
        Some(grant) => grant,
        None => match admit(chat_ports, &caller, estimate(prompt_estimate)).await? {
            Ok(grant) => grant,
            Err(limited) => return Ok(CreateAnswer::Limited(limited)),
        },
    };
    let status = grant.status.clone();
    let upstream = ports.upstreams.for_model(&ports.catalog, &model);
    let turn = Turn {
        draft: Draft::new(&model.id, req),
        ports,
        caller,
        model,
        input_items: normalized.items,
        own_ids: normalized.own_ids,
        prompt_estimate,
        grant,
    };
    Ok(CreateAnswer::Admitted {
        reply: answer(turn, upstream, chat).await,
        status,
    })
}

/// An upstream failure as this API answers it. A refusal of the caller's input names a part of
/// the chat messages the turn was translated to; here it names `input`, the parameter the caller
/// sent (the message keeps the part).
fn turn_error(e: &crate::ports::upstream::UpstreamError) -> ApiError {
    let api = crate::domain::error::upstream_error(e);
    match e {
        crate::ports::upstream::UpstreamError::InvalidRequest { .. } => api.with_param("input"),
        _ => api,
    }
}

/// Answers an admitted turn, streamed or whole.
async fn answer(
    turn: Turn,
    upstream: Arc<dyn ChatUpstream>,
    chat: ChatCompletionRequest,
) -> ApiResult<Reply> {
    if turn.draft.req.stream {
        return stream_turn(turn, upstream, chat).await;
    }
    let completion = call_upstream(
        turn.ports.store.as_ref(),
        &turn.grant,
        upstream.complete(chat),
    )
    .await
    .map_err(|e| turn_error(&e))?;
    let (outcome, output, reported) = output::from_completion(&completion);
    let (mut usage, tokens) = turn.usage(reported.as_ref(), &output);
    turn.charge(&mut usage, tokens, true).await;
    let response = turn.draft.object(Some(&outcome), &output, Some(&usage));
    turn.keep(&response).await?;
    Ok(Reply::Whole(Box::new(response)))
}

/// Starts the upstream stream (its refusal is still an error answer), then hands the events over
/// as the chunks arrive from a task that also finishes the turn.
async fn stream_turn(
    turn: Turn,
    upstream: Arc<dyn ChatUpstream>,
    chat: ChatCompletionRequest,
) -> ApiResult<Reply> {
    let chunks = call_upstream(
        turn.ports.store.as_ref(),
        &turn.grant,
        upstream.stream(chat),
    )
    .await
    .map_err(|e| turn_error(&e))?;
    // A small buffer: events leave as soon as the client reads them, and a slow client slows
    // the upstream read rather than piling events up in memory.
    let (tx, rx) = tokio::sync::mpsc::channel::<Event>(16);
    tokio::spawn(drive(turn, chunks, tx));
    Ok(Reply::Events(rx))
}

async fn drive(turn: Turn, mut chunks: ChunkStream, tx: tokio::sync::mpsc::Sender<Event>) {
    let mut state = StreamState::new();
    let mut client_gone = false;
    let mut failure = None;
    let start = state.start(&turn.draft);
    client_gone |= !send_all(&tx, start).await;
    while !client_gone {
        // Waiting on the upstream alone would notice a departed client only at the next chunk;
        // a slow upstream (long reasoning) would keep generating for nobody meanwhile.
        let next = tokio::select! {
            next = chunks.next() => next,
            _ = tx.closed() => {
                client_gone = true;
                break;
            }
        };
        match next {
            Some(Ok(chunk)) => {
                let events = state.on_chunk(&chunk);
                client_gone |= !send_all(&tx, events).await;
            }
            Some(Err(e)) => {
                failure = Some(e);
                break;
            }
            None => break,
        }
    }
    if client_gone && failure.is_none() {
        // The client left; the upstream bills what it generates until its stream is dropped,
        // and reports it in its last chunk: read on for that usage, at most
        // `DRAIN_AFTER_LEAVE`, as a chat stream does.
        let read = async {
            while state.usage.is_none() {
                match chunks.next().await {
                    Some(Ok(chunk)) => {
                        state.on_chunk(&chunk);
                    }
                    Some(Err(_)) | None => break,
                }
            }
        };
        if tokio::time::timeout(crate::domain::chat::stream::DRAIN_AFTER_LEAVE, read)
            .await
            .is_err()
        {
            tracing::info!(response = %turn.draft.id, "no usage from the upstream in time; charging an estimate");
        }
    }
    // Dropping the chunk stream cancels the upstream request.
    drop(chunks);
    if client_gone {
        // The client left; the tokens generated were spent, so they are charged (the upstream's
        // count, else the estimate of every input part and the output seen). Nothing is stored.
        let partial = state.partial_output();
        let (mut usage, tokens) = turn.usage(state.usage.as_ref(), &partial);
        turn.charge(&mut usage, tokens, true).await;
        return;
    }
    let (outcome, output, usage, charge) = match failure {
        Some(e) => {
            let api = crate::domain::error::upstream_error(&e);
            let outcome = Outcome::Failed {
                code: api.code.clone(),
                message: api.message.clone(),
            };
            let output = state.partial_output();
            let usage = turn.usage(state.usage.as_ref(), &output);
            // A failed response is never billed.
            (outcome, output, usage, false)
        }
        None => {
            let (outcome, events) = state.finish();
            if !send_all(&tx, events).await {
                tracing::info!(response = %turn.draft.id, "client left before the stream ended");
            }
            let output = state.output.clone();
            let usage = turn.usage(state.usage.as_ref(), &output);
            (outcome, output, usage, true)
        }
    };
    let (mut usage, tokens) = usage;
    // Charged and stored before the terminal event, so a client that reads the response right
    // after `response.completed` finds it with its cost.
    turn.charge(&mut usage, tokens, charge).await;
    let response = turn.draft.object(Some(&outcome), &output, Some(&usage));
    if let Err(e) = turn.keep(&response).await {
        tracing::error!(response = %turn.draft.id, error = %e, "finishing a streamed response failed");
    }
    let terminal = state.terminal(&outcome, &response);
    let _ = tx.send(terminal).await;
}

/// Sends events in order; false once the client has gone.
async fn send_all(tx: &tokio::sync::mpsc::Sender<Event>, events: Vec<Event>) -> bool {
    for e in events {
        if tx.send(e).await.is_err() {
            return false;
        }
    }
    true
}
