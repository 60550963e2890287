//! Token billing for text models (chat completions and responses).
//!
//! Admission: a request is admitted while the organization's `balance` is above zero (the spec's
//! rule for chat; no quote exists before the model has answered). Charging: once a completion
//! has ended — streamed ones included — its token usage is priced at the model's per-million
//! prices and, in one transaction, deducted from the organization and written as a ledger item
//! `ORG#<org>` / `LEDGER#<ledger id>`. The ledger item is put with "must not exist" and its id
//! is derived from the completion id, so a completion is charged at most once even if the
//! charge is retried. `balance` and `available` get the same delta, so `available = balance −
//! reserved` keeps holding; a charge may take the balance below zero (the tokens are spent), and
//! the next request is then refused.

use crate::domain::accounts::org_key;
use crate::domain::billing::ledger::{Charged, LedgerEntry};
use crate::domain::billing::usage_report::Amounts;
use crate::domain::catalog::ChatModel;
use crate::domain::error::ApiResult;
use crate::domain::Context;
use crate::ports::store::{now_secs, Condition, ItemExt, ItemStore, StoreError, TransactOp};
use rust_decimal::Decimal;
use serde::Deserialize;

/// Token counts of one completion.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TokenUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Of the prompt tokens, those the upstream reported as read from its prompt cache
    /// (`prompt_tokens_details.cached_tokens` / `input_tokens_details.cached_tokens`).
    pub cached_tokens: u64,
    /// Of the prompt tokens, those the upstream reported as written to its prompt cache
    /// (`prompt_tokens_details.cache_write_tokens`, as Bedrock's and Anthropic's adapters and
    /// OpenRouter report them).
    pub cache_write_tokens: u64,
    /// True when the upstream reported no usage and the counts were estimated from text length.
    pub estimated: bool,
}

/// The `usage` an upstream reports, as serde reads it: OpenAI chat's names (`prompt_tokens`,
/// `completion_tokens`, `prompt_tokens_details.cached_tokens` and `.cache_write_tokens`) or the
/// Responses API's (`input_tokens`, `output_tokens`, `input_tokens_details`), the chat name
/// first where both are sent. It is the upstream's word, read leniently: a count that is not a
/// whole number, or details that are not an object, read as absent rather than refusing the
/// whole usage (the estimate would then be charged instead of what the upstream counted).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct ReportedUsage {
    #[serde(default)]
    prompt_tokens: Count,
    #[serde(default)]
    input_tokens: Count,
    #[serde(default)]
    completion_tokens: Count,
    #[serde(default)]
    output_tokens: Count,
    #[serde(default)]
    total_tokens: Count,
    #[serde(default, deserialize_with = "loose")]
    prompt_tokens_details: Option<UsageDetails>,
    #[serde(default, deserialize_with = "loose")]
    input_tokens_details: Option<UsageDetails>,
    #[serde(default, deserialize_with = "loose")]
    completion_tokens_details: Option<OutputDetails>,
    #[serde(default, deserialize_with = "loose")]
    output_tokens_details: Option<OutputDetails>,
}

impl ReportedUsage {
    /// Of the completion's tokens, those the model spent reasoning (0 when not reported).
    pub fn reasoning_tokens(&self) -> u64 {
        match &self.completion_tokens_details {
            Some(details) => Some(details),
            None => self.output_tokens_details.as_ref(),
        }
        .and_then(|d| d.reasoning_tokens.0)
        .unwrap_or(0)
    }

    /// The total the upstream reported, when it did.
    pub fn total_tokens(&self) -> Option<u64> {
        self.total_tokens.0
    }
}

/// The completion's details in a reported usage.
#[derive(Clone, Debug, Default, Deserialize)]
struct OutputDetails {
    #[serde(default)]
    reasoning_tokens: Count,
}

/// The prompt's details in a reported usage.
#[derive(Clone, Debug, Default, Deserialize)]
struct UsageDetails {
    #[serde(default)]
    cached_tokens: Count,
    #[serde(default)]
    cache_write_tokens: Count,
}

