//! Content streaming shared by the routes that return stored bytes (file content, video content
//! and thumbnail): one `Range` request served as 206, or a redirect to a short-lived blob URL
//! where the host cannot carry large bodies.

use crate::app::App;
use crate::domain::error::ApiError;
use crate::ports::blobs::{BlobStore, ByteRange};
use axum::body::Body;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

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
            // No byte to select (an empty blob, or `bytes=-0`): served whole, as a server may
            // ignore a range it cannot satisfy.
            if size == 0 || n == 0 {
                return None;
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn range(value: &str, size: Option<u64>) -> Option<ByteRange> {
        let mut headers = HeaderMap::new();
        headers.insert(header::RANGE, value.parse().expect("header"));
        parse_range(&headers, size)
    }

    #[test]
    fn a_suffix_range_selects_the_last_bytes_and_never_a_byte_that_is_not_there() {
        let last = range("bytes=-713", Some(1000)).expect("range");
        assert_eq!((last.start, last.end_inclusive), (287, 999));
        let longer = range("bytes=-713", Some(10)).expect("range");
        assert_eq!((longer.start, longer.end_inclusive), (0, 9));
        // Found by Schemathesis: `bytes=-713` on an empty file used to ask the blob store for
        // byte 0 and answer 500.
        assert_eq!(range("bytes=-713", Some(0)), None);
        assert_eq!(range("bytes=-0", Some(10)), None);
    }
}
