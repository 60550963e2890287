//! `GET /v1/models` and `GET /v1/models/{model}`: the chat model catalog as the API shows it.

use crate::app::App;
use crate::domain::accounts::Caller;
use crate::domain::chat::models::model_object;
use crate::domain::error::{ApiError, ApiResult};
use axum::extract::{Path, State};
use axum::Json;
use serde_json::Value;

/// `GET /v1/models`: chat models only (video models are at `/v1/videos/models`).
pub async fn list(State(app): State<App>, _caller: Caller) -> Json<Value> {
    let data: Vec<Value> = app.catalog.chat_models.iter().map(model_object).collect();
    Json(crate::api::envelope::list_envelope(
        &data,
        |m| m["id"].as_str().unwrap_or_default().to_owned(),
        false,
    ))
}

/// `GET /v1/models/{model}`: one chat model; a video model or an unknown id is 404.
pub async fn retrieve(
    State(app): State<App>,
    _caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
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
