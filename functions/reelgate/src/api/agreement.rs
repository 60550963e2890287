//! `GET` and `POST /v1/videos/acceptance`: the caller's agreement to the Video Service Terms.
//! `GET` reports it for an API key's person. Agreement is recorded only in the console
//! (`POST /console/api/terms/agree`), so `POST` with an API key answers 403
//! `console_login_required` (the domain refuses any credential but a console session).

use crate::app::App;
use crate::domain::accounts::agreement::*;
use crate::domain::accounts::Caller;
use crate::domain::error::ApiResult;
use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};

/// The one path this module serves (a Lambda function's unit, `api::PathRoutes`).
pub fn acceptance_route() -> Router<App> {
    Router::new().route("/v1/videos/acceptance", get(get_status).post(accept))
}

async fn get_status(State(app): State<App>, caller: Caller) -> ApiResult<Json<AgreementStatus>> {
    Ok(Json(
        status(app.context(), &caller.org, &caller.person).await?,
    ))
}

/// Refused for API keys (the only credential `/v1` takes): agreement is recorded in the console.
async fn accept(State(app): State<App>, caller: Caller) -> ApiResult<Json<AgreementStatus>> {
    Ok(Json(
        crate::domain::accounts::agreement::accept(app.context(), &caller).await?,
    ))
}
