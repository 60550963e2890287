//! Lambda function for every method of `/v1/messages/count_tokens` (see `reelgate_lambda::functions`).

#[tokio::main]
async fn main() -> Result<(), reelgate_lambda::Error> {
    reelgate_lambda::run_http(&reelgate_lambda::functions::API_MESSAGES_COUNT_TOKENS).await
}
