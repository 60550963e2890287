//! Lambda function that renders the PDF inputs of the responses path (see
//! `reelgate_lambda::functions`): alone, so its memory size and timeout bound a hostile document.

#[tokio::main]
async fn main() -> Result<(), reelgate_lambda::Error> {
    reelgate_lambda::run_pdf_rasterizer(&reelgate_lambda::functions::PDF_RASTERIZER).await
}
