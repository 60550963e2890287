//! Lambda function for every method of `/v1/responses/{response_id}` (see `reelgate_lambda::functions`).

#[tokio::main]
async fn main() -> Result<(), reelgate_lambda::Error> {
    reelgate_lambda::run_http(&reelgate_lambda::functions::API_RESPONSE_ITEM).await
}
