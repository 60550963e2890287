//! The one error type of the API. Every non-2xx response renders OpenAI's envelope
//! `{"error": {"message", "type", "param", "code"}}`. The codes are listed in `docs/errors.md`;
//! keep them stable, clients branch on them.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

tokio::task_local! {
    /// The id of the request being served (set by the API's request-id middleware), written
    /// into every error body so a caller can quote it and an operator find it in the log.
    pub static REQUEST_ID: String;
}

/// The id of the request this task serves, if any.
pub fn current_request_id() -> Option<String> {
    REQUEST_ID.try_with(Clone::clone).ok()
}

#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub status: StatusCode,
    /// OpenAI's `type`: `invalid_request_error`, `authentication_error`, `permission_error`,
    /// `not_found_error`, `conflict_error`, `rate_limit_error`, `insufficient_quota`,
    /// `server_error`, `upstream_error`.
    pub kind: &'static str,
    pub code: String,
    pub message: String,
    pub param: Option<String>,
}

impl ApiError {
    pub fn new(
        status: StatusCode,
        kind: &'static str,
        code: &str,
        message: impl Into<String>,
    ) -> Self {
        ApiError {
            status,
            kind,
            code: code.to_owned(),
            message: message.into(),
            param: None,
        }
    }

    pub fn with_param(mut self, param: impl Into<String>) -> Self {
        self.param = Some(param.into());
        self
    }

    /// 400 `invalid_request_error` naming the offending parameter.
    pub fn invalid(param: &str, message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "invalid_request_error",
            message,
        )
        .with_param(param)
    }

    /// 400 `invalid_request_error` about the request as a whole.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "invalid_request_error",
            message,
        )
    }

    pub fn unauthorized(code: &str, message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            code,
            message,
        )
    }

    pub fn forbidden(code: &str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "permission_error", code, message)
    }

    pub fn not_found(code: &str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found_error", code, message)
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "conflict_error", "conflict", message)
    }

    pub fn insufficient_credits(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::PAYMENT_REQUIRED,
            "insufficient_quota",
            "insufficient_credits",
            message,
        )
    }

    pub fn unavailable(code: &str, message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "server_error",
            code,
            message,
        )
    }

    /// 500 for faults of our own; the detail goes to the log, not to the caller.
    pub fn internal(context: &str, detail: impl std::fmt::Display) -> Self {
        tracing::error!(context, %detail, "internal error");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            "internal_error",
            format!("The server failed while {context}. Try again; the failure was logged."),
        )
    }

    pub fn body(&self) -> serde_json::Value {
        let mut body = json!({
            "error": {
                "message": self.message,
                "type": self.kind,
                "param": self.param,
                "code": self.code,
            }
        });
        if let Some(id) = current_request_id() {
            body["error"]["request_id"] = id.into();
        }
        body
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}: {}",
            self.status.as_u16(),
            self.code,
            self.message
        )
    }
}

impl std::error::Error for ApiError {}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, axum::Json(self.body())).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer"),
            );
        }
        response
    }
}

impl From<crate::ports::store::StoreError> for ApiError {
    fn from(e: crate::ports::store::StoreError) -> Self {
        ApiError::internal("using the store", e)
    }
}

impl From<crate::ports::blobs::BlobError> for ApiError {
    fn from(e: crate::ports::blobs::BlobError) -> Self {
        match e {
            crate::ports::blobs::BlobError::NotFound => {
                ApiError::not_found("blob_not_found", "The stored content no longer exists.")
            }
            crate::ports::blobs::BlobError::TooLarge { limit } => ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "invalid_request_error",
                "payload_too_large",
                format!("The content is larger than {limit} bytes."),
            ),
            crate::ports::blobs::BlobError::RangeNotSatisfiable { size } => ApiError::new(
                StatusCode::RANGE_NOT_SATISFIABLE,
                "invalid_request_error",
                "range_not_satisfiable",
                format!("The requested range is outside the content's {size} bytes."),
            ),
            other => ApiError::internal("using the blob store", other),
        }
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
