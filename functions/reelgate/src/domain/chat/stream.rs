//! Streamed chat completions, metered: the upstream's chunks are re-stamped (our id, our model
//! name) and handed to the caller's dialect the moment each arrives; what was generated is
//! tallied so that the charge is exact. The upstream is always asked for usage so that billing
//! has it.
//!
//! Billing happens before the dialect writes the end (`[DONE]`), so a client that has seen the
//! end can already see the charge. If the client goes away, the HTTP layer drops the stream;
//! the upstream stream is then read on by a task of its own for at most [`DRAIN_AFTER_LEAVE`]
//! (nothing more is sent anywhere), so that the charge is the usage the upstream reports in its final chunk,
//! not a guess from what the client had seen. Only when no usage arrives in that time (or the
//! upstream breaks off) is an estimate charged: every input part (text, images, files, audio,
//! video) and the completion seen until then. A stream that the upstream breaks while the
//! client is still there is not charged: a failure is never billed.

use crate::domain::accounts::Caller;
use crate::domain::billing::rate_limits::Grant;
use crate::domain::billing::token_charges::{self, ReportedUsage, TokenUsage};
use crate::domain::catalog::ChatModel;
use crate::domain::chat::completion::CompletionUsage;
use crate::domain::chat::dialect::StreamFormat;
use crate::ports::store::ItemStore;
use crate::ports::upstream::completion::ChunkChoice;
use crate::ports::upstream::{self, ChunkStream, CompletionChunk};
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::StreamExt;
use serde::Deserialize;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

/// How long the upstream of a stream the client left is still read for its usage report
/// before the stream is dropped (which cancels the upstream request) and an estimate charged.
pub const DRAIN_AFTER_LEAVE: Duration = Duration::from_secs(30);

/// What becomes of the upstream call when the client leaves mid-stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnLeave {
    /// Read on for the upstream's usage report, for at most [`DRAIN_AFTER_LEAVE`]: an API client
    /// whose connection dropped is charged what the upstream bills, not a guess.
    #[default]
    ReadForUsage,
    /// End the upstream call at once: a person pressed Stop (the console) and wants the model to
    /// stop generating. The charge is the upstream's own report if one came before the stop,
    /// else the estimate of the input and of what was generated until then.
    EndNow,
}

pub struct StreamContext {
    /// Owned: the charge may outlive the request (a client that left).
    pub store: Arc<dyn ItemStore>,
    pub caller: Caller,
    pub model: ChatModel,
    pub id: String,
    pub created: i64,
    pub prompt_chars: usize,
    /// How the chunks are written for the caller (OpenAI's chunks, or another API's events).
    pub format: Box<dyn StreamFormat>,
    /// The rate-limit reservation, settled with the real token count at the charge.
    pub grant: Grant,
    pub on_leave: OnLeave,
}

/// The ledger kind of a chat completion's charge (the Messages API's too).
pub(crate) const CHAT_COMPLETION: &str = "chat.completion";

/// Everything a completion's charge needs, owned, so the charge can run as a task of its own.
#[derive(Clone)]
pub(crate) struct ChargeSpec {
    pub store: Arc<dyn ItemStore>,
    pub caller: Caller,
    pub model: ChatModel,
    /// The ledger entry's kind: [`CHAT_COMPLETION`] or `response`.
    pub kind: &'static str,
    /// The completion's (or response's) id; one ledger entry per id.
    pub id: String,
    pub grant: Grant,
}

/// What the upstream has reported and generated so far.
#[derive(Clone, Default)]
struct Tally {
    usage: Option<TokenUsage>,
    /// The upstream's usage as it sent it (with `prompt_tokens_details` and the like).
    usage_shown: Option<CompletionUsage>,
    completion_chars: usize,
}

impl Tally {
    fn take_usage(&mut self, raw: Value) {
        let reported = ReportedUsage::deserialize(&raw).ok();
        if let Some(u) = reported.as_ref().and_then(TokenUsage::reported) {
            self.usage = Some(u);
            let written = CompletionUsage::deserialize(&raw).ok();
            self.usage_shown = Some(CompletionUsage::shown(written, u.chat_usage()));
        }
    }

    fn count(&mut self, choices: &[ChunkChoice]) {
        self.completion_chars += choices
            .iter()
            .map(|c| c.delta.generated_chars())
            .sum::<usize>();
    }

    /// The upstream's own count, else the estimate (`prompt_chars` counts every input part).
    fn usage(&self, prompt_chars: usize) -> TokenUsage {
        self.usage
            .unwrap_or_else(|| TokenUsage::estimate(prompt_chars, self.completion_chars))
    }
}

/// Tracks what was generated and charges it exactly once, also when the client leaves.
struct Meter {
    ctx: StreamContext,
    tally: Tally,
    settled: bool,
}

impl Meter {
    fn usage(&self) -> TokenUsage {
        self.tally.usage(self.ctx.prompt_chars)
    }

    fn charge_spec(&self) -> ChargeSpec {
        ChargeSpec {
            store: self.ctx.store.clone(),
            caller: self.ctx.caller.clone(),
            model: self.ctx.model.clone(),
            kind: CHAT_COMPLETION,
            id: self.ctx.id.clone(),
            grant: self.ctx.grant.clone(),
        }
    }

    async fn settle(&mut self) -> (TokenUsage, Option<rust_decimal::Decimal>) {
        let used = self.usage();
        self.settled = true;
        // The stream waits for the charge, so `[DONE]` follows it.
        let cost = charge(self.charge_spec(), used).await;
        (used, cost)
    }
}

