//! Lambda function for every method of `/v1/messages` (see `reelgate_lambda::functions`).

#[tokio::main]
async fn main() -> Result<(), reelgate_lambda::Error> {
    reelgate_lambda::run_http(&reelgate_lambda::functions::API_MESSAGES).await
}
