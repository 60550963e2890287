//! Extractors: the authenticated caller, JSON bodies and query strings, each rejecting with the
//! OpenAI error envelope.

use crate::app::App;
use crate::domain::accounts::Caller;
use crate::domain::chat::body::{ChatCompletionBody, Unread};
use crate::domain::error::ApiError;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

impl FromRequestParts<App> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<Self, Self::Rejection> {
        if parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .is_none()
        {
            return Err(ApiError::unauthorized(
                "missing_api_key",
                "No API key was given. Send it in the header `Authorization: Bearer <API_KEY>`.",
            ));
        }
        let token = bearer_token(&parts.headers).unwrap_or_default();
        match app.accounts().authenticate(token).await? {
            Some(caller) => {
                crate::observability::telemetry::note_caller(&caller.org, caller.key_id());
                Ok(caller)
            }
            None => Err(ApiError::unauthorized(
                "invalid_api_key",
                "The API key is unknown, revoked or expired.",
            )),
        }
    }
}

/// The key of an `Authorization: Bearer <key>` header, trimmed (also the body budget's check).
pub fn bearer_token(headers: &axum::http::HeaderMap) -> Option<&str> {
    let header = headers
        .get(axum::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    header
        .strip_prefix("Bearer ")
        .or_else(|| header.strip_prefix("bearer "))
        .map(str::trim)
}

/// A request body that paused too long, or arrived slower than the minimum rate (the local
/// listener's bounds, docs/security.md §9); rendered as `408 request_timeout`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyTooSlow;

impl std::fmt::Display for BodyTooSlow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "The request body arrived too slowly (it paused too long or fell below the \
             server's minimum rate); send it again on a faster connection.",
        )
    }
}

impl std::error::Error for BodyTooSlow {}

/// A JSON body whose rejections render as the error envelope. The bytes are checked by the
/// bounded pre-scan ([`crate::api::json_scan`]) before anything is parsed from them.
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = json_bytes(req, state).await?;
        match axum::Json::<T>::from_bytes(&bytes) {
            Ok(axum::Json(v)) => Ok(ApiJson(v)),
            Err(rejection) => Err(json_rejection(rejection)),
        }
    }
}

/// A JSON body typed at the edge: its shape and rules refused in the request type's own words
/// ([`crate::domain::params::RequestBody`]).
pub struct ApiBody<T>(pub T);

impl<T: crate::domain::params::RequestBody, S: Send + Sync> FromRequest<S> for ApiBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = json_bytes(req, state).await?;
        crate::domain::params::read_body(&bytes).map(ApiBody)
    }
}

/// A chat completions body typed at the edge ([`crate::domain::chat::body`]); one serde could
/// not read is kept, for the use case to refuse in the rules' order (the model first).
pub struct ChatBody(pub Result<ChatCompletionBody, Unread>);

impl<S: Send + Sync> FromRequest<S> for ChatBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = json_bytes(req, state).await?;
        match crate::domain::chat::body::read(&bytes) {
            // Not JSON: refused in the words every JSON body is refused in.
            Err(unread) if unread.is_syntax() => {
                Err(match axum::Json::<serde_json::Value>::from_bytes(&bytes) {
                    Err(rejection) => json_rejection(rejection),
                    Ok(_) => unread.into_error(),
                })
            }
            read => Ok(ChatBody(read)),
        }
    }
}

/// A JSON body's bytes, read within the route's limit and through the bounded pre-scan
/// ([`crate::api::json_scan`]) before anything is parsed from them.
async fn json_bytes<S: Send + Sync>(
    req: Request,
    state: &S,
) -> Result<axum::body::Bytes, ApiError> {
    if !is_json(req.headers()) {
        return Err(ApiError::bad_request(
            "The request body must be JSON with the header `Content-Type: application/json`.",
        ));
    }
    let bytes = axum::body::Bytes::from_request(req, state)
        .await
        .map_err(|e| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                too_large()
            } else {
                body_read_error(&e, "The request body could not be read")
            }
        })?;
    crate::api::json_scan::check(&bytes)?;
    Ok(bytes)
}

