//! `GET /v1/usage`: what the caller's organization spent, in daily UTC buckets
//! (`domain::billing::usage`). Any member's key sees the whole organization's usage.

use crate::api::operation::{
    query_param, schema, Answer, Declared, In, Kind, Operation, Param, DEFAULT,
};
use crate::app::App;
use crate::domain::accounts::Caller;
use crate::domain::billing::{usage, usage_report::UsagePage};
use crate::domain::error::ApiResult;
use axum::extract::{RawQuery, State};
use axum::{Json, Router};

pub const GET_USAGE: Operation = Operation {
    path: "/v1/usage",
    id: "GetUsage",
    tag: "usage",
    summary: "The organization's spend in daily UTC buckets (any member's key)",
    params: &[
        Param {
            name: "start_time",
            at: In::Query,
            kind: Kind::Int(0, crate::domain::billing::usage_report::MAX_TIME),
            required: true,
            about: "Unix seconds; the report starts at the UTC midnight on or before it.",
        },
        query_param(
            "end_time",
            Kind::Int(0, crate::domain::billing::usage_report::MAX_TIME),
            "Unix seconds (default now, exclusive); the report ends at the UTC midnight on or after it.",
        ),
        query_param(
            "group_by",
            Kind::Str,
            "`model`, `api_key`, `kind` (repeat it, or a comma-separated list).",
        ),
        query_param("limit", Kind::Int(1, crate::domain::billing::usage_report::MAX_DAYS as i64), "Days per page (default 7)."),
        query_param("page", Kind::Str, "A previous answer's `next_page`."),
    ],
    ok: &[(200, Answer::Json(schema::<crate::domain::billing::usage_report::UsagePage>))],
    errors: &[400, 401],
    ..DEFAULT
};

pub fn routes() -> Router<App> {
    Router::new().declared(&GET_USAGE, usage)
}

async fn usage(
    State(app): State<App>,
    caller: Caller,
    RawQuery(query): RawQuery,
) -> ApiResult<Json<UsagePage>> {
    let query = query.unwrap_or_default();
    Ok(Json(
        usage::report(app.context(), &caller.org, &query).await?,
    ))
}
