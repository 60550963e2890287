//! What an organization spent, by day: the customer's usage report (`GET /v1/usage`, `reelgate
//! admin usage`).
//!
//! Every charge — a completed render (`billing::charge`) or a text completion's tokens
//! (`usage::charge`) — adds, in the same transaction that writes its ledger item, its quantities
//! and amounts to one **daily rollup** item of the organization:
//! `ORG#<org>` / `USAGE#<YYYY-MM-DD>#<type>#<model>#<key>` (UTC day of the charge; `type` is
//! `video`, `chat.completion` or `response`; `key` the API key id, `console` for the console). The
//! ledger item's "must not exist" condition makes the transaction happen once per charge, so the
//! rollup counts each charge exactly once, and its amounts are the ledger amounts split by kind.
//!
//! A report reads the rollups of its days with one sort-key range of the organization's own
//! partition (`USAGE#<first day>` … `USAGE#<last day>`), never a scan: its cost grows with the
//! number of days × models × keys, not with the number of requests.

use crate::domain::dates::day_label;
use crate::domain::error::{ApiError, ApiResult};
use crate::ports::store::{ItemExt, ItemStore, Query, TransactOp, Update};
use rust_decimal::Decimal;
use serde::Serialize;
use std::collections::BTreeMap;
use utoipa::ToSchema;

pub const DAY: i64 = 86_400;

/// Days of buckets a page holds by default, and at most.
pub const DEFAULT_DAYS: usize = 7;
pub const MAX_DAYS: usize = 31;

/// The last second of year 9999: times past it are refused (and day arithmetic cannot overflow).
pub const MAX_TIME: i64 = 253_402_300_799;

/// Amounts of one charge by kind, in the billing currency; they add up to the charge.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Amounts {
    pub input: Decimal,
    pub cached_input: Decimal,
    pub cache_write: Decimal,
    pub output: Decimal,
    pub video: Decimal,
}

impl Amounts {
    pub fn total(&self) -> Decimal {
        self.input + self.cached_input + self.cache_write + self.output + self.video
    }
}

/// One charge as the report counts it.
#[derive(Clone, Debug)]
pub struct Line<'a> {
    /// `video`, `chat.completion` or `response`.
    pub charge_type: &'a str,
    pub model: &'a str,
    /// The API key id (`console` for the console).
    pub key: &'a str,
    pub currency: &'a str,
    /// Input tokens priced at the input price (cache reads and writes excluded).
    pub input_tokens: u64,
    pub cached_input_tokens: u64,
    pub cache_write_input_tokens: u64,
    pub output_tokens: u64,
    pub video_seconds: u64,
    pub amounts: Amounts,
}

/// Unix seconds from a Unix time in seconds or a UTC date `YYYY-MM-DD` (its midnight).
pub fn parse_time(s: &str) -> Option<i64> {
    if let Ok(secs) = s.parse::<i64>() {
        return Some(secs);
    }
    let mut parts = s.splitn(3, '-');
    let y: i64 = parts.next()?.parse().ok()?;
    let m: i64 = parts.next()?.parse().ok()?;
    let d: i64 = parts.next()?.parse().ok()?;
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    // Days-from-civil (Howard Hinnant).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let secs = (era * 146_097 + doe - 719_468) * DAY;
    // 2026-02-31 and the like do not round-trip.
    (day_label(secs) == s).then_some(secs)
}

fn day_start(secs: i64) -> i64 {
    secs.div_euclid(DAY) * DAY
}

/// The update adding one charge at `at` (Unix seconds) to its day's rollup; unconditional, as it
/// rides in the transaction whose ledger put makes the charge happen once.
pub fn rollup_op(org: &str, at: i64, line: &Line<'_>) -> TransactOp {
    let n = |v: u64| Decimal::from(v);
    TransactOp::Update {
        key: crate::domain::table_keys::usage_rollup(
            org,
            &day_label(at),
            line.charge_type,
            line.model,
            line.key,
        ),
        update: Update::new()
            .set("kind", "usage_day")
            .set("day", day_start(at))
            .set("type", line.charge_type)
            .set("model", line.model)
            .set("key", line.key)
            .set("currency", line.currency)
            .add("requests", Decimal::ONE)
            .add("input_tokens", n(line.input_tokens))
            .add("cached_input_tokens", n(line.cached_input_tokens))
            .add("cache_write_input_tokens", n(line.cache_write_input_tokens))
            .add("output_tokens", n(line.output_tokens))
            .add("video_seconds", n(line.video_seconds))
            .add("amount_input", line.amounts.input)
            .add("amount_cached_input", line.amounts.cached_input)
            .add("amount_cache_write", line.amounts.cache_write)
            .add("amount_output", line.amounts.output)
            .add("amount_video", line.amounts.video),
        condition: None,
    }
}

