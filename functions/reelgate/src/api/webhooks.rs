//! The `/v1/webhooks` routes: an organization's webhook endpoints (create — the secret is in
//! that answer only — list, retrieve, delete, rotate the secret). Events and delivery are
//! `domain::webhooks`'.

use crate::api::envelope::List;
use crate::api::extract::ApiBody;
use crate::app::App;
use crate::domain::accounts::Caller;
use crate::domain::error::ApiResult;
use crate::domain::webhooks::{self, Endpoint};
use axum::extract::{Path, State};
use axum::routing::{get, post};
use axum::{Json, Router};

pub fn routes() -> Router<App> {
    Router::new()
        .merge(collection_route())
        .merge(item_route())
        .merge(rotate_secret_route())
}

// One function per path (the unit a Lambda function serves, `api::PathRoutes`).

pub fn collection_route() -> Router<App> {
    Router::new().route("/v1/webhooks", get(list).post(create))
}

pub fn item_route() -> Router<App> {
    Router::new().route("/v1/webhooks/{webhook_id}", get(retrieve).delete(delete))
}

pub fn rotate_secret_route() -> Router<App> {
    Router::new().route(
        "/v1/webhooks/{webhook_id}/rotate_secret",
        post(rotate_secret),
    )
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
