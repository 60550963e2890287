//! `GET` and `POST /v1/videos/acceptance`: the caller's agreement to the Video Service Terms.
//! `GET` reports it for an API key's person. Agreement is recorded only in the console
//! (`POST /console/api/terms/agree`), so `POST` with an API key answers 403
//! `console_login_required` (the domain refuses any credential but a console session).

use crate::api::operation::{schema, Answer, Declared, Operation, DEFAULT};
use crate::app::App;
use crate::domain::accounts::agreement::*;
use crate::domain::accounts::Caller;
use crate::domain::error::ApiResult;
use axum::extract::State;
use axum::{Json, Router};

pub const RETRIEVE_VIDEO_TERMS_ACCEPTANCE: Operation = Operation {
    path: "/v1/videos/acceptance",
    id: "RetrieveVideoTermsAcceptance",
    tag: "videos",
    summary: "Whether the key's person agreed to the current Video Service Terms",
    ok: &[(
        200,
        Answer::Json(schema::<crate::domain::accounts::agreement::AgreementStatus>),
    )],
    ..DEFAULT
};

pub const ACCEPT_VIDEO_TERMS: Operation = Operation {
    method: "POST",
    path: "/v1/videos/acceptance",
    id: "AcceptVideoTerms",
    tag: "videos",
    summary: "Always refused for API keys: agreement is recorded in the console only",
    ok: &[],
    errors: &[401, 403],
    ..DEFAULT
};

/// The one path this module serves (a Lambda function's unit, `api::PathRoutes`).
pub fn acceptance_route() -> Router<App> {
    Router::new()
        .declared(&RETRIEVE_VIDEO_TERMS_ACCEPTANCE, get_status)
        .declared(&ACCEPT_VIDEO_TERMS, accept)
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
