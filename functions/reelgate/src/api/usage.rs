//! `GET /v1/usage`: what the caller's organization spent, in daily UTC buckets
//! (`domain::billing::usage`). Any member's key sees the whole organization's usage.

use crate::app::App;
use crate::domain::accounts::Caller;
use crate::domain::billing::{usage, usage_report::UsagePage};
use crate::domain::error::ApiResult;
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
) -> ApiResult<Json<UsagePage>> {
    let query = query.unwrap_or_default();
    Ok(Json(
        usage::report(app.context(), &caller.org, &query).await?,
    ))
}