/// Charges a completion's usage and, in the same transaction, settles its tokens-per-minute
/// reservation, under the text requests' one charge policy
/// ([`token_charges::charge_detached`]). Returns what the balance dropped by.
pub(crate) async fn charge(spec: ChargeSpec, used: TokenUsage) -> Option<rust_decimal::Decimal> {
    let ChargeSpec {
        store,
        caller,
        model,
        kind,
        id,
        grant,
    } = spec;
    let c = token_charges::OwnedCharge {
        org: caller.org.clone(),
        person: caller.person.clone(),
        model,
        kind,
        reference: id,
        usage: used,
        key: caller.key_id().to_owned(),
        budget_month: caller.budget.as_ref().map(|b| b.month.clone()),
        rate_settlement: crate::domain::billing::rate_limits::settlement_ops(
            &grant,
            used.prompt_tokens + used.completion_tokens,
        ),
    };
    token_charges::charge_detached(store, c).await
}

/// Reads on the upstream of a stream whose client left, for at most [`DRAIN_AFTER_LEAVE`], then
/// charges what the upstream reported (or the estimate when it reported nothing).
async fn drain_and_charge(
    mut upstream: ChunkStream,
    mut tally: Tally,
    prompt_chars: usize,
    spec: ChargeSpec,
) {
    let read = async {
        while tally.usage.is_none() {
            match upstream.next().await {
                Some(Ok(chunk)) => {
                    if let Some(raw) = chunk.usage {
                        tally.take_usage(raw);
                    }
                    tally.count(&chunk.choices);
                }
                Some(Err(_)) | None => break,
            }
        }
    };
    if tokio::time::timeout(DRAIN_AFTER_LEAVE, read).await.is_err() {
        tracing::info!(completion = %spec.id, "no usage from the upstream in time; charging an estimate");
    }
    // Dropping the stream cancels the upstream request, if it is still generating.
    drop(upstream);
    charge(spec, tally.usage(prompt_chars)).await;
}

struct State {
    upstream: ChunkStream,
    meter: Meter,
    out: VecDeque<Bytes>,
    finished: bool,
}

impl State {
    /// Re-stamps one upstream chunk and queues what the client should see of it.
    fn take(&mut self, mut chunk: CompletionChunk) {
        if let Some(raw) = chunk.usage.take() {
            self.meter.tally.take_usage(raw);
        }
        if chunk.choices.is_empty() {
            // A usage-only chunk: its usage goes out in our own final chunk.
            return;
        }
        self.meter.tally.count(&chunk.choices);
        let ctx = &self.meter.ctx;
        let rest = &mut chunk.rest;
        rest.insert("id".into(), ctx.id.clone().into());
        rest.insert("object".into(), "chat.completion.chunk".into());
        rest.insert("created".into(), ctx.created.into());
        rest.insert("model".into(), ctx.model.id.clone().into());
        let events = self.meter.ctx.format.chunk(chunk);
        self.out.extend(events);
    }

    async fn finish(&mut self) {
        let (used, cost) = self.meter.settle().await;
        let mut usage = self
            .meter
            .tally
            .usage_shown
            .clone()
            .unwrap_or_else(|| CompletionUsage::from(used.chat_usage()));
        usage.cost = cost.map(token_charges::cost_text);
        let events = self.meter.ctx.format.end(usage);
        self.out.extend(events);
    }

    fn fail(&mut self, error: &upstream::UpstreamError) {
        tracing::warn!(completion = %self.meter.ctx.id, %error, "upstream stream failed");
        self.meter.settled = true;
        let api = crate::domain::error::upstream_error(error);
        let events = self.meter.ctx.format.fail(&api);
        self.out.extend(events);
    }
}

impl Drop for State {
    fn drop(&mut self) {
        if self.meter.settled {
            return;
        }
        // The client left before the end. The upstream keeps generating until its stream is
        // dropped, and its usage chunk is what it bills us: read on for it (bounded), then
        // charge; or, after a person's Stop, end it now and charge what is known.
        self.meter.settled = true;
        let upstream = std::mem::replace(&mut self.upstream, futures::stream::empty().boxed());
        let spec = self.meter.charge_spec();
        let tally = self.meter.tally.clone();
        let prompt_chars = self.meter.ctx.prompt_chars;
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        match self.meter.ctx.on_leave {
            OnLeave::ReadForUsage => {
                tracing::info!(completion = %spec.id, "client left mid-stream; reading the upstream's usage");
                handle.spawn(drain_and_charge(upstream, tally, prompt_chars, spec));
            }
            OnLeave::EndNow => {
                tracing::info!(completion = %spec.id, "stopped mid-stream; ending the upstream call");
                // Dropping the stream closes the upstream connection, which stops generation.
                drop(upstream);
                handle.spawn(async move {
                    charge(spec, tally.usage(prompt_chars)).await;
                });
            }
        }
    }
}

/// The answer's bytes as the caller reads them, each written the moment its chunk arrives;
/// the charge is written before the end (see the module's notes on a client that leaves).
pub fn metered(mut ctx: StreamContext, upstream: ChunkStream) -> BoxStream<'static, Bytes> {
    let first: VecDeque<Bytes> = ctx.format.start().into();
    let state = State {
        upstream,
        meter: Meter {
            ctx,
            tally: Tally::default(),
            settled: false,
        },
        out: first,
        finished: false,
    };
    futures::stream::unfold(state, |mut st| async move {
        loop {
            if let Some(bytes) = st.out.pop_front() {
                return Some((bytes, st));
            }
            if st.finished {
                return None;
            }
            match st.upstream.next().await {
                Some(Ok(chunk)) => st.take(chunk),
                Some(Err(e)) => {
                    st.finished = true;
                    st.fail(&e);
                }
                None => {
                    st.finished = true;
                    st.finish().await;
                }
            }
        }
    })
    .boxed()
}
