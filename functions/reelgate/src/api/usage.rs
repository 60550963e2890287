//! `GET /v1/usage`: what the caller's organization spent, in daily UTC buckets
//! (`domain::billing::usage_report`). Any member's key sees the whole organization's usage.

use crate::app::App;
use crate::domain::accounts::Caller;
use crate::domain::billing::usage_report::{self, GroupBy, ReportRequest};
use crate::domain::error::{ApiError, ApiResult};
use axum::extract::{RawQuery, State};
use axum::routing::get;
use axum::{Json, Router};

pub fn routes() -> Router<App> {
    Router::new().route("/v1/usage", get(usage))
}

async fn usage(
    State(app): State<App>,
    caller: Caller,
    RawQuery(query): RawQuery,
) -> ApiResult<Json<usage_report::UsagePage>> {
    let req = parse(
        query.as_deref().unwrap_or_default(),
        crate::ports::store::now_secs(),
    )?;
    let report = usage_report::report(app.store.as_ref(), &caller.org, &req).await?;
    Ok(Json(report))
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
