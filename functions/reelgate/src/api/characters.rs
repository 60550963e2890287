//! The `/v1/videos/characters` routes: create (OpenAI's SDK sends a multipart form with `name`
//! and a `video` file part; JSON may name an uploaded file instead), list, retrieve, delete.

use crate::api::envelope::List;
use crate::api::extract::{ApiBody, ApiQuery};
use crate::api::operation::{
    link, list_of, query_param, schema, Answer, Body, Declared, Kind, Link, Operation,
    CHARACTER_ID, DEFAULT, ORDER,
};
use crate::app::App;
use crate::domain::accounts::Caller;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::params::ListQuery;
use crate::domain::videos::characters::{
    self, Character, CharacterCreateRequest, CharacterJsonBody, MAX_SOURCE_BYTES,
};
use axum::extract::{FromRequest, Multipart, Path, Request, State};
use axum::{Json, Router};
use bytes::Bytes;

const CHARACTER_LINKS: &[Link] = &[
    link("GetCharacter", &RETRIEVE_VIDEO_CHARACTER, &CHARACTER_ID),
    link("DeleteCharacter", &DELETE_VIDEO_CHARACTER, &CHARACTER_ID),
];

pub const CREATE_VIDEO_CHARACTER: Operation = Operation {
    method: "POST",
    path: "/v1/videos/characters",
    id: "CreateVideoCharacter",
    tag: "videos",
    summary: "A named set of reference frames, from a short H.264 MP4 or an image \
              (`characters: [id]` on a create or remix adds them as reference images)",
    body: Body::JsonOrForm(schema::<crate::domain::videos::characters::CharacterCreateRequest>),
    ok: &[(
        200,
        Answer::Json(schema::<crate::domain::videos::characters::Character>),
    )],
    errors: &[400, 401, 404, 413],
    links: CHARACTER_LINKS,
    ..DEFAULT
};

pub const LIST_VIDEO_CHARACTERS: Operation = Operation {
    path: "/v1/videos/characters",
    id: "ListVideoCharacters",
    tag: "videos",
    summary: "The organization's characters",
    params: &[
        query_param(
            "limit",
            Kind::Int(1, crate::domain::videos::characters::MAX_PAGE as i64),
            "Page size (default 20).",
        ),
        query_param(
            "after",
            Kind::Str,
            "A character id: the page starts after it.",
        ),
        ORDER,
    ],
    ok: &[(
        200,
        Answer::Json(list_of::<crate::domain::videos::characters::Character>),
    )],
    errors: &[400, 401],
    ..DEFAULT
};

pub const RETRIEVE_VIDEO_CHARACTER: Operation = Operation {
    path: "/v1/videos/characters/{character_id}",
    id: "RetrieveVideoCharacter",
    tag: "videos",
    summary: "A character",
    params: &[CHARACTER_ID],
    ok: &[(
        200,
        Answer::Json(schema::<crate::domain::videos::characters::Character>),
    )],
    errors: &[401, 404],
    ..DEFAULT
};

pub const DELETE_VIDEO_CHARACTER: Operation = Operation {
    method: "DELETE",
    path: "/v1/videos/characters/{character_id}",
    id: "DeleteVideoCharacter",
    tag: "videos",
    summary: "Delete a character and its frames (jobs that named it keep their copies)",
    params: &[CHARACTER_ID],
    ok: &[(200, Answer::Json(schema::<crate::api::envelope::Deleted>))],
    errors: &[401, 404],
    ..DEFAULT
};

pub fn routes() -> Router<App> {
    Router::new().merge(collection_route()).merge(item_route())
}

// One function per path (the unit a Lambda function serves, `api::PathRoutes`).

pub fn collection_route() -> Router<App> {
    Router::new()
        .declared(&LIST_VIDEO_CHARACTERS, list)
        .declared(&CREATE_VIDEO_CHARACTER, create)
}

pub fn item_route() -> Router<App> {
    Router::new()
        .declared(&RETRIEVE_VIDEO_CHARACTER, retrieve)
        .declared(&DELETE_VIDEO_CHARACTER, delete)
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
