//! Serves the local blob store's presigned URLs: the local stand-in for S3 presigned GET and PUT.
//! No bearer credential: the signature in the URL is the credential, as with S3.

use crate::app::App;
use crate::blobs::local::SignatureCheck;
use crate::blobs::{BlobStore, ByteRange};
use crate::error::ApiError;
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use futures::TryStreamExt;
use serde::Deserialize;

pub fn routes() -> Router<App> {
    Router::new().route(
        &format!("{}/{{*key}}", crate::blobs::local::PRESIGNED_ROUTE),
        get(presigned_get).put(presigned_put),
    )
}

#[derive(Deserialize)]
struct Signed {
    expires: Option<i64>,
    signature: Option<String>,
}

fn denied(check: SignatureCheck) -> ApiError {
    match check {
        SignatureCheck::Expired => {
            ApiError::forbidden("url_expired", "This signed URL has expired.")
        }
        _ => ApiError::forbidden("signature_mismatch", "The URL's signature does not match."),
    }
}

fn verify(
    app: &App,
    method: &str,
    key: &str,
    q: &Signed,
    content_type: &str,
) -> Result<(), ApiError> {
    let Some(signer) = &app.local_signer else {
        return Err(ApiError::not_found(
            "unknown_url",
            "Signed blob URLs are not served here.",
        ));
    };
    let (Some(expires), Some(signature)) = (q.expires, q.signature.as_deref()) else {
        return Err(denied(SignatureCheck::Invalid));
    };
    match signer.verify(method, key, expires, content_type, signature) {
        SignatureCheck::Valid => Ok(()),
        other => Err(denied(other)),
    }
}

/// Parses `Range: bytes=a-b` / `bytes=a-` / `bytes=-n` (one range; others are served whole).
pub fn parse_range(headers: &HeaderMap, size: Option<u64>) -> Option<ByteRange> {
    let value = headers.get(header::RANGE)?.to_str().ok()?.trim();
    let spec = value.strip_prefix("bytes=")?;
    if spec.contains(',') {
        return None;
    }
    let (start, end) = spec.split_once('-')?;
    match (start.trim(), end.trim()) {
        ("", suffix) => {
            let n: u64 = suffix.parse().ok()?;
            let size = size?;
            Some(ByteRange {
                start: size.saturating_sub(n),
                end_inclusive: size.saturating_sub(1),
            })
        }
        (s, "") => Some(ByteRange {
            start: s.parse().ok()?,
            end_inclusive: u64::MAX,
        }),
        (s, e) => Some(ByteRange {
            start: s.parse().ok()?,
            end_inclusive: e.parse().ok()?,
        }),
    }
}

/// Streams a blob with `Content-Length`, `Accept-Ranges` and, for a range, 206 + `Content-Range`.
pub async fn stream_blob(
    blobs: &dyn BlobStore,
    key: &str,
    headers: &HeaderMap,
    content_type: Option<&str>,
) -> Result<Response, ApiError> {
    let size = if headers.contains_key(header::RANGE) {
        blobs.head(key).await?.map(|m| m.size)
    } else {
        None
    };
    let range = parse_range(headers, size);
    let read = blobs.get(key, range).await?;
    let content_type = content_type.unwrap_or(&read.meta.content_type).to_owned();
    let mut builder = Response::builder()
        .header(header::CONTENT_TYPE, content_type)
        .header(header::ACCEPT_RANGES, "bytes");
    builder = match read.range {
        Some(r) => builder
            .status(StatusCode::PARTIAL_CONTENT)
            .header(header::CONTENT_LENGTH, r.end_inclusive - r.start + 1)
            .header(
                header::CONTENT_RANGE,
                format!("bytes {}-{}/{}", r.start, r.end_inclusive, read.meta.size),
            ),
        None => builder
            .status(StatusCode::OK)
            .header(header::CONTENT_LENGTH, read.meta.size),
    };
    builder
        .body(Body::from_stream(read.body))
        .map_err(|e| ApiError::internal("building a content response", e))
}

/// Answers with a redirect to a short-lived URL of the blob, for hosts whose responses cannot
/// carry large bodies (Lambda's 6 MB limit).
pub async fn redirect_to_blob(app: &App, key: &str) -> Result<Response, ApiError> {
    let url = app.blobs.presign_get(key, app.settings.presign_ttl).await?;
    Ok((
        StatusCode::FOUND,
        [
            (header::LOCATION, url),
            (header::CACHE_CONTROL, "no-store".to_owned()),
        ],
    )
        .into_response())
}

async fn presigned_get(
    State(app): State<App>,
    Path(key): Path<String>,
    Query(q): Query<Signed>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    verify(&app, "GET", &key, &q, "")?;
    stream_blob(app.blobs.as_ref(), &key, &headers, None).await
}

async fn presigned_put(
    State(app): State<App>,
    Path(key): Path<String>,
    Query(q): Query<Signed>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    verify(&app, "PUT", &key, &q, &content_type)?;
    let stream = body.into_data_stream().map_err(std::io::Error::other);
    app.blobs
        .put_stream(
            &key,
            &content_type,
            Box::pin(stream),
            app.settings.max_upload_bytes,
        )
        .await?;
    Ok(StatusCode::OK.into_response())
}