/// `application/json` or any `application/*+json`, as axum's own JSON extractor accepts.
fn is_json(headers: &axum::http::HeaderMap) -> bool {
    let Some(value) = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let essence = value
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// The answer to a body that could not be read: too large (413), sent too slowly (408, the
/// local listener's [`BodyTooSlow`]), or broken off (400).
pub fn body_read_error(error: &(dyn std::error::Error + 'static), what_failed: &str) -> ApiError {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = cause {
        if e.is::<BodyTooSlow>() {
            return ApiError::new(
                crate::domain::error::ErrorKind::RequestTimeout,
                "request_timeout",
                e.to_string(),
            );
        }
        if e.is::<http_body_util::LengthLimitError>() {
            return too_large();
        }
        cause = e.source();
    }
    ApiError::bad_request(format!("{what_failed}: {error}"))
}

/// The 413 of a body over the route's limit.
pub(crate) fn too_large() -> ApiError {
    ApiError::new(
        crate::domain::error::ErrorKind::TooLarge,
        "payload_too_large",
        "The request body is larger than this endpoint accepts.",
    )
}

fn json_rejection(rejection: JsonRejection) -> ApiError {
    match rejection {
        JsonRejection::JsonSyntaxError(e) => ApiError::bad_request(format!(
            "The request body is not valid JSON: {}",
            std::error::Error::source(&e)
                .map(ToString::to_string)
                .unwrap_or_else(|| e.body_text())
        )),
        JsonRejection::JsonDataError(e) => {
            let detail = std::error::Error::source(&e)
                .map(ToString::to_string)
                .unwrap_or_else(|| e.body_text());
            // serde_path_to_error renders "path: message"; the path names the parameter.
            let param = detail
                .split(':')
                .next()
                .unwrap_or_default()
                .trim()
                .to_owned();
            let mut err = ApiError::bad_request(format!("Invalid request body: {detail}"));
            if !param.is_empty() && !param.contains(' ') {
                err = err.with_param(param);
            }
            err
        }
        other => ApiError::bad_request(other.body_text()),
    }
}

/// Query parameters whose rejections render as the error envelope.
pub struct ApiQuery<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(v)) => Ok(ApiQuery(v)),
            Err(QueryRejection::FailedToDeserializeQueryString(e)) => Err(ApiError::bad_request(
                format!("Invalid query string: {}", e.body_text()),
            )),
            Err(other) => Err(ApiError::bad_request(other.body_text())),
        }
    }
}

/// A JSON body typed at the edge, or the same object sent as `multipart/form-data` (OpenAI's
/// Python SDK sends `videos.create` that way, files or not), refused in the request type's own
/// words ([`crate::domain::params::RequestBody`]). Form fields become the object's members: a
/// field `a` is `"a"`, `a[b]` is `{"a": {"b": …}}`, and `a[0][b]` / `a[][b]` fill arrays, as
/// the SDKs spell nested values; every value is a string, which the domain's rules accept where
/// the SDK sends strings (`seconds: "8"`). A file part is refused naming its field: the service
/// takes files through `/v1/files`, by id.
pub struct JsonOrFormBody<T>(pub T);

impl<T: crate::domain::params::RequestBody, S: Send + Sync> FromRequest<S> for JsonOrFormBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let (body, _) = json_or_form(req, state, None).await?;
        read_object(body).map(JsonOrFormBody)
    }
}

/// [`JsonOrFormBody`] for the routes that also take a source video as the form's one `video`
/// file part (`POST /v1/videos/edits` and `/extensions`, as OpenAI's SDK sends a file): its
/// bytes, within [`crate::domain::videos::source_upload::MAX_UPLOAD_BYTES`], besides the body.
pub struct JsonOrFormWithVideo<T> {
    pub body: T,
    pub video: Option<bytes::Bytes>,
}