/// A whole number of tokens, or nothing for any other JSON value.
#[derive(Clone, Copy, Debug, Default)]
struct Count(Option<u64>);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Count(loose(d)?))
    }
}

/// Either `T`, or any other JSON value, read and set aside.
#[derive(Deserialize)]
#[serde(untagged)]
enum Loose<T> {
    Valid(T),
    Other(serde::de::IgnoredAny),
}

/// `T` where the value is one, else `None` (`null` included).
fn loose<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    Ok(match Option::<Loose<T>>::deserialize(d)? {
        Some(Loose::Valid(t)) => Some(t),
        Some(Loose::Other(_)) | None => None,
    })
}

/// Tokens an estimate counts for a chat input part that is not text (an estimate is charged only
/// when the upstream reports no usage, e.g. a stream the client left whose upstream never sent
/// its usage). An image as OpenAI's high-detail 512px tile; audio, video and files a flat
/// floor each, so that a prompt of images and documents is never charged as if it were empty.
pub const IMAGE_PART_TOKENS: u64 = 765;
pub const AUDIO_PART_TOKENS: u64 = 1_000;
pub const VIDEO_PART_TOKENS: u64 = 2_000;
pub const FILE_PART_TOKENS: u64 = 1_000;

/// The estimate's tokens for a chat content part of type `kind` (0 for text, which is counted
/// by its characters).
pub fn part_estimate(kind: &str) -> u64 {
    match kind {
        "image_url" | "input_image" => IMAGE_PART_TOKENS,
        "input_audio" | "audio_url" => AUDIO_PART_TOKENS,
        "video_url" => VIDEO_PART_TOKENS,
        "file" | "input_file" => FILE_PART_TOKENS,
        _ => 0,
    }
}

/// [`part_estimate`] as characters (four a token), for estimates kept in characters.
pub fn part_estimate_chars(kind: &str) -> usize {
    (part_estimate(kind) * 4) as usize
}

impl TokenUsage {
    /// The counts of what an upstream reported; `None` when it reported no prompt count.
    /// Cache reads and writes are parts of the prompt: an upstream claiming more is clamped.
    pub fn reported(usage: &ReportedUsage) -> Option<TokenUsage> {
        let prompt_tokens = usage.prompt_tokens.0.or(usage.input_tokens.0)?;
        let details = match &usage.prompt_tokens_details {
            Some(details) => Some(details),
            None => usage.input_tokens_details.as_ref(),
        };
        let detail =
            |count: fn(&UsageDetails) -> &Count| details.and_then(|d| count(d).0).unwrap_or(0);
        let cached_tokens = detail(|d| &d.cached_tokens).min(prompt_tokens);
        Some(TokenUsage {
            prompt_tokens,
            completion_tokens: usage
                .completion_tokens
                .0
                .or(usage.output_tokens.0)
                .unwrap_or(0),
            cached_tokens,
            cache_write_tokens: detail(|d| &d.cache_write_tokens)
                .min(prompt_tokens - cached_tokens),
            estimated: false,
        })
    }

    /// A rough count (four characters a token) for upstreams that report no usage;
    /// `prompt_chars` includes [`part_estimate_chars`] for each input part that is not text.
    pub fn estimate(prompt_chars: usize, completion_chars: usize) -> TokenUsage {
        TokenUsage {
            prompt_tokens: prompt_chars.div_ceil(4) as u64,
            completion_tokens: completion_chars.div_ceil(4) as u64,
            cached_tokens: 0,
            cache_write_tokens: 0,
            estimated: true,
        }
    }

    /// The prompt's tokens as (cache reads, cache writes, the rest), which add up to it.
    pub fn input_split(self) -> (u64, u64, u64) {
        let cached = self.cached_tokens.min(self.prompt_tokens);
        let written = self.cache_write_tokens.min(self.prompt_tokens - cached);
        (cached, written, self.prompt_tokens - cached - written)
    }

