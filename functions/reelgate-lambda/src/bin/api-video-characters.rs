//! Lambda function for `/v1/videos/characters` (see `reelgate_lambda::functions`).

#[tokio::main]
async fn main() -> Result<(), reelgate_lambda::Error> {
    reelgate_lambda::run_http(&reelgate_lambda::functions::API_VIDEO_CHARACTERS).await
}
