//! The AWS PDF rasterizer (`reelgate::ports::pdf`): each document is rendered by a Lambda
//! function of its own (`pdf-rasterizer`, `PdfRasterizerFunction` in `infra/template.yaml`),
//! whose memory size and timeout are the limits a hostile document hits instead of the API
//! function's. The API function does not link the renderer at all.
//!
//! Lambda's synchronous payloads stop at 6 MB, less than a PDF may be, so the document and the
//! page images travel through the bucket under [`SCRATCH_PREFIX`] (a lifecycle rule expires what
//! a failed call leaves there) and the invocation carries only their keys ([`PdfJob`],
//! [`PdfAnswer`]). [`serve_job`] is the function's side.

use async_trait::async_trait;
use reelgate::domain::responses::pdf as render;
use reelgate::ports::blobs::{read_limited, BlobStore};
use reelgate::ports::pdf::{PdfError, PdfRasterizer};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Where documents and page images wait for at most one call.
pub const SCRATCH_PREFIX: &str = "scratch/pdf/";

/// What the API function asks: render the PDF at `input`, write pages under `pages_prefix`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PdfJob {
    pub input: String,
    pub pages_prefix: String,
}

/// What the renderer function answers: the keys of the page images in order, or why the
/// document is refused (a cap's message).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PdfAnswer {
    Pages(Vec<String>),
    Refused(String),
}

pub struct LambdaPdfRasterizer {
    client: aws_sdk_lambda::Client,
    function: String,
    blobs: Arc<dyn BlobStore>,
}

impl LambdaPdfRasterizer {
    /// `function`: the renderer function's name or ARN (`REELGATE_PDF_FUNCTION`); `blobs`: the
    /// bucket both functions reach.
    pub fn new(config: &aws_config::SdkConfig, function: &str, blobs: Arc<dyn BlobStore>) -> Self {
        LambdaPdfRasterizer {
            client: aws_sdk_lambda::Client::new(config),
            function: function.to_owned(),
            blobs,
        }
    }

    async fn invoke(&self, job: &PdfJob) -> Result<Vec<Vec<u8>>, PdfError> {
        let payload = serde_json::to_vec(job).map_err(|e| PdfError::Unavailable(e.to_string()))?;
        let out = self
            .client
            .invoke()
            .function_name(&self.function)
            .payload(aws_sdk_lambda::primitives::Blob::new(payload))
            .send()
            .await
            .map_err(|e| {
                PdfError::Unavailable(format!(
                    "invoking {}: {}",
                    self.function,
                    aws_sdk_lambda::error::DisplayErrorContext(&e)
                ))
            })?;
        let body = out.payload().map(|b| b.as_ref()).unwrap_or_default();
        if out.function_error().is_some() {
            return Err(function_error(body));
        }
        let answer: PdfAnswer = serde_json::from_slice(body).map_err(|e| {
            PdfError::Unavailable(format!("the renderer's answer is malformed: {e}"))
        })?;
        let keys = match answer {
            PdfAnswer::Refused(why) => return Err(PdfError::Refused(why)),
            PdfAnswer::Pages(keys) => keys,
        };
        // Only keys of this call are read back, within the output cap.
        if keys.len() > render::MAX_PAGES || keys.iter().any(|k| !k.starts_with(&job.pages_prefix))
        {
            return Err(PdfError::Unavailable(
                "the renderer answered keys outside its call".into(),
            ));
        }
        let mut pages = Vec::with_capacity(keys.len());
        let mut left = render::MAX_OUTPUT_BYTES;
        for key in &keys {
            let png = read_limited(self.blobs.as_ref(), key, left)
                .await
                .map_err(|e| PdfError::Unavailable(format!("reading {key}: {e}")))?;
            left = left.saturating_sub(png.len() as u64);
            pages.push(png.to_vec());
        }
        Ok(pages)
    }
}

/// A function error: the document ran the function out of memory or time (a 400 for the
/// caller), or the function failed for a reason of its own.
pub fn function_error(body: &[u8]) -> PdfError {
    let error: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let kind = error["errorType"].as_str().unwrap_or_default();
    let message = error["errorMessage"].as_str().unwrap_or_default();
    // Out of memory, killed or aborted (an allocation past the memory size), or timed out.
    let limit = matches!(
        kind,
        "Runtime.OutOfMemory" | "Runtime.ExitError" | "Sandbox.Timedout"
    ) || message.contains("timed out");
    if limit {
        tracing::warn!(kind, message, "PDF renderer function stopped at a limit");
        PdfError::too_complex()
    } else {
        PdfError::Unavailable(format!("the renderer function failed: {kind}: {message}"))
    }
}