    /// The counts as a chat completion's `usage` reports them.
    pub fn chat_usage(self) -> ChatUsage {
        ChatUsage {
            prompt_tokens: self.prompt_tokens,
            completion_tokens: self.completion_tokens,
            total_tokens: self.prompt_tokens + self.completion_tokens,
            prompt_tokens_details: (self.cached_tokens > 0 || self.cache_write_tokens > 0)
                .then_some(PromptTokensDetails {
                    cached_tokens: self.cached_tokens,
                    cache_write_tokens: self.cache_write_tokens,
                }),
        }
    }
}

/// A chat completion's `usage` as reelgate writes it where the upstream reported none (an
/// upstream's own report passes on as it sent it).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct ChatUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
    /// Only when part of the prompt was read from or written to the upstream's prompt cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_details: Option<PromptTokensDetails>,
}

#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct PromptTokensDetails {
    pub cached_tokens: u64,
    pub cache_write_tokens: u64,
}

/// The price of `usage` at the model's prices, exact, by kind: uncached input tokens at the input
/// price, cache reads at the cached-input price and cache writes at the cache-write price when
/// the catalog sets them (else the input price), output tokens at the output price.
pub fn priced(model: &ChatModel, usage: TokenUsage) -> Amounts {
    let million = Decimal::from(1_000_000u32);
    let (cached, written, uncached) = usage.input_split();
    let cached_price = model
        .cached_input_per_million
        .unwrap_or(model.input_per_million);
    let write_price = model
        .cache_write_per_million
        .unwrap_or(model.input_per_million);
    Amounts {
        input: Decimal::from(uncached) * model.input_per_million / million,
        cached_input: Decimal::from(cached) * cached_price / million,
        cache_write: Decimal::from(written) * write_price / million,
        output: Decimal::from(usage.completion_tokens) * model.output_per_million / million,
        video: Decimal::ZERO,
    }
}

/// The price of `usage` at the model's prices, exact.
pub fn cost(model: &ChatModel, usage: TokenUsage) -> Decimal {
    priced(model, usage).total()
}

/// Tokens a text request is expected to use, for the tokens-per-minute limit: the prompt's
/// estimate plus the completion's maximum, or
/// [`crate::domain::billing::rate_limits::DEFAULT_COMPLETION_ESTIMATE`] when it sets none.
pub fn admission_estimate(prompt_tokens: u64, max_completion: Option<u64>) -> u64 {
    prompt_tokens
        + max_completion.unwrap_or(crate::domain::billing::rate_limits::DEFAULT_COMPLETION_ESTIMATE)
}

/// What a charge is for.
#[derive(Clone, Debug)]
pub struct Charge<'a> {
    pub org: &'a str,
    pub person: &'a str,
    pub model: &'a ChatModel,
    /// `chat.completion` or `response`.
    pub kind: &'a str,
    /// The completion's (or response's) id; one ledger entry per id.
    pub reference: &'a str,
    pub usage: TokenUsage,
    /// The key the usage is attributed to (`console` for the console).
    pub key: &'a str,
    /// The month of the key's budget the cost counts against, when the key has a budget.
    pub budget_month: Option<&'a str>,
    /// The rate-limit settlement written with the charge
    /// ([`crate::domain::billing::rate_limits::settlement_ops`]).
    pub rate_settlement: crate::domain::billing::rate_limits::RateSettlement,
}

/// Deducts the usage's cost and writes the ledger entry, atomically. Returns the amount charged.
/// Charging the same reference twice is a no-op that returns zero.
pub async fn charge(cx: Context<'_>, c: Charge<'_>) -> ApiResult<Decimal> {
    write(cx.store, c).await
}

