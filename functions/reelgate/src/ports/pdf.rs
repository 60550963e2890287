//! The PDF rasterizer port: a document's pages as PNG images, rendered somewhere a hostile
//! document cannot take the API process down with it. Its adapters are a child process with
//! memory, CPU and wall-clock limits (`reelgate-embedded`) and a Lambda function of its own
//! (`reelgate-aws`); `crate::adapters::pdf_in_process` renders in the calling process, for
//! the processes that are the renderer and for tests.

use async_trait::async_trait;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PdfError {
    /// The caller's document is refused: a cap of `domain::responses::pdf` (its message, which
    /// names the limit), or the renderer's process limits (the document is too complex). A 400.
    #[error("{0}")]
    Refused(String),
    /// The renderer could not be reached or failed for a reason of its own. A 503.
    #[error("the PDF renderer is unavailable: {0}")]
    Unavailable(String),
    /// Every renderer slot stayed taken for the whole wait (other tenants' documents were
    /// served in turn before this one). A 503 the caller may retry.
    #[error("the PDF renderer stayed busy for {0} s")]
    Busy(u64),
}

impl PdfError {
    /// What a renderer killed at its memory, CPU or time limit means to the caller.
    pub fn too_complex() -> Self {
        PdfError::Refused(format!(
            "the PDF is too complex to render within the renderer's limits \
             ({} MiB of memory, {} s)",
            LIMIT_MEMORY_BYTES >> 20,
            LIMIT_SECONDS
        ))
    }
}

/// The memory a rendering process may map (the child's address space; the Lambda function's
/// memory size is set to match in `infra/template.yaml`).
pub const LIMIT_MEMORY_BYTES: u64 = 1024 * 1024 * 1024;
/// The time one document may take, CPU and wall clock (the Lambda function's timeout too).
pub const LIMIT_SECONDS: u64 = 20;

#[async_trait]
pub trait PdfRasterizer: Send + Sync + 'static {
    /// Every page of `pdf` as a PNG, in order.
    async fn rasterize(&self, pdf: Vec<u8>) -> Result<Vec<Vec<u8>>, PdfError>;
}

/// The stand-in of a host with no renderer: every document fails as unavailable.
pub struct NoRasterizer;

#[async_trait]
impl PdfRasterizer for NoRasterizer {
    async fn rasterize(&self, _pdf: Vec<u8>) -> Result<Vec<Vec<u8>>, PdfError> {
        Err(PdfError::Unavailable(
            "this host has no PDF renderer configured".into(),
        ))
    }
}
