//! Lambda function for `/v1/videos/edits` (see `reelgate_lambda::functions`).

#[tokio::main]
async fn main() -> Result<(), reelgate_lambda::Error> {
    reelgate_lambda::run_http(&reelgate_lambda::functions::API_VIDEO_EDITS).await
}
