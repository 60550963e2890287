//! `POST /v1/chat/completions`: the request is validated (every failure names its `param`) and
//! answered by the chat use case (`domain::chat::complete`) in OpenAI's dialect, whole or
//! streamed (`api::chat_answers`).

use crate::api::extract::ChatBody;
use crate::app::App;
use crate::domain::accounts::Caller;
use crate::domain::error::ApiResult;
use axum::extract::State;
use axum::response::Response;
use axum::routing::post;
use axum::Router;

pub fn routes() -> Router<App> {
    completions_route()
}

// One function per path (the unit a Lambda function serves, `api::PathRoutes`).

pub fn completions_route() -> Router<App> {
    Router::new().route("/v1/chat/completions", post(completions))
}

async fn completions(
    State(app): State<App>,
    caller: Caller,
    ChatBody(body): ChatBody,
) -> ApiResult<Response> {
    let on_leave = crate::domain::chat::stream::OnLeave::ReadForUsage;
    crate::api::chat_answers::complete(&app, caller, body, on_leave).await
}
