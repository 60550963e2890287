//! `POST /v1/chat/completions`: the request is validated (every failure names its `param`) and
//! answered by the chat use case (`domain::chat::complete`) in OpenAI's dialect, whole or
//! streamed (`api::chat_answers`).

use crate::api::extract::ChatBody;
use crate::api::operation::{schema, Answer, Body, Declared, Operation, DEFAULT};
use crate::app::App;
use crate::domain::accounts::Caller;
use crate::domain::error::ApiResult;
use axum::extract::State;
use axum::response::Response;
use axum::Router;

pub const CREATE_CHAT_COMPLETION: Operation = Operation {
    method: "POST",
    path: "/v1/chat/completions",
    id: "CreateChatCompletion",
    tag: "chat",
    summary: "A chat completion (server-sent events with `stream: true`)",
    body: Body::Json(schema::<crate::ports::upstream::request::ChatCompletionRequest>),
    ok: &[(
        200,
        Answer::JsonOrStream(schema::<crate::domain::chat::completion::ChatCompletion>),
    )],
    errors: &[400, 401, 402, 404, 413, 429, 502, 503, 504],
    ..DEFAULT
};

pub fn routes() -> Router<App> {
    completions_route()
}

// One function per path (the unit a Lambda function serves, `api::PathRoutes`).

pub fn completions_route() -> Router<App> {
    Router::new().declared(&CREATE_CHAT_COMPLETION, completions)
}

async fn completions(
    State(app): State<App>,
    caller: Caller,
    ChatBody(body): ChatBody,
) -> ApiResult<Response> {
    let on_leave = crate::domain::chat::stream::OnLeave::ReadForUsage;
    crate::api::chat_answers::complete(&app, caller, body, on_leave).await
}