/// A dimension results can be split by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum GroupBy {
    Model,
    ApiKey,
    Kind,
}

impl GroupBy {
    pub fn parse(s: &str) -> Option<GroupBy> {
        match s {
            "model" => Some(GroupBy::Model),
            "api_key" | "api_key_id" => Some(GroupBy::ApiKey),
            "kind" => Some(GroupBy::Kind),
            _ => None,
        }
    }
}

/// What a report covers. `start`/`end` are Unix seconds; the report covers the whole UTC days
/// they fall in (`end` exclusive).
#[derive(Clone, Debug)]
pub struct ReportRequest {
    pub start: i64,
    pub end: i64,
    pub group_by: Vec<GroupBy>,
    /// Days per page.
    pub limit: usize,
    /// The first day of this page (from a previous page's `next_page`).
    pub page: Option<String>,
}

impl ReportRequest {
    /// Checks the request's values, naming the parameter at fault.
    pub fn validate(&self) -> ApiResult<()> {
        if !(0..=MAX_TIME).contains(&self.start) {
            return Err(ApiError::invalid(
                "start_time",
                "start_time must be a Unix time in seconds (at most year 9999).",
            ));
        }
        if self.end > MAX_TIME {
            return Err(ApiError::invalid(
                "end_time",
                "end_time must be a Unix time in seconds (at most year 9999).",
            ));
        }
        if self.end <= self.start {
            return Err(ApiError::invalid(
                "end_time",
                "end_time must be after start_time.",
            ));
        }
        if !(1..=MAX_DAYS).contains(&self.limit) {
            return Err(ApiError::invalid(
                "limit",
                format!("limit must be an integer from 1 to {MAX_DAYS} (days)."),
            ));
        }
        Ok(())
    }

    fn first_day(&self) -> ApiResult<i64> {
        let first = day_start(self.start);
        match self.page.as_deref() {
            None | Some("") => Ok(first),
            Some(raw) => {
                let bad = || {
                    ApiError::invalid(
                        "page",
                        "page must be the next_page value of a previous answer for the same range.",
                    )
                };
                let day = raw
                    .strip_prefix("day_")
                    .and_then(|d| d.parse::<i64>().ok())
                    .ok_or_else(bad)?;
                if day % DAY != 0 || day < first || day >= self.end {
                    return Err(bad());
                }
                Ok(day)
            }
        }
    }
}

/// Sums of one result row.
#[derive(Clone, Debug, Default)]
struct Totals {
    requests: Decimal,
    input_tokens: Decimal,
    cached_input_tokens: Decimal,
    cache_write_input_tokens: Decimal,
    output_tokens: Decimal,
    video_seconds: Decimal,
    amount: Decimal,
}

/// (day, model, key, kind, currency): `None` where the dimension is not grouped by.
type RowKey = (
    i64,
    Option<String>,
    Option<String>,
    Option<&'static str>,
    String,
);

/// Rollup items the store returns per read.
const READ_PAGE: usize = 1000;

/// The organization's usage from the request's first page day, as a page of daily buckets.
pub async fn report(store: &dyn ItemStore, org: &str, req: &ReportRequest) -> ApiResult<UsagePage> {
    req.validate()?;
    let first = req.first_day()?;
    let range_end = day_start(req.end - 1) + DAY;
    let stop = (first + DAY * req.limit as i64).min(range_end);
    let stop_sk = crate::domain::table_keys::usage_day_sk(&day_label(stop));
    let mut rows: BTreeMap<RowKey, Totals> = BTreeMap::new();
    // Everything of the first day sorts after `USAGE#<first day>`, everything of earlier days
    // before it: one range of the organization's own partition.
    let mut after = Some(crate::domain::table_keys::usage_day_sk(&day_label(first)));
    'read: loop {
        let page = store
            .query(
                Query::partition(crate::domain::table_keys::org_pk(org))
                    .prefix(crate::domain::table_keys::USAGE_PREFIX)
                    .limit(READ_PAGE)
                    .after(after.take()),
            )
            .await?;
        for it in &page.items {
            let sk = it.str_attr(crate::ports::store::SK).unwrap_or_default();
            if sk >= stop_sk.as_str() {
                break 'read;
            }
            if it.str_attr("kind") != Some("usage_day") {
                continue;
            }
            add_rollup(&mut rows, it, &req.group_by);
        }
        match page.last_sk {
            Some(sk) => after = Some(sk),
            None => break,
        }
    }
    let mut data = Vec::new();
    let mut day = first;
    while day < stop {
        let results = rows
            .range((day, None, None, None, String::new())..)
            .take_while(|(k, _)| k.0 == day)
            .map(|(k, t)| UsageResult::of(k, t))
            .collect();
        data.push(UsageBucket {
            object: "bucket",
            start_time: day,
            end_time: day + DAY,
            results,
        });
        day += DAY;
    }
    let has_more = stop < range_end;
    Ok(UsagePage {
        object: "page",
        data,
        has_more,
        next_page: has_more.then(|| format!("day_{stop}")),
    })
}