async fn write(store: &dyn ItemStore, c: Charge<'_>) -> ApiResult<Decimal> {
    let amounts = priced(c.model, c.usage);
    let amount = amounts.total();
    let now = now_secs();
    let ledger = LedgerEntry {
        org: c.org.to_owned(),
        charge_type: c.kind.to_owned(),
        model: Some(c.model.id.clone()),
        key: Some(c.key.to_owned()),
        amount,
        currency: Some(c.model.currency.clone()),
        charged_at: Some(now),
        reason: Some(format!("{} token usage", c.kind)),
        charged: Charged::Tokens {
            reference: c.reference.to_owned(),
            person: c.person.to_owned(),
            prompt_tokens: c.usage.prompt_tokens,
            completion_tokens: c.usage.completion_tokens,
            cached_tokens: c.usage.cached_tokens,
            cache_write_tokens: c.usage.cache_write_tokens,
            estimated: c.usage.estimated,
        },
    }
    .to_item();
    let (cached, written, uncached) = c.usage.input_split();
    let line = crate::domain::billing::usage_report::Line {
        charge_type: c.kind,
        model: &c.model.id,
        key: c.key,
        currency: &c.model.currency,
        input_tokens: uncached,
        cached_input_tokens: cached,
        cache_write_input_tokens: written,
        output_tokens: c.usage.completion_tokens,
        video_seconds: 0,
        amounts,
    };
    let mut ops = vec![
        TransactOp::Update {
            key: org_key(c.org),
            update: crate::domain::accounts::record::deduct(amount),
            condition: Some(Condition::Exists),
        },
        TransactOp::Put {
            item: ledger,
            condition: Some(Condition::NotExists),
        },
        // The day's usage rollup (the customer's usage report); counted once, with the ledger.
        crate::domain::billing::usage_report::rollup_op(c.org, now, &line),
    ];
    // A refused transaction names the write that refused by its position: the ledger entry is
    // the second (already charged), the key's budget, when it has one, the fourth.
    const LEDGER_AT: usize = 1;
    const BUDGET_AT: usize = 3;
    let mut budget = c.budget_month.is_some();
    if let Some(month) = c.budget_month {
        ops.push(crate::domain::billing::budgets::commit_op(
            crate::domain::accounts::api_key_key(c.key),
            month,
            amount,
        ));
    }
    ops.extend(c.rate_settlement.writes(store));
    // A transaction that conflicts with a concurrent write to the organization (DynamoDB's
    // TransactionConflict, throttling, a busy database) wrote nothing: try again with backoff.
    // The ledger item's `NotExists` makes a retry after an unseen success a no-op, so retrying
    // can never charge twice, and the tokens already spent are never dropped.
    let mut attempt = 0u32;
    loop {
        match store.transact(ops.clone()).await {
            Ok(()) => {
                c.rate_settlement.after_charge(store).await;
                let m = &c.model.id;
                crate::observability::metrics::tokens(m, "input", line.input_tokens);
                crate::observability::metrics::tokens(m, "cached_input", line.cached_input_tokens);
                crate::observability::metrics::tokens(
                    m,
                    "cache_write",
                    line.cache_write_input_tokens,
                );
                crate::observability::metrics::tokens(m, "output", line.output_tokens);
                crate::observability::metrics::spend(m, &c.model.currency, amount);
                return Ok(amount);
            }
            // The key was revoked and erased meanwhile: the usage is still charged.
            Err(e @ StoreError::TransactionCanceled { .. }) if budget && e.failed_at(BUDGET_AT) => {
                ops.remove(BUDGET_AT);
                budget = false;
            }
            Err(e @ StoreError::TransactionCanceled { .. }) if e.failed_at(LEDGER_AT) => {
                tracing::warn!(
                    reference = c.reference,
                    "usage already charged; not charging again"
                );
                return Ok(Decimal::ZERO);
            }
            Err(StoreError::Unavailable(detail)) if attempt + 1 < CHARGE_ATTEMPTS => {
                attempt += 1;
                tracing::warn!(reference = c.reference, attempt, %detail, "token charge conflicted; retrying");
                tokio::time::sleep(charge_backoff(attempt)).await;
            }
            Err(e) => {
                tracing::error!(reference = c.reference, %amount, error = %e, "token charge failed after retries");
                return Err(e.into());
            }
        }
    }
}