#[async_trait]
impl PdfRasterizer for LambdaPdfRasterizer {
    async fn rasterize(&self, pdf: Vec<u8>) -> Result<Vec<Vec<u8>>, PdfError> {
        let call = format!("{SCRATCH_PREFIX}{}/", reelgate::domain::ids::new_id("pdf"));
        let job = PdfJob {
            input: format!("{call}input.pdf"),
            pages_prefix: format!("{call}page-"),
        };
        self.blobs
            .put_bytes(&job.input, "application/pdf", pdf.into())
            .await
            .map_err(|e| PdfError::Unavailable(format!("staging the PDF: {e}")))?;
        let result = self.invoke(&job).await;
        // What this call staged goes now; a failure here is left to the lifecycle rule.
        if let Ok(left) = self.blobs.list(&call).await {
            for blob in left {
                let _ = self.blobs.delete(&blob.key).await;
            }
        }
        result
    }
}

/// The renderer function's side of one call: reads the document (at most
/// `render::MAX_INPUT_BYTES`), renders it with the caps on a blocking thread, writes the pages.
/// A refusal is an answer, not an error: only a fault of the bucket fails the invocation.
pub async fn serve_job(blobs: &dyn BlobStore, job: &PdfJob) -> anyhow::Result<PdfAnswer> {
    if !job.input.starts_with(SCRATCH_PREFIX) || !job.pages_prefix.starts_with(SCRATCH_PREFIX) {
        anyhow::bail!("the job names keys outside {SCRATCH_PREFIX}");
    }
    let pdf = match read_limited(blobs, &job.input, render::MAX_INPUT_BYTES).await {
        Ok(pdf) => pdf.to_vec(),
        Err(reelgate::ports::blobs::BlobError::TooLarge { limit }) => {
            return Ok(PdfAnswer::Refused(format!(
                "the PDF is larger than {limit} bytes"
            )))
        }
        Err(e) => anyhow::bail!("reading {}: {e}", job.input),
    };
    let pages = match reelgate::adapters::pdf_in_process::InProcessRasterizer
        .rasterize(pdf)
        .await
    {
        Ok(pages) => pages,
        Err(PdfError::Refused(why)) => return Ok(PdfAnswer::Refused(why)),
        Err(e) => anyhow::bail!("{e}"),
    };
    let mut keys = Vec::with_capacity(pages.len());
    for (i, png) in pages.into_iter().enumerate() {
        let key = format!("{}{:03}.png", job.pages_prefix, i + 1);
        blobs
            .put_bytes(&key, "image/png", png.into())
            .await
            .map_err(|e| anyhow::anyhow!("writing {key}: {e}"))?;
        keys.push(key);
    }
    Ok(PdfAnswer::Pages(keys))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_function_stopped_at_a_limit_is_the_documents_fault_and_anything_else_ours() {
        for body in [
            r#"{"errorType":"Runtime.OutOfMemory","errorMessage":"Runtime exited with error: signal: killed"}"#,
            r#"{"errorType":"Runtime.ExitError","errorMessage":"Runtime exited with error: signal: aborted"}"#,
            r#"{"errorType":"Sandbox.Timedout","errorMessage":"Task timed out after 25.00 seconds"}"#,
            r#"{"errorMessage":"2026-11-26T00:00:00Z 1 Task timed out after 25.00 seconds"}"#,
        ] {
            assert_eq!(
                function_error(body.as_bytes()),
                PdfError::too_complex(),
                "{body}"
            );
        }
        for body in [
            r#"{"errorType":"AccessDeniedException","errorMessage":"no"}"#,
            "not json",
        ] {
            assert!(
                matches!(function_error(body.as_bytes()), PdfError::Unavailable(_)),
                "{body}"
            );
        }
    }

    #[test]
    fn the_answer_travels_as_tagged_json() {
        let answer = PdfAnswer::Pages(vec!["scratch/pdf/x/page-001.png".into()]);
        let text = serde_json::to_string(&answer).unwrap();
        assert_eq!(text, r#"{"pages":["scratch/pdf/x/page-001.png"]}"#);
        assert_eq!(serde_json::from_str::<PdfAnswer>(&text).unwrap(), answer);
        let refused = serde_json::to_string(&PdfAnswer::Refused("too big".into())).unwrap();
        assert_eq!(refused, r#"{"refused":"too big"}"#);
    }
}