fn add_rollup(rows: &mut BTreeMap<RowKey, Totals>, it: &crate::ports::store::Item, by: &[GroupBy]) {
    let num = |name: &str| it.decimal_attr(name).unwrap_or_default();
    let day = it.i64_attr("day").unwrap_or_default();
    let model = by
        .contains(&GroupBy::Model)
        .then(|| it.str_attr("model").unwrap_or_default().to_owned());
    let key = by
        .contains(&GroupBy::ApiKey)
        .then(|| it.str_attr("key").unwrap_or_default().to_owned());
    let currency = it.str_attr("currency").unwrap_or_default().to_owned();
    let requests = num("requests");
    // Per kind: (name, quantity attribute, amount attribute).
    const KINDS: [(&str, &str, &str); 5] = [
        ("input_tokens", "input_tokens", "amount_input"),
        (
            "cached_input_tokens",
            "cached_input_tokens",
            "amount_cached_input",
        ),
        (
            "cache_write_input_tokens",
            "cache_write_input_tokens",
            "amount_cache_write",
        ),
        ("output_tokens", "output_tokens", "amount_output"),
        ("video_seconds", "video_seconds", "amount_video"),
    ];
    if by.contains(&GroupBy::Kind) {
        for (kind, quantity, amount) in KINDS {
            let (q, a) = (num(quantity), num(amount));
            if q.is_zero() && a.is_zero() {
                continue;
            }
            let t = rows
                .entry((
                    day,
                    model.clone(),
                    key.clone(),
                    Some(kind),
                    currency.clone(),
                ))
                .or_default();
            t.requests += requests;
            match kind {
                "input_tokens" => t.input_tokens += q,
                "cached_input_tokens" => t.cached_input_tokens += q,
                "cache_write_input_tokens" => t.cache_write_input_tokens += q,
                "output_tokens" => t.output_tokens += q,
                _ => t.video_seconds += q,
            }
            t.amount += a;
        }
    } else {
        let t = rows.entry((day, model, key, None, currency)).or_default();
        t.requests += requests;
        t.input_tokens += num("input_tokens");
        t.cached_input_tokens += num("cached_input_tokens");
        t.cache_write_input_tokens += num("cache_write_input_tokens");
        t.output_tokens += num("output_tokens");
        t.video_seconds += num("video_seconds");
        t.amount += KINDS.iter().map(|(_, _, a)| num(a)).sum::<Decimal>();
    }
}

/// `GET /v1/usage`: a page of daily buckets.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct UsagePage {
    #[schema(value_type = String, pattern = "^page$")]
    pub object: &'static str,
    pub data: Vec<UsageBucket>,
    pub has_more: bool,
    /// Pass as `page` for the next days; null on the last page.
    pub next_page: Option<String>,
}

/// One UTC day.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct UsageBucket {
    #[schema(value_type = String, pattern = "^bucket$")]
    pub object: &'static str,
    /// The day's UTC midnight (Unix seconds).
    pub start_time: i64,
    /// The next day's UTC midnight.
    pub end_time: i64,
    pub results: Vec<UsageResult>,
}

