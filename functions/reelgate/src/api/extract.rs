//! Extractors: the authenticated caller, JSON bodies and query strings, each rejecting with the
//! OpenAI error envelope.

use crate::app::App;
use crate::domain::accounts::Caller;
use crate::domain::error::ApiError;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

impl FromRequestParts<App> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<Self, Self::Rejection> {
        let header = parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        let Some(header) = header else {
            return Err(ApiError::unauthorized(
                "missing_api_key",
                "No API key was given. Send it in the header `Authorization: Bearer <API_KEY>`.",
            ));
        };
        let token = header
            .strip_prefix("Bearer ")
            .or_else(|| header.strip_prefix("bearer "))
            .map(str::trim)
            .unwrap_or_default();
        match app.accounts().authenticate(token).await? {
            Some(caller) => Ok(caller),
            None => Err(ApiError::unauthorized(
                "invalid_api_key",
                "The API key is unknown, revoked or expired.",
            )),
        }
    }
}

/// A JSON body whose rejections render as the error envelope.
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(v)) => Ok(ApiJson(v)),
            Err(rejection) => Err(json_rejection(rejection)),
        }
    }
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
        JsonRejection::MissingJsonContentType(_) => ApiError::bad_request(
            "The request body must be JSON with the header `Content-Type: application/json`.",
        ),
        JsonRejection::BytesRejection(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "invalid_request_error",
                "payload_too_large",
                "The request body is larger than this endpoint accepts.",
            )
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

impl ApiError {
    pub fn with_code(mut self, code: &str) -> Self {
        self.code = code.to_owned();
        self
    }
}
