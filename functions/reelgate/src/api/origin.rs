//! The front door's origin check (docs/deploy.md, "One front door").
//!
//! On AWS every request reaches the service through one CloudFront distribution, which adds
//! [`ORIGIN_SECRET_HEADER`] to each origin request. With `REELGATE_ORIGIN_SECRET` set, a request
//! without that header's exact value is refused (403) before any route sees it, so the HTTP API's
//! and the function URLs' own addresses serve nothing.
//!
//! CloudFront signs the requests it sends to a Lambda function URL (origin access control), which
//! replaces the caller's `Authorization` header with its SigV4 signature. A CloudFront function
//! therefore copies the caller's `Authorization` into [`RELAYED_AUTHORIZATION_HEADER`] at the
//! edge, on every behaviour. Behind a valid origin secret the service takes the caller's
//! credentials from that header only (and none when it is absent); without a configured secret
//! the relayed header is dropped unread, so nobody can smuggle credentials past the check.
//! `/health` answers without the secret: it reveals nothing and local probes use it.

use crate::config::OriginSecrets;
use crate::domain::error::ApiError;
use axum::extract::{Request, State};
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

/// The header CloudFront adds to every origin request (an origin custom header).
pub const ORIGIN_SECRET_HEADER: &str = "x-reelgate-origin-secret";
/// The header the edge copies the caller's `Authorization` into.
pub const RELAYED_AUTHORIZATION_HEADER: &str = "x-reelgate-authorization";

/// True when `presented` equals one of the accepted secrets. Each comparison runs in time
/// independent of where the bytes differ, and every accepted secret is compared.
pub fn secret_matches(presented: &[u8], accepted: &OriginSecrets) -> bool {
    let mut matched = subtle::Choice::from(0u8);
    for secret in accepted.values() {
        matched |= presented.ct_eq(secret.as_bytes());
    }
    bool::from(matched)
}