/// A [`Charge`] owned by the task that writes it.
pub struct OwnedCharge {
    pub org: String,
    pub person: String,
    pub model: ChatModel,
    /// `chat.completion` or `response`.
    pub kind: &'static str,
    pub reference: String,
    pub usage: TokenUsage,
    pub key: String,
    pub budget_month: Option<String>,
    pub rate_settlement: crate::domain::billing::rate_limits::RateSettlement,
}

/// The one charge policy of text requests (chat completions, the Messages API, responses):
/// the charge is written by a task of its own, so a client that leaves while it is written
/// cannot cancel it halfway, and the answer waits for it (a client that has read the end of an
/// answer can already see its charge). A charge that still fails after [`CHARGE_ATTEMPTS`] is
/// logged loudly and never turned into an error: the completion was produced (and paid for
/// upstream), and the caller keeps it. Returns what the balance dropped by (zero for a reference
/// already charged), `None` when the charge could not be written.
pub async fn charge_detached(
    store: std::sync::Arc<dyn ItemStore>,
    c: OwnedCharge,
) -> Option<Decimal> {
    let reference = c.reference.clone();
    let org = c.org.clone();
    let written = tokio::spawn(async move {
        let charge = Charge {
            org: &c.org,
            person: &c.person,
            model: &c.model,
            kind: c.kind,
            reference: &c.reference,
            usage: c.usage,
            key: &c.key,
            budget_month: c.budget_month.as_deref(),
            rate_settlement: c.rate_settlement,
        };
        write(store.as_ref(), charge).await
    })
    .await;
    match written {
        Ok(Ok(amount)) => Some(amount),
        Ok(Err(e)) => {
            tracing::error!(%reference, %org, error = %e.message, "charging token usage failed");
            None
        }
        Err(e) => {
            tracing::error!(%reference, %org, error = %e, "the token charge task failed");
            None
        }
    }
}

/// `usage.cost`: what a call's charge took from the balance, as an exact decimal string in the
/// model's currency (the answers of chat completions, Messages and Responses carry it).
pub fn cost_text(amount: Decimal) -> String {
    amount.normalize().to_string()
}

/// Attempts of one token charge before it is reported as failed.
pub const CHARGE_ATTEMPTS: u32 = 10;

/// Exponential backoff with jitter from 20 ms, capped at 1 s (about 5 s over all attempts).
fn charge_backoff(attempt: u32) -> std::time::Duration {
    let base = 20u64.saturating_mul(1 << attempt.min(6)).min(1000);
    let jitter = u64::from(rand::random::<u8>()) % (base / 2 + 1);
    std::time::Duration::from_millis(base / 2 + jitter)
}

/// The organization's most recent charges (video renders and token usage), newest first.
pub async fn recent_charges(
    cx: Context<'_>,
    org: &str,
    limit: usize,
) -> ApiResult<Vec<super::ledger::ChargeSummary>> {
    let mut entries = Vec::new();
    for prefix in [
        crate::domain::table_keys::CHARGE_PREFIX,
        crate::domain::table_keys::LEDGER_PREFIX,
    ] {
        let page = cx
            .store
            .query(
                crate::ports::store::Query::partition(crate::domain::table_keys::org_pk(org))
                    .prefix(prefix)
                    .limit(1000),
            )
            .await?;
        entries.extend(
            page.items
                .iter()
                .filter_map(|i| LedgerEntry::from_item(org, i)),
        );
    }
    entries.sort_by_key(|e| std::cmp::Reverse(e.charged_at.unwrap_or_default()));
    Ok(entries
        .iter()
        .take(limit)
        .map(LedgerEntry::summary)
        .collect())
}

