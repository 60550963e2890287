//! The PDF rasterizer in the calling process (`crate::ports::pdf`).

use crate::ports::pdf::{PdfError, PdfRasterizer};
use async_trait::async_trait;

/// Renders on a blocking thread of this process, with the caps but without the process limits:
/// for tests and for the processes that are the renderer (the child, the Lambda function).
pub struct InProcessRasterizer;

#[async_trait]
impl PdfRasterizer for InProcessRasterizer {
    async fn rasterize(&self, pdf: Vec<u8>) -> Result<Vec<Vec<u8>>, PdfError> {
        match tokio::task::spawn_blocking(move || crate::domain::responses::pdf::rasterize(pdf))
            .await
        {
            Ok(result) => result.map_err(|e| PdfError::Refused(e.to_string())),
            // A panic inside the renderer is a malformed file, not a server fault.
            Err(_) => Err(PdfError::Refused(
                crate::domain::responses::pdf::PdfError::Unreadable.to_string(),
            )),
        }
    }
}