impl<T: crate::domain::params::RequestBody, S: Send + Sync> FromRequest<S>
    for JsonOrFormWithVideo<T>
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let limit = crate::domain::videos::source_upload::MAX_UPLOAD_BYTES;
        let (body, video) = json_or_form(req, state, Some(("video", limit))).await?;
        // A `video` value beside the file part is refused as sent twice, whatever its shape.
        if video.is_some() && body.get("video").is_some() {
            return Err(crate::domain::videos::source_request::sent_twice());
        }
        let body = read_object(body)?;
        Ok(JsonOrFormWithVideo { body, video })
    }
}

/// A typed body from the object a JSON body or a form made.
fn read_object<T: crate::domain::params::RequestBody>(
    body: serde_json::Value,
) -> Result<T, ApiError> {
    if !body.is_object() {
        return Err(crate::domain::params::not_an_object());
    }
    crate::domain::params::read_from(body)
}

/// The body as an object, and the bytes of the one file part `file` names (at most its limit),
/// when the form had it. Any other file part is refused naming its field.
async fn json_or_form<S: Send + Sync>(
    req: Request,
    state: &S,
    file: Option<(&str, u64)>,
) -> Result<(serde_json::Value, Option<bytes::Bytes>), ApiError> {
    let multipart = req
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("multipart/form-data")
        });
    if !multipart {
        let ApiJson(v) = ApiJson::<serde_json::Value>::from_request(req, state).await?;
        return Ok((v, None));
    }
    let mut form = axum::extract::Multipart::from_request(req, state)
        .await
        .map_err(|e| {
            ApiError::bad_request(format!(
                "The multipart form could not be read: {}",
                e.body_text()
            ))
        })?;
    let read_error = |e: axum::extract::multipart::MultipartError| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            too_large()
        } else {
            body_read_error(&e, "The multipart form could not be read")
        }
    };
    // A form's values become a JSON object: it may hold no more values than a JSON body.
    let mut fields = 0usize;
    let mut object = serde_json::Value::Object(Default::default());
    let mut file_bytes: Option<bytes::Bytes> = None;
    while let Some(mut field) = form.next_field().await.map_err(read_error)? {
        fields += 1;
        if fields > crate::api::json_scan::BASE_VALUES {
            return Err(ApiError::bad_request(format!(
                "The form has more than {} fields.",
                crate::api::json_scan::BASE_VALUES
            )));
        }
        let name = field.name().unwrap_or_default().to_owned();
        let top = name.split('[').next().unwrap_or_default().to_owned();
        if field.file_name().is_some() {
            let Some((_, max)) = file.filter(|(wanted, _)| *wanted == name) else {
                return Err(ApiError::invalid(
                    &top,
                    format!(
                        "{top} cannot be a file here: upload it with POST /v1/files and refer \
                         to it by file_id (image_reference or references)."
                    ),
                ));
            };
            if file_bytes.is_some() {
                return Err(ApiError::invalid(&top, format!("Send one {top} file.")));
            }
            let mut bytes = Vec::new();
            while let Some(chunk) = field.chunk().await.map_err(read_error)? {
                if (bytes.len() + chunk.len()) as u64 > max {
                    return Err(ApiError::invalid(
                        &top,
                        format!("{top} is larger than {} MiB.", max / (1024 * 1024)),
                    ));
                }
                bytes.extend_from_slice(&chunk);
            }
            file_bytes = Some(bytes.into());
            continue;
        }
        let text = field.text().await.map_err(|e| {
            ApiError::invalid(&top, format!("{top} could not be read: {}", e.body_text()))
        })?;
        insert_form_value(&mut object, &name, text)?;
    }
    Ok((object, file_bytes))
}

