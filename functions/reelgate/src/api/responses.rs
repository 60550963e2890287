//! The Responses API's routes (`/v1/responses`): the create handler hands the body to the use
//! case (`domain::responses::create`) and writes its answer, the Response object or its events
//! as server-sent events; the stored response's reads and delete. Documented in
//! docs/responses.md.

use crate::api::extract::{ApiBody, ApiQuery};
use crate::api::operation::{
    link, list_of, query_param, schema, Answer, Body, Declared, Kind, Link, Operation, DEFAULT,
    ORDER, RESPONSE_ID,
};
use crate::app::App;
use crate::domain::accounts::Caller;
use crate::domain::error::ApiResult;
use crate::domain::responses::create::{CreateAnswer, Reply};
use crate::domain::responses::items::ConversationItem;
use crate::domain::responses::request::ResponseCreateBody;
use crate::domain::responses::{input_items, persist};
use axum::extract::{Path, State};
use axum::response::sse::{Event as SseEvent, Sse};
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use futures::StreamExt;
use serde_json::Value;

const RESPONSE_LINKS: &[Link] = &[
    link("GetResponse", &RETRIEVE_RESPONSE, &RESPONSE_ID),
    link(
        "GetResponseInputItems",
        &LIST_RESPONSE_INPUT_ITEMS,
        &RESPONSE_ID,
    ),
    link("DeleteResponse", &DELETE_RESPONSE, &RESPONSE_ID),
];

pub const CREATE_RESPONSE: Operation = Operation {
    method: "POST",
    path: "/v1/responses",
    id: "CreateResponse",
    tag: "responses",
    summary: "A model response (typed server-sent events with `stream: true`)",
    body: Body::Json(schema::<crate::domain::responses::request::ResponseCreateBody>),
    ok: &[(
        200,
        Answer::JsonOrStream(schema::<crate::domain::responses::output::ResponseObject>),
    )],
    errors: &[400, 401, 402, 404, 413, 429, 502, 503, 504],
    links: RESPONSE_LINKS,
    ..DEFAULT
};

pub const RETRIEVE_RESPONSE: Operation = Operation {
    path: "/v1/responses/{response_id}",
    id: "RetrieveResponse",
    tag: "responses",
    summary: "A stored response of this person",
    params: &[RESPONSE_ID],
    ok: &[(
        200,
        Answer::Json(schema::<crate::domain::responses::output::ResponseObject>),
    )],
    errors: &[401, 404],
    ..DEFAULT
};

pub const DELETE_RESPONSE: Operation = Operation {
    method: "DELETE",
    path: "/v1/responses/{response_id}",
    id: "DeleteResponse",
    tag: "responses",
    summary: "Delete a stored response",
    params: &[RESPONSE_ID],
    ok: &[(200, Answer::Json(schema::<crate::api::envelope::Deleted>))],
    errors: &[401, 404],
    ..DEFAULT
};

pub const LIST_RESPONSE_INPUT_ITEMS: Operation = Operation {
    path: "/v1/responses/{response_id}/input_items",
    id: "ListResponseInputItems",
    tag: "responses",
    summary: "The input items of a stored response",
    params: &[
        RESPONSE_ID,
        query_param(
            "limit",
            Kind::Int(1, crate::domain::responses::MAX_ITEMS_PAGE as i64),
            "Page size (default 20).",
        ),
        query_param("after", Kind::Str, "An item id: the page starts after it."),
        query_param("before", Kind::Str, "An item id: the page ends before it."),
        ORDER,
    ],
    ok: &[(200, Answer::Json(list_of::<ConversationItem>))],
    errors: &[400, 401, 404],
    ..DEFAULT
};

pub fn routes() -> Router<App> {
    Router::new()
        .merge(collection_route())
        .merge(item_route())
        .merge(input_items_route())
}

// One function per path (the unit a Lambda function serves, `api::PathRoutes`).

pub fn collection_route() -> Router<App> {
    Router::new().declared(&CREATE_RESPONSE, create)
}

pub fn item_route() -> Router<App> {
    Router::new()
        .declared(&RETRIEVE_RESPONSE, retrieve)
        .declared(&DELETE_RESPONSE, remove)
}

pub fn input_items_route() -> Router<App> {
    Router::new().declared(&LIST_RESPONSE_INPUT_ITEMS, input_items)
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
                .usage
                .as_ref()
                .and_then(|usage| usage.cost.as_deref())
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
) -> ApiResult<Json<crate::api::envelope::List<ConversationItem>>> {
    let page = input_items::page(app.context(), &caller, &id, &query).await?;
    Ok(Json(crate::api::envelope::List::page(page, |i| {
        i.id().to_owned()
    })))
}
