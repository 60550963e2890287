//! The ledger entry record: one charge of an organization, written once (`NotExists`) in the
//! transaction that moves the money. A render charge sits at `CHARGE#<video id>`, a token-usage
//! charge at `LEDGER#<reference>` (docs/table-design.md); both share one shape (kind, positive
//! amount, currency, charged_at, reason, type, model, key) plus what the charge was for.

use crate::ports::store::{item, Attr, Item, ItemExt, Key};
use rust_decimal::Decimal;

/// The item's `kind`.
pub const KIND: &str = "ledger_charge";

/// What a charge was for.
#[derive(Clone, Debug, PartialEq)]
pub enum Charged {
    /// A completed render of job `video_id`.
    Render {
        video_id: String,
        video_seconds: u64,
    },
    /// Token usage of a completion or response `reference`, by `person`.
    Tokens {
        reference: String,
        person: String,
        prompt_tokens: u64,
        completion_tokens: u64,
        cached_tokens: u64,
        /// Of the prompt tokens, those written to the upstream's prompt cache.
        cache_write_tokens: u64,
        /// The counts were estimated (the upstream reported no usage).
        estimated: bool,
    },
}

/// One charge as the console's usage page lists it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct ChargeSummary {
    #[schema(value_type = String, pattern = "^charge$")]
    pub object: &'static str,
    /// The render's video id, or the completion's or response's id.
    pub id: String,
    /// `video`, `chat.completion` or `response`.
    #[serde(rename = "type")]
    pub charge_type: String,
    pub model: Option<String>,
    /// What was deducted, an exact decimal string.
    pub amount: String,
    pub currency: Option<String>,
    pub charged_at: Option<i64>,
    pub reason: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct LedgerEntry {
    pub org: String,
    /// `video`, `chat.completion` or `response` (entries written before it was recorded read
    /// as `video`).
    pub charge_type: String,
    pub model: Option<String>,
    /// The key the charge is attributed to (`console` for the console).
    pub key: Option<String>,
    /// Positive: what was deducted.
    pub amount: Decimal,
    pub currency: Option<String>,
    pub charged_at: Option<i64>,
    pub reason: Option<String>,
    pub charged: Charged,
}

impl LedgerEntry {
    pub fn key_of(&self) -> Key {
        match &self.charged {
            Charged::Render { video_id, .. } => {
                crate::domain::table_keys::charge(&self.org, video_id)
            }
            Charged::Tokens { reference, .. } => {
                crate::domain::table_keys::ledger(&self.org, reference)
            }
        }
    }

    /// The id the entry is shown under: the job's or the completion's.
    pub fn id(&self) -> &str {
        match &self.charged {
            Charged::Render { video_id, .. } => video_id,
            Charged::Tokens { reference, .. } => reference,
        }
    }

    pub fn to_item(&self) -> Item {
        let mut it = item(&self.key_of());
        let mut put = |name: &str, value: Attr| {
            it.insert(name.to_owned(), value);
        };
        let count = |n: u64| Attr::N(Decimal::from(n));
        put("kind", KIND.into());
        match &self.charged {
            Charged::Render {
                video_id,
                video_seconds,
            } => {
                put("video_id", video_id.clone().into());
                put("video_seconds", count(*video_seconds));
            }
            Charged::Tokens {
                reference,
                person,
                prompt_tokens,
                completion_tokens,
                cached_tokens,
                cache_write_tokens,
                estimated,
            } => {
                put("id", reference.clone().into());
                put("person", person.clone().into());
                put("prompt_tokens", count(*prompt_tokens));
                put("completion_tokens", count(*completion_tokens));
                put("cached_tokens", count(*cached_tokens));
                put("cache_write_tokens", count(*cache_write_tokens));
                put("estimated", (*estimated).into());
            }
        }
        put("type", self.charge_type.clone().into());
        if let Some(model) = &self.model {
            put("model", model.clone().into());
        }
        if let Some(key) = &self.key {
            put("key", key.clone().into());
        }
        put("amount", Attr::N(self.amount));
        if let Some(currency) = &self.currency {
            put("currency", currency.clone().into());
        }
        if let Some(at) = self.charged_at {
            put("charged_at", at.into());
        }
        if let Some(reason) = &self.reason {
            put("reason", reason.clone().into());
        }
        it
    }

