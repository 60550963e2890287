//! The blob port: object storage for uploaded files, rendered videos and thumbnails, and the
//! short-lived URLs that let an engine or an upstream model fetch a blob without credentials.

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use std::time::Duration;

pub type ByteStream = BoxStream<'static, Result<Bytes, std::io::Error>>;

/// Inclusive byte range, as in an HTTP `Range: bytes=start-end` header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteRange {
    pub start: u64,
    pub end_inclusive: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlobMeta {
    pub size: u64,
    pub content_type: String,
}

/// One blob in a listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlobListing {
    pub key: String,
    pub size: u64,
}

pub struct BlobRead {
    pub meta: BlobMeta,
    /// The range actually served, when one was asked for.
    pub range: Option<ByteRange>,
    pub body: ByteStream,
}

#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    #[error("no such blob")]
    NotFound,
    #[error("the blob is larger than {limit} bytes")]
    TooLarge { limit: u64 },
    #[error("the requested range is not satisfiable")]
    RangeNotSatisfiable { size: u64 },
    #[error("the upload stream failed: {0}")]
    Source(String),
    #[error("the blob store is unavailable: {0}")]
    Unavailable(String),
}

#[async_trait]
pub trait BlobStore: Send + Sync + 'static {
    /// Streams `body` into the blob `key` without holding it in memory, refusing (and leaving
    /// nothing behind) once it passes `max_bytes`. Returns the stored size.
    async fn put_stream(
        &self,
        key: &str,
        content_type: &str,
        body: ByteStream,
        max_bytes: u64,
    ) -> Result<u64, BlobError>;
    async fn put_bytes(&self, key: &str, content_type: &str, bytes: Bytes)
        -> Result<(), BlobError>;
    async fn head(&self, key: &str) -> Result<Option<BlobMeta>, BlobError>;
    async fn get(&self, key: &str, range: Option<ByteRange>) -> Result<BlobRead, BlobError>;
    /// Deleting an absent blob succeeds.
    async fn delete(&self, key: &str) -> Result<(), BlobError>;
    /// Every blob whose key starts with `prefix`, in key order: what storage reports and
    /// erasure walk. Partial uploads are not listed.
    async fn list(&self, prefix: &str) -> Result<Vec<BlobListing>, BlobError>;
    /// A URL that serves the blob to any HTTP client until `ttl` passes.
    async fn presign_get(&self, key: &str, ttl: Duration) -> Result<String, BlobError>;
    /// A URL that accepts one HTTP PUT of the blob until `ttl` passes.
    async fn presign_put(
        &self,
        key: &str,
        content_type: &str,
        ttl: Duration,
    ) -> Result<String, BlobError>;
}

/// Reads a whole blob into memory (for small blobs: thumbnails, images sent to a model, MP4 probes).
pub async fn read_all(store: &dyn BlobStore, key: &str) -> Result<Bytes, BlobError> {
    use futures::TryStreamExt;
    let read = store.get(key, None).await?;
    let chunks: Vec<Bytes> = read
        .body
        .try_collect()
        .await
        .map_err(|e| BlobError::Unavailable(e.to_string()))?;
    Ok(Bytes::from(chunks.concat()))
}

/// Reads a whole blob, refusing it (`TooLarge`) as soon as more than `max_bytes` have arrived:
/// the read of a stored item on a request path never grows past its limit, whatever the store
/// holds.
pub async fn read_limited(
    store: &dyn BlobStore,
    key: &str,
    max_bytes: u64,
) -> Result<Bytes, BlobError> {
    use futures::StreamExt;
    let mut read = store.get(key, None).await?;
    let mut out = bytes::BytesMut::new();
    while let Some(chunk) = read.body.next().await {
        let chunk = chunk.map_err(|e| BlobError::Unavailable(e.to_string()))?;
        if (out.len() + chunk.len()) as u64 > max_bytes {
            return Err(BlobError::TooLarge { limit: max_bytes });
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out.freeze())
}

/// Copies blob `key` into an unnamed temporary file (removed by the system when the last handle
/// closes, even if the process dies), refusing it (`TooLarge`) once more than `max_bytes` have
/// arrived: a large blob is then read in windows from disk, never held whole in memory.
pub async fn spool_to_temp_file(
    store: &dyn BlobStore,
    key: &str,
    max_bytes: u64,
) -> Result<std::fs::File, BlobError> {
    use futures::StreamExt;
    use tokio::io::AsyncWriteExt;
    let local = |e: std::io::Error| BlobError::Unavailable(format!("the temporary copy: {e}"));
    let file = tempfile::tempfile().map_err(local)?;
    let mut writer = tokio::fs::File::from_std(file.try_clone().map_err(local)?);
    let mut read = store.get(key, None).await?;
    let mut written = 0u64;
    while let Some(chunk) = read.body.next().await {
        let chunk = chunk.map_err(|e| BlobError::Unavailable(e.to_string()))?;
        written += chunk.len() as u64;
        if written > max_bytes {
            return Err(BlobError::TooLarge { limit: max_bytes });
        }
        writer.write_all(&chunk).await.map_err(local)?;
    }
    writer.flush().await.map_err(local)?;
    Ok(file)
}

/// Turns a byte vector into a one-chunk stream.
pub fn stream_of(bytes: Bytes) -> ByteStream {
    Box::pin(futures::stream::once(async move { Ok(bytes) }))
}

/// Resolves an HTTP range against the blob's size (None when absent or unsatisfiable is reported
/// by the caller).
pub fn clamp_range(range: ByteRange, size: u64) -> Result<ByteRange, BlobError> {
    if size == 0 || range.start >= size || range.start > range.end_inclusive {
        return Err(BlobError::RangeNotSatisfiable { size });
    }
    Ok(ByteRange {
        start: range.start,
        end_inclusive: range.end_inclusive.min(size - 1),
    })
}
