//! The domain's one error type, separate from the wire: a kind, a stable code, a message and
//! the offending parameter. `api/envelope.rs` renders it once as OpenAI's envelope
//! `{"error": {"message", "type", "param", "code"}}` with its HTTP status; the workflow steps
//! map it once to the state machine's error names. The codes are listed in `docs/errors.md`;
//! keep them stable, clients branch on them.

tokio::task_local! {
    /// The id of the request being served (set by the API's request-id middleware), written
    /// into every error body so a caller can quote it and an operator find it in the log.
    pub static REQUEST_ID: String;
}

/// The id of the request this task serves, if any.
pub fn current_request_id() -> Option<String> {
    REQUEST_ID.try_with(Clone::clone).ok()
}

/// What went wrong, in the domain's terms. The API layer maps each kind once to an HTTP status
/// and OpenAI's error `type` (`api/envelope.rs`); the workflow steps map it once to the state
/// machine's error names (`domain/videos/workflow/steps.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The request is malformed or breaks a rule; `param` names the offending parameter.
    InvalidRequest,
    /// No credential, or one that does not authenticate.
    Unauthenticated,
    /// The credential may not do this.
    Forbidden,
    /// The addressed thing does not exist (or is not the caller's, which reads the same).
    NotFound,
    /// No route answers this path.
    UnknownRoute,
    /// The route exists, but not with this method.
    MethodNotAllowed,
    /// The thing is not in a state that allows this (e.g. deleting a running job).
    Conflict,
    /// The balance or a budget does not cover the request.
    QuotaExceeded,
    /// The content is larger than allowed.
    TooLarge,
    /// The client sent its request too slowly (a body that paused or trickled).
    RequestTimeout,
    /// The requested byte range lies outside the content.
    RangeNotSatisfiable,
    /// A rate or concurrency limit refuses the request now; it may be retried, after
    /// `retry_after_secs` when known.
    RateLimited { retry_after_secs: Option<u64> },
    /// A service of ours is unavailable for now; retrying later may succeed.
    Unavailable,
    /// A fault of our own (the detail was logged, not shown).
    Internal,
    /// The model provider could not be reached, or is overloaded.
    UpstreamUnavailable,
    /// The model provider did not answer in time.
    UpstreamTimeout,
    /// The model provider refused the request or answered outside the protocol.
    UpstreamFailed,
}

/// The error every use case answers: a domain [`ErrorKind`], a stable `code` (listed in
/// `docs/errors.md`; clients branch on it), a human sentence and the offending parameter.
/// It knows nothing of HTTP; the API layer renders it as OpenAI's envelope.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub kind: ErrorKind,
    pub code: String,
    pub message: String,
    pub param: Option<String>,
}

impl ApiError {
    pub fn new(kind: ErrorKind, code: &str, message: impl Into<String>) -> Self {
        ApiError {
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

    pub fn with_code(mut self, code: &str) -> Self {
        self.code = code.to_owned();
        self
    }

    /// Invalid input naming the offending parameter (code `invalid_request_error`).
    pub fn invalid(param: &str, message: impl Into<String>) -> Self {
        Self::bad_request(message).with_param(param)
    }

    /// Invalid input about the request as a whole (code `invalid_request_error`).
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidRequest, "invalid_request_error", message)
    }

    pub fn unauthorized(code: &str, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unauthenticated, code, message)
    }

    pub fn forbidden(code: &str, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Forbidden, code, message)
    }

    pub fn not_found(code: &str, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotFound, code, message)
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Conflict, "conflict", message)
    }

    pub fn insufficient_credits(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::QuotaExceeded, "insufficient_credits", message)
    }

    pub fn too_large(code: &str, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::TooLarge, code, message)
    }

    pub fn rate_limited(
        code: &str,
        message: impl Into<String>,
        retry_after_secs: Option<u64>,
    ) -> Self {
        Self::new(ErrorKind::RateLimited { retry_after_secs }, code, message)
    }

    pub fn unavailable(code: &str, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unavailable, code, message)
    }

    /// A fault of our own; the detail goes to the log, not to the caller.
    pub fn internal(context: &str, detail: impl std::fmt::Display) -> Self {
        tracing::error!(context, %detail, "internal error");
        Self::new(
            ErrorKind::Internal,
            "internal_error",
            format!("The server failed while {context}. Try again; the failure was logged."),
        )
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for ApiError {}

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
            crate::ports::blobs::BlobError::TooLarge { limit } => ApiError::too_large(
                "payload_too_large",
                format!("The content is larger than {limit} bytes."),
            ),
            crate::ports::blobs::BlobError::RangeNotSatisfiable { size } => ApiError::new(
                ErrorKind::RangeNotSatisfiable,
                "range_not_satisfiable",
                format!("The requested range is outside the content's {size} bytes."),
            ),
            other => ApiError::internal("using the blob store", other),
        }
    }
}

pub type ApiResult<T> = Result<T, ApiError>;

/// The gateway error a failed upstream call becomes (chat completions and responses alike):
/// unreachable → 503 `upstream_unavailable`; a timeout (status 504/408, or code `timeout`) →
/// 504 `upstream_timeout`; an overloaded or rate-limited upstream (429, 503) → 503
/// `upstream_unavailable`; anything else → 502 `upstream_error`, with the upstream's message
/// so the caller can see, e.g., that its prompt exceeds the context window.
pub fn upstream_error(error: &crate::ports::upstream::UpstreamError) -> ApiError {
    use crate::ports::upstream::UpstreamError;
    match error {
        UpstreamError::Unreachable(m) => ApiError::new(
            ErrorKind::UpstreamUnavailable,
            "upstream_unavailable",
            format!("The model provider is unreachable; try again later. ({m})"),
        ),
        UpstreamError::Rejected {
            status,
            code,
            message,
            ..
        } => {
            if *status == 504 || *status == 408 || code.as_deref() == Some("timeout") {
                ApiError::new(
                    ErrorKind::UpstreamTimeout,
                    "upstream_timeout",
                    format!("The model provider did not answer in time. ({message})"),
                )
            } else if *status == 400 || *status == 422 {
                // The provider's own validation refused what the caller asked (a parameter
                // combination its model does not take): the caller's to fix, not a gateway
                // failure to retry.
                ApiError::new(
                    ErrorKind::InvalidRequest,
                    "upstream_invalid_request",
                    format!(
                        "The model provider refused the request as invalid ({status}): {message}"
                    ),
                )
            } else if *status == 429 || *status == 503 {
                ApiError::new(
                    ErrorKind::UpstreamUnavailable,
                    "upstream_unavailable",
                    format!("The model provider is busy; try again later. ({message})"),
                )
            } else {
                ApiError::new(
                    ErrorKind::UpstreamFailed,
                    "upstream_error",
                    format!("The model provider refused the request ({status}): {message}"),
                )
            }
        }
        UpstreamError::Protocol(m) => ApiError::new(
            ErrorKind::UpstreamFailed,
            "upstream_error",
            format!("The model provider answered outside the protocol: {m}"),
        ),
        // The caller's mistake (e.g. an image URL the guarded fetcher refuses): a 400.
        UpstreamError::InvalidRequest {
            param,
            code,
            message,
        } => ApiError::new(ErrorKind::InvalidRequest, code, message.clone())
            .with_param(param.clone()),
    }
}