/// The usage of one group (one row per currency when nothing is grouped by).
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct UsageResult {
    #[schema(value_type = String, pattern = "^organization\\.usage\\.result$")]
    pub object: &'static str,
    /// The model, when grouped by `model`.
    pub model: Option<String>,
    /// The API key id (`console` for the console), when grouped by `api_key`.
    pub api_key_id: Option<String>,
    /// `input_tokens`, `cached_input_tokens`, `cache_write_input_tokens`, `output_tokens` or
    /// `video_seconds`, when grouped
    /// by `kind`.
    #[schema(value_type = Option<String>)]
    pub kind: Option<&'static str>,
    /// The billing currency.
    pub currency: String,
    /// What was charged, an exact decimal string.
    #[serde(serialize_with = "normalized_decimal")]
    #[schema(value_type = String, pattern = "^-?[0-9]+(\\.[0-9]+)?$")]
    pub amount: Decimal,
    /// Charges counted (requests and renders).
    pub requests: i64,
    /// Input tokens at the input price (cache reads and writes not included).
    pub input_tokens: i64,
    /// Input tokens the upstream read from its prompt cache.
    pub cached_input_tokens: i64,
    /// Input tokens the upstream wrote to its prompt cache.
    pub cache_write_input_tokens: i64,
    pub output_tokens: i64,
    /// Seconds of completed renders.
    pub video_seconds: i64,
}

fn normalized_decimal<S: serde::Serializer>(d: &Decimal, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&d.normalize())
}

impl UsageResult {
    fn of(k: &RowKey, t: &Totals) -> UsageResult {
        let int = |d: Decimal| i64::try_from(d).unwrap_or(i64::MAX);
        UsageResult {
            object: "organization.usage.result",
            model: k.1.clone(),
            api_key_id: k.2.clone(),
            kind: k.3,
            currency: k.4.clone(),
            amount: t.amount,
            requests: int(t.requests),
            input_tokens: int(t.input_tokens),
            cached_input_tokens: int(t.cached_input_tokens),
            cache_write_input_tokens: int(t.cache_write_input_tokens),
            output_tokens: int(t.output_tokens),
            video_seconds: int(t.video_seconds),
        }
    }

    fn add(&mut self, other: &UsageResult) {
        self.amount += other.amount;
        self.requests = self.requests.saturating_add(other.requests);
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.cached_input_tokens = self
            .cached_input_tokens
            .saturating_add(other.cached_input_tokens);
        self.cache_write_input_tokens = self
            .cache_write_input_tokens
            .saturating_add(other.cache_write_input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.video_seconds = self.video_seconds.saturating_add(other.video_seconds);
    }
}

/// A report's results summed over its days, one per group (the console's breakdown).
pub fn sum_days(report: &UsagePage) -> Vec<UsageResult> {
    // A result's group: model, key, kind and currency (a row key without its day).
    type Group = (Option<String>, Option<String>, Option<&'static str>, String);
    let mut sums: BTreeMap<Group, UsageResult> = BTreeMap::new();
    for r in report.data.iter().flat_map(|bucket| &bucket.results) {
        let group = (
            r.model.clone(),
            r.api_key_id.clone(),
            r.kind,
            r.currency.clone(),
        );
        match sums.entry(group) {
            std::collections::btree_map::Entry::Occupied(mut sum) => sum.get_mut().add(r),
            std::collections::btree_map::Entry::Vacant(slot) => {
                slot.insert(r.clone());
            }
        }
    }
    sums.into_values().collect()
}

/// A plain-text sum over a report's buckets, for the admin command's footer.
pub fn total(report: &UsagePage) -> BTreeMap<String, Decimal> {
    let mut sums = BTreeMap::new();
    for r in report.data.iter().flat_map(|bucket| &bucket.results) {
        *sums.entry(r.currency.clone()).or_default() += r.amount;
    }
    sums
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_are_utc_calendar_days() {
        assert_eq!(day_label(0), "1970-01-01");
        assert_eq!(day_label(1_796_083_199), "2026-11-30");
        assert_eq!(day_label(1_796_083_200), "2026-12-01");
        assert_eq!(day_label(951_782_400), "2000-02-29");
        assert_eq!(day_label(1_709_251_199), "2024-02-29");
        assert_eq!(parse_time("2026-12-01"), Some(1_796_083_200));
        assert_eq!(parse_time("2000-02-29"), Some(951_782_400));
        assert_eq!(parse_time("1796083200"), Some(1_796_083_200));
        assert_eq!(parse_time("2026-02-31"), None);
        assert_eq!(parse_time("yesterday"), None);
    }

    #[test]
    fn a_page_token_must_be_a_day_inside_the_range() {
        let req = |page: &str| ReportRequest {
            start: 1_795_000_000,
            end: 1_795_000_000 + 10 * DAY,
            group_by: vec![],
            limit: 7,
            page: Some(page.into()),
        };
        assert!(req("day_1795046400").first_day().is_ok());
        assert!(req("day_1795046401").first_day().is_err()); // not a day's start
        assert!(req("day_1794873600").first_day().is_err()); // before the range
        assert!(req("1795046400").first_day().is_err());
    }
}
