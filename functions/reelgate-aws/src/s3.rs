//! The blob store on one S3 bucket; its presigned URLs come from [`S3Presigner`].

use crate::errors::{describe, service_code};
use crate::s3_presign::S3Presigner;
use async_trait::async_trait;
use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_s3::primitives::ByteStream as S3Body;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use aws_sdk_s3::Client;
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use reelgate::ports::blobs::{
    clamp_range, BlobError, BlobListing, BlobMeta, BlobRead, BlobStore, ByteRange, ByteStream,
};
use std::time::Duration;

/// Bytes buffered before a multipart upload part is sent (S3's minimum part is 5 MiB).
pub const PART_SIZE: usize = 8 * 1024 * 1024;

/// The S3 adapter of [`BlobStore`].
#[derive(Clone, Debug)]
pub struct S3BlobStore {
    client: Client,
    bucket: String,
    presigner: S3Presigner,
}

/// A multipart upload in progress.
struct Multipart {
    upload_id: String,
    parts: Vec<CompletedPart>,
}

impl S3BlobStore {
    /// `path_style` addresses the bucket in the path rather than the host name, which a local
    /// emulator needs (its host name has no bucket subdomains).
    pub fn new(config: &aws_config::SdkConfig, bucket: &str, path_style: bool) -> Self {
        let s3_config = aws_sdk_s3::config::Builder::from(config)
            .force_path_style(path_style)
            .build();
        S3BlobStore {
            client: Client::from_conf(s3_config),
            bucket: bucket.to_owned(),
            presigner: S3Presigner::new(config, bucket, path_style),
        }
    }

    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    async fn upload_part(
        &self,
        key: &str,
        upload: &mut Option<Multipart>,
        content_type: &str,
        part: Bytes,
    ) -> Result<(), BlobError> {
        if upload.is_none() {
            let created = self
                .client
                .create_multipart_upload()
                .bucket(&self.bucket)
                .key(key)
                .content_type(content_type)
                .send()
                .await
                .map_err(unavailable)?;
            let upload_id = created
                .upload_id()
                .ok_or_else(|| BlobError::Unavailable("S3 returned no upload id".into()))?;
            *upload = Some(Multipart {
                upload_id: upload_id.to_owned(),
                parts: Vec::new(),
            });
        }
        let Some(state) = upload.as_mut() else {
            return Err(BlobError::Unavailable("no multipart upload".into()));
        };
        let number = i32::try_from(state.parts.len() + 1)
            .map_err(|_| BlobError::Unavailable("too many parts".into()))?;
        let out = self
            .client
            .upload_part()
            .bucket(&self.bucket)
            .key(key)
            .upload_id(&state.upload_id)
            .part_number(number)
            .body(S3Body::from(part))
            .send()
            .await
            .map_err(unavailable)?;
        state.parts.push(
            CompletedPart::builder()
                .part_number(number)
                .set_e_tag(out.e_tag().map(str::to_owned))
                .build(),
        );
        Ok(())
    }

    /// Reads `body` into S3; on any error the caller aborts `upload`.
    async fn stream_into(
        &self,
        key: &str,
        content_type: &str,
        mut body: ByteStream,
        max_bytes: u64,
        upload: &mut Option<Multipart>,
    ) -> Result<u64, BlobError> {
        let mut buffer = BytesMut::new();
        let mut total: u64 = 0;
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|e| BlobError::Source(e.to_string()))?;
            total = total.saturating_add(chunk.len() as u64);
            if total > max_bytes {
                return Err(BlobError::TooLarge { limit: max_bytes });
            }
            buffer.extend_from_slice(&chunk);
            if buffer.len() >= PART_SIZE {
                let part = buffer.split().freeze();
                self.upload_part(key, upload, content_type, part).await?;
            }
        }
        if upload.is_none() {
            // Fits one part: a single PutObject.
            self.put_bytes(key, content_type, buffer.freeze()).await?;
            return Ok(total);
        }
        if !buffer.is_empty() {
            self.upload_part(key, upload, content_type, buffer.freeze())
                .await?;
        }
        let Some(state) = upload.as_ref() else {
            return Err(BlobError::Unavailable("no multipart upload".into()));
        };
        self.client
            .complete_multipart_upload()
            .bucket(&self.bucket)
            .key(key)
            .upload_id(&state.upload_id)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .set_parts(Some(state.parts.clone()))
                    .build(),
            )
            .send()
            .await
            .map_err(unavailable)?;
        Ok(total)
    }

    async fn size_of(&self, key: &str) -> Result<u64, BlobError> {
        self.head(key)
            .await?
            .map(|m| m.size)
            .ok_or(BlobError::NotFound)
    }
}

fn unavailable<E, R>(err: SdkError<E, R>) -> BlobError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    BlobError::Unavailable(describe(&err))
}

/// Parses `bytes START-END/SIZE`.
fn parse_content_range(header: &str) -> Option<(ByteRange, u64)> {
    let rest = header.trim().strip_prefix("bytes ")?;
    let (span, size) = rest.split_once('/')?;
    let (start, end) = span.split_once('-')?;
    let range = ByteRange {
        start: start.trim().parse().ok()?,
        end_inclusive: end.trim().parse().ok()?,
    };
    Some((range, size.trim().parse().ok()?))
}

fn range_header(range: ByteRange) -> String {
    if range.end_inclusive == u64::MAX {
        format!("bytes={}-", range.start)
    } else {
        format!("bytes={}-{}", range.start, range.end_inclusive)
    }
}

