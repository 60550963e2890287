//! `GET /metrics`: the service's metrics in the Prometheus text format (`observability::metrics`), for
//! the operator's scraper. Off (404, like any unknown URL) unless `REELGATE_METRICS_TOKEN` is
//! set; then only `Authorization: Bearer <that token>` is answered (compared in constant time),
//! anything else is 401. Not an API-key route: customers' keys never open it.

use crate::api::operation::{Answer, Auth, Declared, Operation, DEFAULT};
use crate::app::App;
use crate::domain::error::ApiError;
use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use axum::Router;

pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

pub const METRICS: Operation = Operation {
    path: "/metrics",
    id: "Metrics",
    tag: "service",
    summary: "Prometheus metrics for the operator (`Authorization: Bearer <REELGATE_METRICS_TOKEN>`; 404 while unset)",
    auth: Auth::None,
    ok: &[(200, Answer::Text("text/plain; version=0.0.4; charset=utf-8"))],
    errors: &[401, 404],
    ..DEFAULT
};

pub fn routes() -> Router<App> {
    Router::new().declared(&METRICS, metrics)
}

async fn metrics(State(app): State<App>, headers: HeaderMap) -> Response {
    let Some(token) = app.settings.metrics_token.as_ref() else {
        return crate::api::not_found_path(METRICS.path).into_response();
    };
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    if !token_matches(token.value(), presented) {
        return ApiError::unauthorized(
            "invalid_metrics_token",
            "GET /metrics needs `Authorization: Bearer <REELGATE_METRICS_TOKEN>`.",
        )
        .into_response();
    }
    (
        [(header::CONTENT_TYPE, CONTENT_TYPE)],
        crate::observability::metrics::prometheus_text(),
    )
        .into_response()
}

/// Constant time in the presented value's contents (its length may leak, not the token's bytes).
fn token_matches(expected: &str, presented: &str) -> bool {
    use subtle::ConstantTimeEq;
    expected.len() == presented.len() && bool::from(expected.as_bytes().ct_eq(presented.as_bytes()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn tokens_match_exactly() {
        assert!(super::token_matches("0123456789abcdef", "0123456789abcdef"));
        assert!(!super::token_matches(
            "0123456789abcdef",
            "0123456789abcdeF"
        ));
        assert!(!super::token_matches("0123456789abcdef", "0123456789abcde"));
        assert!(!super::token_matches("0123456789abcdef", ""));
    }
}