/// A ledger entry as stored, for tests and reports.
pub async fn ledger_entry(
    cx: Context<'_>,
    org: &str,
    reference: &str,
) -> ApiResult<Option<crate::ports::store::Item>> {
    let key = crate::domain::table_keys::ledger(org, reference);
    Ok(cx
        .store
        .get(&key)
        .await?
        .filter(|i| i.str_attr("kind") == Some(crate::domain::billing::ledger::KIND)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rust_decimal_macros::dec;
    use serde_json::Value;

    #[test]
    fn cost_is_exact() {
        let mut model: ChatModel = toml::from_str("id = \"m\"\nupstream = \"u\"").expect("model");
        model.input_per_million = dec!(0.15);
        model.output_per_million = dec!(0.60);
        let usage = TokenUsage {
            prompt_tokens: 1234,
            completion_tokens: 56,
            cached_tokens: 0,
            cache_write_tokens: 0,
            estimated: false,
        };
        // 1234 × 0.15 / 1e6 + 56 × 0.60 / 1e6 = 0.0001851 + 0.0000336
        assert_eq!(cost(&model, usage), dec!(0.0002187));
    }

    #[test]
    fn cached_tokens_are_priced_at_the_cached_price_when_the_catalog_sets_one() {
        let mut model: ChatModel = toml::from_str("id = \"m\"\nupstream = \"u\"").expect("model");
        model.input_per_million = dec!(2.50);
        model.output_per_million = dec!(10);
        let usage = reported(serde_json::json!({
            "prompt_tokens": 1000, "completion_tokens": 10,
            "prompt_tokens_details": {"cached_tokens": 600}
        }))
        .expect("usage");
        assert_eq!(usage.cached_tokens, 600);
        // Without a cached price every input token costs the input price.
        assert_eq!(cost(&model, usage), dec!(0.0026));
        model.cached_input_per_million = Some(dec!(1.25));
        // 400 × 2.50 + 600 × 1.25 + 10 × 10, per million.
        let p = priced(&model, usage);
        assert_eq!(p.input, dec!(0.001));
        assert_eq!(p.cached_input, dec!(0.00075));
        assert_eq!(p.output, dec!(0.0001));
        assert_eq!(cost(&model, usage), dec!(0.00185));
        // The responses API's spelling, and a claim above the prompt clamped to it.
        let r = reported(serde_json::json!({
            "input_tokens": 5, "output_tokens": 1, "input_tokens_details": {"cached_tokens": 9}
        }))
        .expect("usage");
        assert_eq!(r.cached_tokens, 5);
    }

    fn reported(usage: Value) -> Option<TokenUsage> {
        TokenUsage::reported(&ReportedUsage::deserialize(&usage).expect("a usage object"))
    }

    #[test]
    fn a_reported_usage_is_read_leniently_and_chat_names_come_first() {
        let both = reported(serde_json::json!({
            "prompt_tokens": 10, "input_tokens": 99, "completion_tokens": 3, "output_tokens": 98,
            "prompt_tokens_details": {"cached_tokens": 4, "cache_write_tokens": 9},
            "input_tokens_details": {"cached_tokens": 97}
        }))
        .expect("usage");
        assert_eq!(
            (
                both.prompt_tokens,
                both.completion_tokens,
                both.cached_tokens,
                both.cache_write_tokens
            ),
            (10, 3, 4, 6)
        );
        // Counts that are not whole numbers, and details that are not an object, read as absent.
        let odd = reported(serde_json::json!({
            "prompt_tokens": 7, "completion_tokens": "3",
            "prompt_tokens_details": "none", "total_tokens": 1.5
        }))
        .expect("usage");
        assert_eq!(
            (odd.prompt_tokens, odd.completion_tokens, odd.cached_tokens),
            (7, 0, 0)
        );
        // No prompt count at all: no usage (the estimate is charged).
        assert_eq!(reported(serde_json::json!({"prompt_tokens": -1})), None);
        assert_eq!(reported(serde_json::json!({"completion_tokens": 5})), None);
    }
}
