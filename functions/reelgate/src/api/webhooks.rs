//! The `/v1/webhooks` routes: an organization's webhook endpoints (create — the secret is in
//! that answer only — list, retrieve, delete, rotate the secret). Events and delivery are
//! `domain::webhooks`'.

use crate::api::envelope::List;
use crate::api::extract::ApiBody;
use crate::api::operation::{
    link, list_of, schema, Answer, Body, Declared, Link, Operation, DEFAULT, WEBHOOK_ID,
};
use crate::app::App;
use crate::domain::accounts::Caller;
use crate::domain::error::ApiResult;
use crate::domain::webhooks::{self, Endpoint};
use axum::extract::{Path, State};
use axum::{Json, Router};

const WEBHOOK_LINKS: &[Link] = &[
    link("GetWebhook", &RETRIEVE_WEBHOOK, &WEBHOOK_ID),
    link("RotateWebhookSecret", &ROTATE_WEBHOOK_SECRET, &WEBHOOK_ID),
    link("DeleteWebhook", &DELETE_WEBHOOK, &WEBHOOK_ID),
];

pub const CREATE_WEBHOOK: Operation = Operation {
    method: "POST",
    path: "/v1/webhooks",
    id: "CreateWebhook",
    tag: "webhooks",
    summary: "Register an endpoint for video events (its signing secret is in this answer only)",
    body: Body::Json(schema::<crate::domain::webhooks::WebhookCreateRequest>),
    ok: &[(
        200,
        Answer::Json(schema::<crate::domain::webhooks::Endpoint>),
    )],
    errors: &[400, 401],
    links: WEBHOOK_LINKS,
    ..DEFAULT
};

pub const LIST_WEBHOOKS: Operation = Operation {
    path: "/v1/webhooks",
    id: "ListWebhooks",
    tag: "webhooks",
    summary: "The organization's webhook endpoints with their delivery records",
    ok: &[(
        200,
        Answer::Json(list_of::<crate::domain::webhooks::Endpoint>),
    )],
    ..DEFAULT
};

pub const RETRIEVE_WEBHOOK: Operation = Operation {
    path: "/v1/webhooks/{webhook_id}",
    id: "RetrieveWebhook",
    tag: "webhooks",
    summary: "A webhook endpoint, its status and last delivery attempts",
    params: &[WEBHOOK_ID],
    ok: &[(
        200,
        Answer::Json(schema::<crate::domain::webhooks::Endpoint>),
    )],
    errors: &[401, 404],
    ..DEFAULT
};

pub const DELETE_WEBHOOK: Operation = Operation {
    method: "DELETE",
    path: "/v1/webhooks/{webhook_id}",
    id: "DeleteWebhook",
    tag: "webhooks",
    summary: "Delete a webhook endpoint",
    params: &[WEBHOOK_ID],
    ok: &[(200, Answer::Json(schema::<crate::api::envelope::Deleted>))],
    errors: &[401, 404],
    ..DEFAULT
};

pub const ROTATE_WEBHOOK_SECRET: Operation = Operation {
    method: "POST",
    path: "/v1/webhooks/{webhook_id}/rotate_secret",
    id: "RotateWebhookSecret",
    tag: "webhooks",
    summary: "A new signing secret (shown once); the old one keeps signing for 24 hours",
    params: &[WEBHOOK_ID],
    ok: &[(
        200,
        Answer::Json(schema::<crate::domain::webhooks::Endpoint>),
    )],
    errors: &[401, 404],
    ..DEFAULT
};

pub fn routes() -> Router<App> {
    Router::new()
        .merge(collection_route())
        .merge(item_route())
        .merge(rotate_secret_route())
}

// One function per path (the unit a Lambda function serves, `api::PathRoutes`).

pub fn collection_route() -> Router<App> {
    Router::new()
        .declared(&LIST_WEBHOOKS, list)
        .declared(&CREATE_WEBHOOK, create)
}

pub fn item_route() -> Router<App> {
    Router::new()
        .declared(&RETRIEVE_WEBHOOK, retrieve)
        .declared(&DELETE_WEBHOOK, delete)
}

pub fn rotate_secret_route() -> Router<App> {
    Router::new().declared(&ROTATE_WEBHOOK_SECRET, rotate_secret)
}

async fn create(
    State(app): State<App>,
    caller: Caller,
    ApiBody(body): ApiBody<webhooks::WebhookCreateRequest>,
) -> ApiResult<Json<Endpoint>> {
    Ok(Json(
        webhooks::create(app.context(), &caller.org, body).await?,
    ))
}

async fn list(State(app): State<App>, caller: Caller) -> ApiResult<Json<List<Endpoint>>> {
    let data = webhooks::list(app.context(), &caller.org).await?;
    Ok(Json(List::whole(data, |e| e.id.clone())))
}

async fn retrieve(
    State(app): State<App>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Endpoint>> {
    Ok(Json(webhooks::get(app.context(), &caller.org, &id).await?))
}

async fn delete(
    State(app): State<App>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<crate::api::envelope::Deleted>> {
    webhooks::delete(app.context(), &caller.org, &id).await?;
    Ok(Json(crate::api::envelope::Deleted::new(
        id,
        "webhook_endpoint",
    )))
}

async fn rotate_secret(
    State(app): State<App>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Endpoint>> {
    Ok(Json(
        webhooks::rotate_secret(app.context(), &caller.org, &id).await?,
    ))
}
