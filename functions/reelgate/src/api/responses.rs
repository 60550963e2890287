//! The Responses API's routes (`/v1/responses`): the create handler hands the body to the use
//! case (`domain::responses::create`) and writes its answer, the Response object or its events
//! as server-sent events; the stored response's reads and delete. Documented in
//! docs/responses.md.

use crate::api::extract::{ApiJson, ApiQuery};
use crate::app::App;
use crate::domain::accounts::Caller;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::responses::create::{CreateAnswer, Reply};
use crate::domain::responses::persist;
use axum::extract::{Path, State};
use axum::response::sse::{Event as SseEvent, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures::StreamExt;
use serde::Deserialize;
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

fn response_not_found(id: &str) -> ApiError {
    ApiError::not_found(
        "response_not_found",
        format!("No response found with id '{id}'."),
    )
    .with_param("response_id")
}

async fn create(
    State(app): State<App>,
    caller: Caller,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Response> {
    let org = caller.org.clone();
    let created = crate::domain::responses::create::create(app.responses_ports(), caller, body);
    let (reply, status) = match crate::domain::fair_slots::as_tenant(&org, created).await? {
        CreateAnswer::Limited(limited) => return Ok(crate::api::rate_limits::refused(limited)),
        CreateAnswer::Admitted { reply, status } => (reply, status),
    };
    let mut response = match reply {
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
    };
    crate::api::rate_limits::apply(&status, response.headers_mut());
    Ok(response)
}

async fn retrieve(
    State(app): State<App>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    match persist::load(app.context(), &caller, &id).await? {
        Some(stored) => Ok(Json(stored.response)),
        None => Err(response_not_found(&id)),
    }
}

async fn remove(
    State(app): State<App>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<crate::api::envelope::Deleted>> {
    if !persist::delete(app.context(), &caller, &id).await? {
        return Err(response_not_found(&id));
    }
    Ok(Json(crate::api::envelope::Deleted::new(id, "response")))
}

#[derive(Deserialize)]
struct ItemsParams {
    #[serde(flatten)]
    page: crate::domain::params::ListQuery,
    before: Option<String>,
    /// Accepted for OpenAI compatibility; items are always returned whole.
    #[allow(dead_code)]
    include: Option<Vec<String>>,
}

/// The input items of a stored response (its own request's, not the history's), newest first
/// unless `order=asc`, paged with `after`/`before` item ids.
async fn input_items(
    State(app): State<App>,
    caller: Caller,
    Path(id): Path<String>,
    ApiQuery(params): ApiQuery<ItemsParams>,
) -> ApiResult<Json<crate::api::envelope::List<Value>>> {
    let limit = params
        .page
        .limit(crate::domain::responses::MAX_ITEMS_PAGE)?;
    let mut items = match persist::load(app.context(), &caller, &id).await? {
        Some(stored) => stored.input_items,
        None => return Err(response_not_found(&id)),
    };
    if params.page.descending()? {
        items.reverse();
    }
    let position = |cursor: &str, param: &str| {
        items
            .iter()
            .position(|i| i["id"].as_str() == Some(cursor))
            .ok_or_else(|| {
                ApiError::invalid(
                    param,
                    format!("{param} must be an item id of this response."),
                )
            })
    };
    let start = match &params.page.after {
        Some(after) => position(after, "after")? + 1,
        None => 0,
    };
    let end = match &params.before {
        Some(before) => position(before, "before")?,
        None => items.len(),
    };
    let window: Vec<Value> = items
        .get(start..end.max(start))
        .unwrap_or_default()
        .iter()
        .take(limit)
        .cloned()
        .collect();
    let has_more = start + window.len() < end;
    Ok(Json(crate::api::envelope::List::new(
        window,
        |i| i["id"].as_str().unwrap_or_default().to_owned(),
        has_more,
    )))
}
