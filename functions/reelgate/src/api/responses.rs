//! The Responses API's routes (`/v1/responses`): the create handler hands the body to the use
//! case (`domain::responses::create`) and writes its answer, the Response object or its events
//! as server-sent events; the stored response's reads and delete. Documented in
//! docs/responses.md.

use crate::api::extract::{ApiBody, ApiQuery};
use crate::app::App;
use crate::domain::accounts::Caller;
use crate::domain::error::ApiResult;
use crate::domain::responses::create::{CreateAnswer, Reply};
use crate::domain::responses::request::ResponseCreateBody;
use crate::domain::responses::{input_items, persist};
use axum::extract::{Path, State};
use axum::response::sse::{Event as SseEvent, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures::StreamExt;
use serde_json::Value;

pub fn routes() -> Router<App> {
    Router::new()
        .merge(collection_route())
        .merge(item_route())
        .merge(input_items_route())
}

// One function per path (the unit a Lambda function serves, `api::PathRoutes`).

pub fn collection_route() -> Router<App> {
    Router::new().route("/v1/responses", post(create))
}

pub fn item_route() -> Router<App> {
    Router::new().route("/v1/responses/{response_id}", get(retrieve).delete(remove))
}

pub fn input_items_route() -> Router<App> {
    Router::new().route("/v1/responses/{response_id}/input_items", get(input_items))
}

async fn create(
    State(app): State<App>,
    caller: Caller,
    ApiBody(body): ApiBody<ResponseCreateBody>,
) -> ApiResult<Response> {
    let org = caller.org.clone();
    let created = crate::domain::responses::create::create(app.responses_ports(), caller, body);
    match crate::domain::fair_slots::as_tenant(&org, created).await? {
        CreateAnswer::Limited(limited) => Ok(crate::api::rate_limits::refused(limited)),
        CreateAnswer::Admitted { reply, status } => {
            let mut response = reply_response(reply);
            crate::api::rate_limits::apply(&status, response.headers_mut());
            Ok(response)
        }
    }
}

/// An admitted create's reply: the Response object with its cost header, or its events as
/// server-sent events ending in `[DONE]`.
fn reply_response(reply: ApiResult<Reply>) -> Response {
    match reply {
        Ok(Reply::Whole(object)) => {
            let cost = object
                .pointer("/usage/cost")
                .and_then(Value::as_str)
                .and_then(|c| c.parse().ok());
            let mut response = Json(object).into_response();
            crate::api::chat_answers::cost_header(cost, response.headers_mut());
            response
        }
        Ok(Reply::Events(mut rx)) => {
            let events =
                futures::stream::poll_fn(move |cx| rx.poll_recv(cx)).map(|(kind, body)| {
                    Ok::<_, std::convert::Infallible>(
                        SseEvent::default().event(kind).data(body.to_string()),
                    )
                });
            let done = futures::stream::once(async { Ok(SseEvent::default().data("[DONE]")) });
            // Comment lines every 15 s keep proxies and load balancers from closing a stream
            // while the model thinks; SSE clients ignore them.
            Sse::new(events.chain(done))
                .keep_alive(
                    axum::response::sse::KeepAlive::new()
                        .interval(std::time::Duration::from_secs(15)),
                )
                .into_response()
        }
        Err(e) => e.into_response(),
    }
}

async fn retrieve(
    State(app): State<App>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    match persist::load(app.context(), &caller, &id).await? {
        Some(stored) => Ok(Json(stored.response)),
        None => Err(persist::not_found(&id)),
    }
}

async fn remove(
    State(app): State<App>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<crate::api::envelope::Deleted>> {
    if !persist::delete(app.context(), &caller, &id).await? {
        return Err(persist::not_found(&id));
    }
    Ok(Json(crate::api::envelope::Deleted::new(id, "response")))
}

/// The input items of a stored response, a page at a time.
async fn input_items(
    State(app): State<App>,
    caller: Caller,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<input_items::ItemsQuery>,
) -> ApiResult<Json<crate::api::envelope::List<Value>>> {
    let page = input_items::page(app.context(), &caller, &id, &query).await?;
    Ok(Json(crate::api::envelope::List::page(page, |i| {
        i["id"].as_str().unwrap_or_default().to_owned()
    })))
}
