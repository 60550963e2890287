//! Serves the local blob store's presigned URLs: the local stand-in for S3 presigned GET and PUT.
//! No bearer credential: the signature in the URL is the credential, as with S3.

use crate::blobs::{LocalBlobStore, SignatureCheck, UrlSigner, PRESIGNED_ROUTE};
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use futures::TryStreamExt;
use reelgate::api::content::stream_blob;
use reelgate::domain::error::ApiError;
use reelgate::ports::blobs::BlobStore;
use serde::Deserialize;
use std::sync::Arc;

/// What the signed-URL route needs: the blob directory, its signer and the upload limit.
#[derive(Clone)]
pub struct SignedBlobs {
    pub blobs: Arc<LocalBlobStore>,
    pub signer: UrlSigner,
    pub max_upload_bytes: u64,
}

/// The `/blobs/{key}` route of the local server (GET and PUT of presigned URLs).
pub fn routes(state: SignedBlobs) -> Router {
    Router::new()
        .route(
            &format!("{PRESIGNED_ROUTE}/{{*key}}"),
            get(presigned_get).put(presigned_put),
        )
        .with_state(state)
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
    signer: &UrlSigner,
    method: &str,
    key: &str,
    q: &Signed,
    content_type: &str,
) -> Result<(), ApiError> {
    let (Some(expires), Some(signature)) = (q.expires, q.signature.as_deref()) else {
        return Err(denied(SignatureCheck::Invalid));
    };
    match signer.verify(method, key, expires, content_type, signature) {
        SignatureCheck::Valid => Ok(()),
        other => Err(denied(other)),
    }
}

async fn presigned_get(
    State(state): State<SignedBlobs>,
    Path(key): Path<String>,
    Query(q): Query<Signed>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    verify(&state.signer, "GET", &key, &q, "")?;
    stream_blob(state.blobs.as_ref(), &key, &headers, None).await
}

async fn presigned_put(
    State(state): State<SignedBlobs>,
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
    verify(&state.signer, "PUT", &key, &q, &content_type)?;
    let stream = body.into_data_stream().map_err(std::io::Error::other);
    state
        .blobs
        .put_stream(
            &key,
            &content_type,
            Box::pin(stream),
            state.max_upload_bytes,
        )
        .await?;
    Ok(StatusCode::OK.into_response())
}
