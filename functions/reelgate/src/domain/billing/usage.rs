//! The usage the API and the console answer, both over [`usage_report::report`]:
//! `GET /v1/usage`'s query rules, and the console's view of an organization's money (balance,
//! recent charges, the last 30 UTC days). Any member sees the whole organization's usage.

use crate::domain::accounts::Organization;
use crate::domain::billing::token_charges;
use crate::domain::billing::usage_report::{
    self, GroupBy, ReportRequest, UsageBucket, UsagePage, UsageResult, DAY,
};
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::Context;

/// `GET /v1/usage`: the organization's report for the raw query string (see [`parse`]).
pub async fn report(cx: Context<'_>, org: &str, query: &str) -> ApiResult<UsagePage> {
    let req = parse(query, crate::ports::store::now_secs())?;
    usage_report::report(cx.store, org, &req).await
}

/// What the console's usage page shows.
pub struct Overview {
    /// Its balance, reservations and renders in flight.
    pub org: Organization,
    /// The newest charges (renders and token usage), newest first.
    pub recent_charges: Vec<super::ledger::ChargeSummary>,
    /// The last 30 UTC days summed by model, key and kind.
    pub last_30_days: Vec<UsageResult>,
    /// The same days one by one (the chart).
    pub days: Vec<UsageBucket>,
}

/// How many charges the console's usage page lists.
const RECENT_CHARGES: usize = 20;

/// The console's usage page: the organization's money and its last 30 UTC days by model, key
/// and kind (the report `GET /v1/usage` answers, over a fixed window).
pub async fn overview(cx: Context<'_>, org: &str) -> ApiResult<Overview> {
    let record = cx.accounts().org(org).await?;
    let recent_charges = token_charges::recent_charges(cx, org, RECENT_CHARGES).await?;
    let now = crate::ports::store::now_secs();
    let month = usage_report::report(
        cx.store,
        org,
        &ReportRequest {
            start: now - 29 * DAY,
            end: now + 1,
            group_by: vec![GroupBy::Model, GroupBy::ApiKey, GroupBy::Kind],
            limit: 30,
            page: None,
        },
    )
    .await?;
    Ok(Overview {
        org: record,
        recent_charges,
        last_30_days: usage_report::sum_days(&month),
        days: month.data,
    })
}

/// Reads the query: `start_time` (required), `end_time` (default now), `group_by` (repeated,
/// `group_by[]`, or comma-separated), `limit` (days per page), `page`.
pub fn parse(query: &str, now: i64) -> ApiResult<ReportRequest> {
    let mut start = None;
    let mut end = None;
    let mut group_by = Vec::new();
    let mut limit = usage_report::DEFAULT_DAYS;
    let mut page = None;
    let secs = |name: &str, v: &str| {
        v.parse::<i64>()
            .map_err(|_| ApiError::invalid(name, format!("{name} must be a Unix time in seconds.")))
    };
    for (name, value) in url::form_urlencoded::parse(query.as_bytes()) {
        match name.as_ref() {
            "start_time" => start = Some(secs("start_time", &value)?),
            "end_time" => end = Some(secs("end_time", &value)?),
            "group_by" | "group_by[]" => {
                for g in value.split(',').map(str::trim).filter(|g| !g.is_empty()) {
                    let g = GroupBy::parse(g).ok_or_else(|| {
                        ApiError::invalid(
                            "group_by",
                            "group_by must be model, api_key or kind (repeat it for several).",
                        )
                    })?;
                    if !group_by.contains(&g) {
                        group_by.push(g);
                    }
                }
            }
            "limit" => {
                limit = value
                    .parse::<usize>()
                    .ok()
                    .filter(|n| (1..=usage_report::MAX_DAYS).contains(n))
                    .ok_or_else(|| {
                        ApiError::invalid(
                            "limit",
                            format!(
                                "limit must be an integer from 1 to {} (days).",
                                usage_report::MAX_DAYS
                            ),
                        )
                    })?
            }
            "page" => page = Some(value.into_owned()),
            other => {
                return Err(ApiError::invalid(
                    other,
                    format!("Unknown query parameter '{other}'."),
                ))
            }
        }
    }
    let start = start.ok_or_else(|| ApiError::invalid("start_time", "start_time is required."))?;
    if !(0..=usage_report::MAX_TIME).contains(&start) {
        return Err(ApiError::invalid(
            "start_time",
            "start_time must be a Unix time in seconds (at most year 9999).",
        ));
    }
    let req = ReportRequest {
        start,
        end: end.unwrap_or(now.max(start + 1)),
        group_by,
        limit,
        page,
    };
    req.validate()?;
    Ok(req)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_by_may_repeat_or_be_a_list() {
        let r = parse("start_time=10&group_by=model&group_by[]=api_key,kind", 100).expect("ok");
        assert_eq!(
            r.group_by,
            vec![GroupBy::Model, GroupBy::ApiKey, GroupBy::Kind]
        );
        assert_eq!(r.end, 100);
        assert_eq!(
            parse("end_time=5", 100)
                .expect_err("no start")
                .param
                .as_deref(),
            Some("start_time")
        );
        assert_eq!(
            parse("start_time=10&end_time=10", 100)
                .expect_err("empty")
                .param
                .as_deref(),
            Some("end_time")
        );
        assert_eq!(
            parse("start_time=10&group_by=person", 100)
                .expect_err("bad")
                .param
                .as_deref(),
            Some("group_by")
        );
        assert_eq!(
            parse("start_time=10&limit=32", 100)
                .expect_err("bad")
                .param
                .as_deref(),
            Some("limit")
        );
        assert_eq!(
            parse("start_time=x", 100)
                .expect_err("bad")
                .param
                .as_deref(),
            Some("start_time")
        );
        // Past year 9999 (and near i64::MAX, where day arithmetic would overflow).
        for q in [
            "start_time=9223372036854775807",
            "start_time=-1",
            "start_time=1&end_time=9223372036854775807",
        ] {
            assert!(parse(q, 100).is_err(), "{q}");
        }
    }
}
