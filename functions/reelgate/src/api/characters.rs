//! The `/v1/videos/characters` routes: create (OpenAI's SDK sends a multipart form with `name`
//! and a `video` file part; JSON may name an uploaded file instead), list, retrieve, delete.

use crate::api::envelope::List;
use crate::api::extract::{ApiBody, ApiQuery};
use crate::app::App;
use crate::domain::accounts::Caller;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::params::ListQuery;
use crate::domain::videos::characters::{
    self, Character, CharacterCreateRequest, CharacterJsonBody, MAX_SOURCE_BYTES,
};
use axum::extract::{FromRequest, Multipart, Path, Request, State};
use axum::routing::get;
use axum::{Json, Router};
use bytes::Bytes;

pub fn routes() -> Router<App> {
    Router::new().merge(collection_route()).merge(item_route())
}

// One function per path (the unit a Lambda function serves, `api::PathRoutes`).

pub fn collection_route() -> Router<App> {
    Router::new().route("/v1/videos/characters", get(list).post(create))
}

pub fn item_route() -> Router<App> {
    Router::new().route(
        "/v1/videos/characters/{character_id}",
        get(retrieve).delete(delete),
    )
}

async fn create(
    State(app): State<App>,
    caller: Caller,
    request: Request,
) -> ApiResult<Json<Character>> {
    let multipart = request
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().starts_with("multipart/form-data"));
    let request = if multipart {
        let form = Multipart::from_request(request, &app).await.map_err(|e| {
            ApiError::bad_request(format!("The form could not be read: {}", e.body_text()))
        })?;
        read_form(form).await?
    } else {
        let ApiBody(body) = ApiBody::<CharacterJsonBody>::from_request(request, &app).await?;
        CharacterCreateRequest::from(body)
    };
    Ok(Json(
        characters::create(app.context(), &caller.org, request).await?,
    ))
}

/// The form's `name` and its one video or image part (`video`, as the SDK names it, or
/// `image`), read into memory within [`MAX_SOURCE_BYTES`].
async fn read_form(mut form: Multipart) -> ApiResult<CharacterCreateRequest> {
    let mut name = None;
    let mut source: Option<Bytes> = None;
    while let Some(mut field) = form
        .next_field()
        .await
        .map_err(|e| ApiError::bad_request(format!("The form could not be read: {e}")))?
    {
        let field_name = field.name().unwrap_or_default().to_owned();
        match field_name.as_str() {
            "name" => {
                name = Some(field.text().await.map_err(|e| {
                    ApiError::invalid("name", format!("name could not be read: {e}"))
                })?)
            }
            "video" | "image" => {
                if source.is_some() {
                    return Err(ApiError::invalid(
                        "video",
                        "Send one video or image per character.",
                    ));
                }
                let mut bytes = Vec::new();
                while let Some(chunk) = field.chunk().await.map_err(|e| {
                    ApiError::invalid("video", format!("video could not be read: {e}"))
                })? {
                    if (bytes.len() + chunk.len()) as u64 > MAX_SOURCE_BYTES {
                        return Err(ApiError::invalid(
                            "video",
                            format!(
                                "video is larger than {} MiB.",
                                MAX_SOURCE_BYTES / (1024 * 1024)
                            ),
                        ));
                    }
                    bytes.extend_from_slice(&chunk);
                }
                source = Some(Bytes::from(bytes));
            }
            other => {
                return Err(ApiError::invalid(
                    other,
                    format!("Unknown parameter: {other}. A character takes name and video."),
                ))
            }
        }
    }
    Ok(CharacterCreateRequest {
        name: name.ok_or_else(|| crate::domain::params::required("name"))?,
        video: Some(source.ok_or_else(|| crate::domain::params::required("video"))?),
        file_id: None,
    })
}

async fn list(
    State(app): State<App>,
    caller: Caller,
    ApiQuery(params): ApiQuery<ListQuery>,
) -> ApiResult<Json<List<Character>>> {
    let page = characters::list(app.context(), &caller.org, &params).await?;
    Ok(Json(List::page(page, |c| c.id.clone())))
}

async fn retrieve(
    State(app): State<App>,
    caller: Caller,
    Path(character_id): Path<String>,
) -> ApiResult<Json<Character>> {
    Ok(Json(
        characters::find(app.context(), &caller.org, &character_id).await?,
    ))
}

async fn delete(
    State(app): State<App>,
    caller: Caller,
    Path(character_id): Path<String>,
) -> ApiResult<Json<crate::api::envelope::Deleted>> {
    characters::delete(app.context(), &caller.org, &character_id).await?;
    Ok(Json(crate::api::envelope::Deleted::new(
        character_id,
        "video.character",
    )))
}