    /// The entry of a stored item of `org`; None when the item is not a ledger entry.
    pub fn from_item(org: &str, it: &Item) -> Option<LedgerEntry> {
        if it.str_attr("kind") != Some(KIND) {
            return None;
        }
        let count = |name: &str| {
            it.decimal_attr(name)
                .and_then(|d| u64::try_from(d).ok())
                .unwrap_or(0)
        };
        let text = |name: &str| it.str_attr(name).map(str::to_owned);
        let charged = match (it.str_attr("video_id"), it.str_attr("id")) {
            (Some(video_id), _) => Charged::Render {
                video_id: video_id.to_owned(),
                video_seconds: count("video_seconds"),
            },
            (None, Some(reference)) => Charged::Tokens {
                reference: reference.to_owned(),
                person: it.str_attr("person").unwrap_or_default().to_owned(),
                prompt_tokens: count("prompt_tokens"),
                completion_tokens: count("completion_tokens"),
                cached_tokens: count("cached_tokens"),
                cache_write_tokens: count("cache_write_tokens"),
                estimated: it.bool_attr("estimated").unwrap_or(false),
            },
            (None, None) => return None,
        };
        Some(LedgerEntry {
            org: org.to_owned(),
            charge_type: it.str_attr("type").unwrap_or("video").to_owned(),
            model: text("model"),
            key: text("key"),
            amount: it.decimal_attr("amount").unwrap_or_default(),
            currency: text("currency"),
            charged_at: it.i64_attr("charged_at"),
            reason: text("reason"),
            charged,
        })
    }

    /// The entry as the console's recent charges list shows it.
    pub fn summary(&self) -> ChargeSummary {
        ChargeSummary {
            object: "charge",
            id: self.id().to_owned(),
            charge_type: self.charge_type.clone(),
            model: self.model.clone(),
            amount: self.amount.to_string(),
            currency: self.currency.clone(),
            charged_at: self.charged_at,
            reason: self.reason.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render() -> LedgerEntry {
        LedgerEntry {
            org: "org_1".into(),
            charge_type: "video".into(),
            model: Some("reel-1".into()),
            key: Some("key_1".into()),
            amount: Decimal::new(40, 2),
            currency: Some("usd".into()),
            charged_at: Some(1_700_000_000),
            reason: Some("video render completed".into()),
            charged: Charged::Render {
                video_id: "video_1".into(),
                video_seconds: 8,
            },
        }
    }

    #[test]
    fn a_render_charge_is_stored_as_it_always_was() {
        let it = render().to_item();
        let mut names: Vec<&str> = it.keys().map(String::as_str).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            [
                "amount",
                "charged_at",
                "currency",
                "key",
                "kind",
                "model",
                "pk",
                "reason",
                "sk",
                "type",
                "video_id",
                "video_seconds"
            ]
        );
        assert_eq!(it.str_attr("sk"), Some("CHARGE#video_1"));
        assert_eq!(LedgerEntry::from_item("org_1", &it), Some(render()));
    }

    #[test]
    fn a_token_charge_reads_back_and_other_items_are_not_entries() {
        let e = LedgerEntry {
            charge_type: "chat.completion".into(),
            reason: Some("chat.completion token usage".into()),
            charged: Charged::Tokens {
                reference: "chatcmpl-1".into(),
                person: "user_1".into(),
                prompt_tokens: 10,
                completion_tokens: 5,
                cached_tokens: 2,
                cache_write_tokens: 0,
                estimated: true,
            },
            ..render()
        };
        let it = e.to_item();
        assert_eq!(it.str_attr("sk"), Some("LEDGER#chatcmpl-1"));
        assert_eq!(it.str_attr("id"), Some("chatcmpl-1"));
        assert_eq!(LedgerEntry::from_item("org_1", &it), Some(e.clone()));
        assert_eq!(e.summary().id, "chatcmpl-1");
        assert_eq!(e.summary().amount, "0.40");
        let mut other = it.clone();
        other.insert("kind".into(), "usage_day".into());
        assert_eq!(LedgerEntry::from_item("org_1", &other), None);
    }
}
