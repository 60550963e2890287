//! OpenAI's response envelopes: the list envelope shared by the list routes, and the error
//! envelope, where each domain [`ErrorKind`] is mapped once to its HTTP status and OpenAI `type`.

use crate::domain::error::{current_request_id, ApiError, ErrorKind};
use axum::http::header::{RETRY_AFTER, WWW_AUTHENTICATE};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// OpenAI's list envelope: `{object: "list", data, first_id, last_id, has_more}`. Its schema
/// in the OpenAPI document is named by the item (`List_Video`, `List_FileObject`, ...).
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct List<T> {
    #[schema(value_type = String, pattern = "^list$")]
    pub object: &'static str,
    pub data: Vec<T>,
    #[schema(required = true)]
    pub first_id: Option<String>,
    /// The id to send as `after` for the next page: the last item's, except on a filtered video
    /// list that stopped at its scan budget, where it is the last video read (possibly with no
    /// item on the page at all).
    #[schema(required = true)]
    pub last_id: Option<String>,
    pub has_more: bool,
}

impl<T> List<T> {
    pub fn new(data: Vec<T>, id_of: impl Fn(&T) -> String, has_more: bool) -> List<T> {
        List {
            object: "list",
            first_id: data.first().map(&id_of),
            last_id: data.last().map(&id_of),
            data,
            has_more,
        }
    }

    /// A list with nothing after it (the routes that answer every item at once).
    pub fn whole(data: Vec<T>, id_of: impl Fn(&T) -> String) -> List<T> {
        List::new(data, id_of, false)
    }

    /// A domain [`Page`](crate::domain::params::Page) as a list envelope.
    pub fn page(page: crate::domain::params::Page<T>, id_of: impl Fn(&T) -> String) -> List<T> {
        let mut list = List::new(page.data, id_of, page.has_more);
        if let Some(resume) = page.resume_after {
            list.last_id = Some(resume);
        }
        list
    }
}

/// The answer to a delete: `{id, object, deleted: true}`.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct Deleted {
    pub id: String,
    /// The deleted thing's `object` (`video`, `file`, `response`, `webhook_endpoint`).
    pub object: &'static str,
    pub deleted: bool,
}

impl Deleted {
    pub fn new(id: impl Into<String>, object: &'static str) -> Deleted {
        Deleted {
            id: id.into(),
            object,
            deleted: true,
        }
    }
}

/// The HTTP status of an error kind: the one place the domain's errors meet HTTP.
pub fn status(kind: ErrorKind) -> StatusCode {
    match kind {
        ErrorKind::InvalidRequest => StatusCode::BAD_REQUEST,
        ErrorKind::Unauthenticated => StatusCode::UNAUTHORIZED,
        ErrorKind::Forbidden => StatusCode::FORBIDDEN,
        ErrorKind::NotFound | ErrorKind::UnknownRoute => StatusCode::NOT_FOUND,
        ErrorKind::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
        ErrorKind::Conflict => StatusCode::CONFLICT,
        ErrorKind::QuotaExceeded => StatusCode::PAYMENT_REQUIRED,
        ErrorKind::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        ErrorKind::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
        ErrorKind::RangeNotSatisfiable => StatusCode::RANGE_NOT_SATISFIABLE,
        ErrorKind::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
        ErrorKind::Unavailable | ErrorKind::UpstreamUnavailable => StatusCode::SERVICE_UNAVAILABLE,
        ErrorKind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        ErrorKind::UpstreamTimeout => StatusCode::GATEWAY_TIMEOUT,
        ErrorKind::UpstreamFailed => StatusCode::BAD_GATEWAY,
    }
}

/// OpenAI's error `type` of an error kind.
pub fn openai_type(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::InvalidRequest
        | ErrorKind::UnknownRoute
        | ErrorKind::MethodNotAllowed
        | ErrorKind::TooLarge
        | ErrorKind::RequestTimeout
        | ErrorKind::RangeNotSatisfiable => "invalid_request_error",
        ErrorKind::Unauthenticated => "authentication_error",
        ErrorKind::Forbidden => "permission_error",
        ErrorKind::NotFound => "not_found_error",
        ErrorKind::Conflict => "conflict_error",
        ErrorKind::QuotaExceeded => "insufficient_quota",
        ErrorKind::RateLimited { .. } => "rate_limit_error",
        ErrorKind::Unavailable | ErrorKind::Internal => "server_error",
        ErrorKind::UpstreamUnavailable | ErrorKind::UpstreamTimeout | ErrorKind::UpstreamFailed => {
            "upstream_error"
        }
    }
}