/// The middleware (`axum::middleware::from_fn_with_state`) the router wears.
pub async fn guard(
    State(secrets): State<Option<OriginSecrets>>,
    mut req: Request,
    next: Next,
) -> Response {
    let headers = req.headers_mut();
    // Only ever trusted behind a valid origin secret; never passed on.
    let relayed = headers.remove(RELAYED_AUTHORIZATION_HEADER);
    let Some(secrets) = secrets else {
        return next.run(req).await;
    };
    if req.uri().path() == crate::api::HEALTH.path {
        req.headers_mut().remove(ORIGIN_SECRET_HEADER);
        return next.run(req).await;
    }
    let path = req.uri().path().to_owned();
    let headers = req.headers_mut();
    let presented: Vec<_> = headers
        .get_all(ORIGIN_SECRET_HEADER)
        .iter()
        .cloned()
        .collect();
    headers.remove(ORIGIN_SECRET_HEADER);
    let valid = match presented.as_slice() {
        [one] => secret_matches(one.as_bytes(), &secrets),
        _ => false,
    };
    if !valid {
        tracing::info!(
            path = path.as_str(),
            with_header = !presented.is_empty(),
            "refused a request that did not come through the front door"
        );
        return ApiError::forbidden(
            "origin_forbidden",
            "This address does not serve the API directly. Use the service's public base URL.",
        )
        .into_response();
    }
    // Behind the door, the caller's credentials are the relayed ones (CloudFront's own
    // signature, or nothing, is what `Authorization` holds at a function URL).
    headers.remove(AUTHORIZATION);
    if let Some(value) = relayed {
        headers.insert(AUTHORIZATION, value);
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::{HeaderMap, StatusCode};
    use axum::routing::get;
    use axum::Router;
    use tower::ServiceExt;

    const SECRET: &str = "0123456789abcdef0123456789abcdef-primary";
    const OTHER: &str = "fedcba9876543210fedcba9876543210-rotated";

    /// A router whose one route echoes the headers the handlers would see.
    fn echo(secrets: Option<OriginSecrets>) -> Router {
        async fn show(headers: HeaderMap) -> String {
            let get = |n: &str| {
                headers
                    .get(n)
                    .map(|v| v.to_str().unwrap_or("?").to_owned())
                    .unwrap_or_else(|| "-".into())
            };
            format!(
                "auth={} relayed={} secret={}",
                get("authorization"),
                get(RELAYED_AUTHORIZATION_HEADER),
                get(ORIGIN_SECRET_HEADER)
            )
        }
        Router::new()
            .route("/v1/models", get(show))
            .route("/health", get(show))
            .layer(axum::middleware::from_fn_with_state(secrets, guard))
    }

    async fn call(router: Router, path: &str, headers: &[(&str, &str)]) -> (StatusCode, String) {
        let mut req = axum::http::Request::get(path);
        for (n, v) in headers {
            req = req.header(*n, *v);
        }
        let res = router
            .oneshot(req.body(Body::empty()).expect("request"))
            .await
            .expect("response");
        let status = res.status();
        let body = axum::body::to_bytes(res.into_body(), 1 << 20)
            .await
            .expect("body");
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    fn secrets(values: &[&str]) -> Option<OriginSecrets> {
        OriginSecrets::new(values.iter().map(|v| v.to_string()))
    }

    #[tokio::test]
    async fn without_the_exact_secret_nothing_is_served() {
        let router = echo(secrets(&[SECRET]));
        let mut near_misses = vec![
            String::new(),
            SECRET[..SECRET.len() - 1].to_owned(),
            format!("{SECRET}x"),
            SECRET.to_uppercase(),
            format!(" {SECRET}"),
        ];
        // Same length, one byte different, at the start and at the end.
        near_misses.push(format!("1{}", &SECRET[1..]));
        near_misses.push(format!("{}X", &SECRET[..SECRET.len() - 1]));
        let (status, body) = call(router.clone(), "/v1/models", &[]).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        let envelope: serde_json::Value = serde_json::from_str(&body).expect("envelope");
        assert_eq!(envelope["error"]["code"], "origin_forbidden");
        assert_eq!(envelope["error"]["type"], "permission_error");
        for wrong in &near_misses {
            let (status, body) = call(
                router.clone(),
                "/v1/models",
                &[(ORIGIN_SECRET_HEADER, wrong), ("authorization", "Bearer k")],
            )
            .await;
            assert_eq!(
                status,
                StatusCode::FORBIDDEN,
                "{wrong:?} was let in: {body}"
            );
        }
        // Two values (the right one among them) are refused too.
        let (status, _) = call(
            router,
            "/v1/models",
            &[(ORIGIN_SECRET_HEADER, SECRET), (ORIGIN_SECRET_HEADER, "x")],
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN);
    }

    #[tokio::test]
    async fn behind_the_secret_the_callers_key_is_the_relayed_one_only() {
        let router = echo(secrets(&[SECRET]));
        // CloudFront's signature in Authorization, the caller's key relayed.
        let (status, body) = call(
            router.clone(),
            "/v1/models",
            &[
                (ORIGIN_SECRET_HEADER, SECRET),
                ("authorization", "AWS4-HMAC-SHA256 Credential=cloudfront"),
                (RELAYED_AUTHORIZATION_HEADER, "Bearer rgk_caller"),
            ],
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body, "auth=Bearer rgk_caller relayed=- secret=-");
        // No relayed key: no credentials at all, whatever Authorization held.
        let (status, body) = call(
            router,
            "/v1/models",
            &[
                (ORIGIN_SECRET_HEADER, SECRET),
                ("authorization", "AWS4-HMAC-SHA256 Credential=cloudfront"),
            ],
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body, "auth=- relayed=- secret=-");
    }

    #[tokio::test]
    async fn during_a_rotation_both_secrets_open_the_door() {
        let router = echo(secrets(&[SECRET, OTHER]));
        for s in [SECRET, OTHER] {
            let (status, body) = call(
                router.clone(),
                "/v1/models",
                &[
                    (ORIGIN_SECRET_HEADER, s),
                    (RELAYED_AUTHORIZATION_HEADER, "Bearer k"),
                ],
            )
            .await;
            assert_eq!(status, StatusCode::OK, "{body}");
            assert_eq!(body, "auth=Bearer k relayed=- secret=-");
        }
        assert!(!secret_matches(
            b"neither",
            &secrets(&[SECRET, OTHER]).unwrap()
        ));
    }

    #[tokio::test]
    async fn without_a_configured_secret_the_relayed_header_is_ignored() {
        let router = echo(None);
        let (status, body) = call(
            router,
            "/v1/models",
            &[(RELAYED_AUTHORIZATION_HEADER, "Bearer smuggled")],
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body, "auth=- relayed=- secret=-");
    }

    #[tokio::test]
    async fn health_answers_without_the_secret() {
        let (status, _) = call(echo(secrets(&[SECRET])), "/health", &[]).await;
        assert_eq!(status, StatusCode::OK);
    }
}