/// The S3 body as the port's stream; it ends after the first error.
fn body_stream(body: S3Body) -> ByteStream {
    Box::pin(futures::stream::unfold(Some(body), |state| async move {
        let mut body = state?;
        match body.try_next().await {
            Ok(Some(bytes)) => Some((Ok(bytes), Some(body))),
            Ok(None) => None,
            Err(e) => Some((Err(std::io::Error::other(e)), None)),
        }
    }))
}

#[async_trait]
impl BlobStore for S3BlobStore {
    async fn put_stream(
        &self,
        key: &str,
        content_type: &str,
        body: ByteStream,
        max_bytes: u64,
    ) -> Result<u64, BlobError> {
        let mut upload = None;
        let result = self
            .stream_into(key, content_type, body, max_bytes, &mut upload)
            .await;
        if result.is_err() {
            if let Some(state) = upload {
                // Leave nothing behind; a failed abort is left to the bucket's lifecycle rule
                // for incomplete multipart uploads.
                let aborted = self
                    .client
                    .abort_multipart_upload()
                    .bucket(&self.bucket)
                    .key(key)
                    .upload_id(&state.upload_id)
                    .send()
                    .await;
                if let Err(e) = aborted {
                    tracing::warn!(key, error = %describe(&e), "could not abort a multipart upload");
                }
            }
        }
        result
    }

    async fn put_bytes(
        &self,
        key: &str,
        content_type: &str,
        bytes: Bytes,
    ) -> Result<(), BlobError> {
        self.client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .content_type(content_type)
            .body(S3Body::from(bytes))
            .send()
            .await
            .map_err(unavailable)?;
        Ok(())
    }

    async fn head(&self, key: &str) -> Result<Option<BlobMeta>, BlobError> {
        match self
            .client
            .head_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
        {
            Ok(out) => Ok(Some(BlobMeta {
                size: out.content_length().unwrap_or(0).max(0) as u64,
                content_type: out
                    .content_type()
                    .unwrap_or("application/octet-stream")
                    .to_owned(),
            })),
            Err(e) if e.as_service_error().is_some_and(|s| s.is_not_found()) => Ok(None),
            Err(e) if e.raw_response().is_some_and(|r| r.status().as_u16() == 404) => Ok(None),
            Err(e) => Err(unavailable(e)),
        }
    }

    async fn get(&self, key: &str, range: Option<ByteRange>) -> Result<BlobRead, BlobError> {
        if let Some(r) = range {
            // S3 ignores a malformed range and serves the whole object; refuse it as a range.
            if r.start > r.end_inclusive {
                let size = self.size_of(key).await?;
                return Err(BlobError::RangeNotSatisfiable { size });
            }
        }
        let result = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .set_range(range.map(range_header))
            .send()
            .await;
        let out = match result {
            Ok(out) => out,
            Err(e) => {
                return Err(match service_code(&e) {
                    Some("NoSuchKey" | "NotFound") => BlobError::NotFound,
                    Some("InvalidRange") => {
                        let size = self.size_of(key).await?;
                        // An empty object has no satisfiable range either.
                        BlobError::RangeNotSatisfiable { size }
                    }
                    _ => unavailable(e),
                });
            }
        };
        let content_type = out
            .content_type()
            .unwrap_or("application/octet-stream")
            .to_owned();
        let length = out.content_length().unwrap_or(0).max(0) as u64;
        let (served, size) = match (range, out.content_range().and_then(parse_content_range)) {
            (Some(_), Some((served, size))) => (Some(served), size),
            // A range over an empty object, or a server that ignored the range.
            (Some(r), None) => (Some(clamp_range(r, length)?), length),
            (None, _) => (None, length),
        };
        Ok(BlobRead {
            meta: BlobMeta { size, content_type },
            range: served,
            body: body_stream(out.body),
        })
    }

    async fn delete(&self, key: &str) -> Result<(), BlobError> {
        self.client
            .delete_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
            .map_err(unavailable)?;
        Ok(())
    }

    async fn list(&self, prefix: &str) -> Result<Vec<BlobListing>, BlobError> {
        let mut found = Vec::new();
        let mut pages = self
            .client
            .list_objects_v2()
            .bucket(&self.bucket)
            .prefix(prefix)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(unavailable)?;
            for object in page.contents() {
                if let Some(key) = object.key() {
                    found.push(BlobListing {
                        key: key.to_owned(),
                        size: object.size().unwrap_or_default().max(0) as u64,
                    });
                }
            }
        }
        found.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(found)
    }

    async fn presign_get(&self, key: &str, ttl: Duration) -> Result<String, BlobError> {
        self.presigner.presign_get(key, ttl).await
    }

    async fn presign_put(
        &self,
        key: &str,
        content_type: &str,
        ttl: Duration,
    ) -> Result<String, BlobError> {
        // The content type is a signed header: the uploader must send exactly this one.
        self.presigner.presign_put(key, content_type, ttl).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_range_parses() {
        assert_eq!(
            parse_content_range("bytes 6-9/16"),
            Some((
                ByteRange {
                    start: 6,
                    end_inclusive: 9
                },
                16
            ))
        );
        assert_eq!(parse_content_range("bytes */16"), None);
    }

    #[test]
    fn open_ranges_omit_the_end() {
        let r = ByteRange {
            start: 11,
            end_inclusive: u64::MAX,
        };
        assert_eq!(range_header(r), "bytes=11-");
    }
}
