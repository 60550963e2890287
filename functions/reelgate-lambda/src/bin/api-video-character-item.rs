//! Lambda function for `/v1/videos/characters/{character_id}` (see `reelgate_lambda::functions`).

#[tokio::main]
async fn main() -> Result<(), reelgate_lambda::Error> {
    reelgate_lambda::run_http(&reelgate_lambda::functions::API_VIDEO_CHARACTER_ITEM).await
}