/// Puts one form field into the object at the path its name spells (`a[b][0][c]`).
pub fn insert_form_value(
    root: &mut serde_json::Value,
    name: &str,
    value: String,
) -> Result<(), ApiError> {
    use serde_json::Value;
    let (head, rest) = match name.split_once('[') {
        Some((head, rest)) => (head, Some(rest)),
        None => (name, None),
    };
    let bad = || {
        ApiError::invalid(
            head,
            format!("The form field name '{name}' is not understood."),
        )
    };
    if head.is_empty() || head.contains(']') {
        return Err(bad());
    }
    let mut segments = vec![head.to_owned()];
    if let Some(rest) = rest {
        let inner = rest.strip_suffix(']').ok_or_else(bad)?;
        segments.extend(inner.split("][").map(str::to_owned));
    }
    if segments.len() > 8 || segments.iter().skip(1).any(|s| s.contains(['[', ']'])) {
        return Err(bad());
    }
    let mut at = root;
    for (i, seg) in segments.iter().enumerate() {
        let last = i + 1 == segments.len();
        let next_is_index = segments
            .get(i + 1)
            .is_some_and(|s| s.is_empty() || s.parse::<usize>().is_ok());
        let fresh = || {
            if last {
                Value::String(value.clone())
            } else if next_is_index {
                Value::Array(Vec::new())
            } else {
                Value::Object(Default::default())
            }
        };
        at = match at {
            Value::Object(map) => {
                if last && map.contains_key(seg.as_str()) {
                    return Err(ApiError::invalid(
                        head,
                        format!("The form field '{name}' is given twice."),
                    ));
                }
                map.entry(seg.clone()).or_insert_with(fresh)
            }
            Value::Array(list) => {
                let index = if seg.is_empty() {
                    // `a[][b]`: a new element unless the last one still lacks this member.
                    let member = segments.get(i + 1).cloned().unwrap_or_default();
                    match list.last() {
                        Some(Value::Object(m))
                            if !member.is_empty() && !m.contains_key(&member) =>
                        {
                            list.len() - 1
                        }
                        _ => list.len(),
                    }
                } else {
                    seg.parse::<usize>().map_err(|_| bad())?
                };
                if index > list.len() || index >= 64 {
                    return Err(bad());
                }
                if index == list.len() {
                    list.push(fresh());
                } else if last {
                    return Err(ApiError::invalid(
                        head,
                        format!("The form field '{name}' is given twice."),
                    ));
                }
                &mut list[index]
            }
            _ => return Err(bad()),
        };
    }
    Ok(())
}

#[cfg(test)]
mod form_tests {
    use super::*;
    use serde_json::json;

    fn form(fields: &[(&str, &str)]) -> Result<serde_json::Value, ApiError> {
        let mut v = json!({});
        for (k, val) in fields {
            insert_form_value(&mut v, k, (*val).to_owned())?;
        }
        Ok(v)
    }

    #[test]
    fn form_fields_become_the_json_object() {
        let v = form(&[
            ("model", "reel-1"),
            ("seconds", "4"),
            ("image_reference[0][file_id]", "file-a"),
            ("image_reference[0][role]", "first_frame"),
            ("references[images][][file_id]", "file-b"),
            ("references[images][][file_id]", "file-c"),
        ])
        .expect("parses");
        assert_eq!(
            v,
            json!({
                "model": "reel-1",
                "seconds": "4",
                "image_reference": [{"file_id": "file-a", "role": "first_frame"}],
                "references": {"images": [{"file_id": "file-b"}, {"file_id": "file-c"}]},
            })
        );
    }

    #[test]
    fn odd_names_are_refused_naming_the_field() {
        for bad in ["a[", "a]b", "[x]", "a[0][", "a[5]", "a[x]]"] {
            let e = form(&[(bad, "1")]).expect_err(bad);
            assert_eq!(
                crate::api::envelope::status(e.kind),
                StatusCode::BAD_REQUEST,
                "{bad}"
            );
        }
        let e = form(&[("model", "a"), ("model", "b")]).expect_err("twice");
        assert_eq!(e.param.as_deref(), Some("model"));
        let e = form(&[("model", "a"), ("model[x]", "b")]).expect_err("scalar then object");
        assert_eq!(e.param.as_deref(), Some("model"));
    }
}
