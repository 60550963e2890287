//! `GET /v1/models` and `GET /v1/models/{model}`: the chat model catalog as the API shows it.

use crate::api::envelope::List;
use crate::api::operation::{list_of, path_param, schema, Answer, Declared, Operation, DEFAULT};
use crate::app::App;
use crate::domain::accounts::Caller;
use crate::domain::chat::models::{model_object, ModelObject};
use crate::domain::error::{ApiError, ApiResult};
use axum::extract::{Path, State};
use axum::{Json, Router};

pub const LIST_MODELS: Operation = Operation {
    path: "/v1/models",
    id: "ListModels",
    tag: "models",
    summary: "The chat models (video models are at /v1/videos/models)",
    ok: &[(
        200,
        Answer::Json(list_of::<crate::domain::chat::models::ModelObject>),
    )],
    ..DEFAULT
};

pub const RETRIEVE_MODEL: Operation = Operation {
    path: "/v1/models/{model}",
    id: "RetrieveModel",
    tag: "models",
    summary: "One chat model",
    params: &[path_param("model", "A chat model id.")],
    ok: &[(
        200,
        Answer::Json(schema::<crate::domain::chat::models::ModelObject>),
    )],
    errors: &[401, 404],
    ..DEFAULT
};

pub fn routes() -> Router<App> {
    Router::new()
        .merge(models_route())
        .merge(model_item_route())
}

// One function per path (the unit a Lambda function serves, `api::PathRoutes`).

pub fn models_route() -> Router<App> {
    Router::new().declared(&LIST_MODELS, list)
}

pub fn model_item_route() -> Router<App> {
    Router::new().declared(&RETRIEVE_MODEL, retrieve)
}

/// `GET /v1/models`: chat models only (video models are at `/v1/videos/models`).
async fn list(State(app): State<App>, _caller: Caller) -> Json<List<ModelObject>> {
    Json(chat_model_list(&app))
}

/// The chat models as a list (`GET /v1/models`, and the console chat page's picker).
pub fn chat_model_list(app: &App) -> List<ModelObject> {
    let data = app.catalog.chat_models.iter().map(model_object).collect();
    List::whole(data, |m| m.id.clone())
}

/// `GET /v1/models/{model}`: one chat model; a video model or an unknown id is 404.
async fn retrieve(
    State(app): State<App>,
    _caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<ModelObject>> {
    app.catalog
        .chat_model(&id)
        .map(|m| Json(model_object(m)))
        .ok_or_else(|| {
            ApiError::not_found(
                "model_not_found",
                format!("The model '{id}' does not exist."),
            )
            .with_param("model")
        })
}
