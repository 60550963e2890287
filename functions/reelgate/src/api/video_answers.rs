//! How a video job is answered over HTTP, for `/v1/videos` and the console alike: the `video`
//! object with the poll hint while it runs, and a create's answer with its rate-limit headers.

use crate::domain::videos::create::CreateAnswer;
use crate::domain::videos::Video;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::Value;

/// How long an SDK poller should wait between reads (OpenAI's SDK honours this header): the
/// spec recommends 10 to 30 seconds, since polling faster does not render faster.
pub const POLL_AFTER_MS: &str = "10000";

/// The `video` object, with the poll hint (`openai-poll-after-ms`) while the job runs.
pub fn with_poll_hint(video: Video) -> Response {
    let running = !video.is_terminal();
    let mut response = Json(video).into_response();
    if running {
        response.headers_mut().insert(
            "openai-poll-after-ms",
            axum::http::HeaderValue::from_static(POLL_AFTER_MS),
        );
    }
    response
}

/// The request's `Idempotency-Key`, raw, for a use case that makes a job. (Each route calls its
/// own use case, so that a Lambda function links only the operation it serves: a create does not
/// carry the decoder an edit of an uploaded file needs.)
pub fn idempotency_key(headers: &HeaderMap) -> Option<&[u8]> {
    headers
        .get(crate::domain::idempotency::HEADER)
        .map(|v| v.as_bytes())
}

/// Renders a create's answer: the rate limits' headers on every answer made under them.
pub fn render_create(answer: CreateAnswer) -> Response {
    match answer {
        CreateAnswer::Replayed(first) => replayed(first),
        CreateAnswer::Existing(video) => with_poll_hint(video),
        CreateAnswer::Limited(limited) => crate::api::rate_limits::refused(limited),
        CreateAnswer::Admitted { result, status } => {
            let mut response = match result {
                Ok(video) => with_poll_hint(video),
                Err(e) => e.into_response(),
            };
            crate::api::rate_limits::apply(&status, response.headers_mut());
            response
        }
    }
}

/// The first answer to an `Idempotency-Key`, sent again as it was.
fn replayed(first: Value) -> Response {
    let running = first["status"]
        .as_str()
        .is_some_and(|s| crate::domain::videos::record::RUNNING.contains(&s));
    let mut response = Json(first).into_response();
    if running {
        response.headers_mut().insert(
            "openai-poll-after-ms",
            axum::http::HeaderValue::from_static(POLL_AFTER_MS),
        );
    }
    response
}
