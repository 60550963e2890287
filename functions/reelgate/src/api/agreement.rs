//! `GET` and `POST /v1/videos/acceptance`: the caller's agreement to the Video Service Terms;
//! only a console session may record it.

use crate::api::extract::ConsoleCaller;
use crate::app::App;
use crate::domain::accounts::Caller;
use crate::domain::agreement::*;
use crate::domain::error::ApiResult;
use axum::extract::State;
use axum::Json;

pub async fn get_status(
    State(app): State<App>,
    caller: Caller,
) -> ApiResult<Json<AgreementStatus>> {
    Ok(Json(
        status(app.context(), &caller.org, &caller.person).await?,
    ))
}

/// Records agreement to the current version. Repeating it keeps the first acceptance time.
pub async fn accept(
    State(app): State<App>,
    ConsoleCaller(caller): ConsoleCaller,
) -> ApiResult<Json<AgreementStatus>> {
    Ok(Json(
        crate::domain::agreement::accept(app.context(), &caller).await?,
    ))
}