/// OpenAI's error envelope, the body of every non-2xx answer.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct ErrorResponse {
    pub error: ErrorBody,
}

#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// For people; may change.
    pub message: String,
    /// `invalid_request_error`, `authentication_error`, `permission_error`, `not_found_error`,
    /// `conflict_error`, `rate_limit_error`, `insufficient_quota`, `server_error`,
    /// `upstream_error`.
    #[serde(rename = "type")]
    #[schema(rename = "type")]
    pub kind: &'static str,
    /// The offending parameter, when one is to blame.
    #[schema(required = true)]
    pub param: Option<String>,
    /// Stable: branch on it (docs/errors.md lists them all).
    pub code: String,
    /// The request's id (also in the `x-request-id` header and the service's log).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

impl ErrorResponse {
    /// The envelope of `error`, with the id of the request being served so a caller can quote
    /// it.
    pub fn of(error: &ApiError) -> ErrorResponse {
        ErrorResponse {
            error: ErrorBody {
                message: error.message.clone(),
                kind: openai_type(error.kind),
                param: error.param.clone(),
                code: error.code.clone(),
                request_id: current_request_id(),
            },
        }
    }
}

/// [`ErrorResponse::of`] as a JSON value (an SSE error event, tests).
pub fn error_body(error: &ApiError) -> serde_json::Value {
    serde_json::to_value(ErrorResponse::of(error)).unwrap_or_default()
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response =
            (status(self.kind), axum::Json(ErrorResponse::of(&self))).into_response();
        let headers = response.headers_mut();
        match self.kind {
            ErrorKind::Unauthenticated => {
                headers.insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            ErrorKind::RateLimited {
                retry_after_secs: Some(secs),
            } => {
                headers.insert(RETRY_AFTER, HeaderValue::from(secs));
            }
            _ => {}
        }
        response
    }
}

/// An answer made now is the type's JSON; a replayed one is the first request's JSON as it was
/// recorded.
impl<T: serde::Serialize> IntoResponse for crate::domain::idempotency::Answered<T> {
    fn into_response(self) -> Response {
        match self {
            crate::domain::idempotency::Answered::Now(answer) => axum::Json(answer).into_response(),
            crate::domain::idempotency::Answered::Replayed(first) => {
                axum::Json(first).into_response()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_has_its_status_and_openai_type() {
        let table = [
            (ErrorKind::InvalidRequest, 400, "invalid_request_error"),
            (ErrorKind::Unauthenticated, 401, "authentication_error"),
            (ErrorKind::QuotaExceeded, 402, "insufficient_quota"),
            (ErrorKind::Forbidden, 403, "permission_error"),
            (ErrorKind::NotFound, 404, "not_found_error"),
            (ErrorKind::UnknownRoute, 404, "invalid_request_error"),
            (ErrorKind::MethodNotAllowed, 405, "invalid_request_error"),
            (ErrorKind::Conflict, 409, "conflict_error"),
            (ErrorKind::TooLarge, 413, "invalid_request_error"),
            (ErrorKind::RangeNotSatisfiable, 416, "invalid_request_error"),
            (
                ErrorKind::RateLimited {
                    retry_after_secs: None,
                },
                429,
                "rate_limit_error",
            ),
            (ErrorKind::Internal, 500, "server_error"),
            (ErrorKind::UpstreamFailed, 502, "upstream_error"),
            (ErrorKind::Unavailable, 503, "server_error"),
            (ErrorKind::UpstreamUnavailable, 503, "upstream_error"),
            (ErrorKind::UpstreamTimeout, 504, "upstream_error"),
        ];
        for (kind, code, openai) in table {
            assert_eq!(status(kind).as_u16(), code, "{kind:?}");
            assert_eq!(openai_type(kind), openai, "{kind:?}");
        }
    }

    #[test]
    fn the_envelope_carries_code_param_and_headers() {
        let e = ApiError::invalid("seconds", "seconds must be 4, 8 or 12.");
        assert_eq!(
            error_body(&e),
            serde_json::json!({"error": {
                "message": "seconds must be 4, 8 or 12.",
                "type": "invalid_request_error",
                "param": "seconds",
                "code": "invalid_request_error",
            }})
        );
        let r = ApiError::unauthorized("invalid_api_key", "no").into_response();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(r.headers()[WWW_AUTHENTICATE], "Bearer");
        let r = ApiError::rate_limited("rate_limit_exceeded", "slow down", Some(7)).into_response();
        assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(r.headers()[RETRY_AFTER], "7");
        let r = ApiError::rate_limited("concurrency_limit_exceeded", "wait", None).into_response();
        assert!(r.headers().get(RETRY_AFTER).is_none());
    }
}
