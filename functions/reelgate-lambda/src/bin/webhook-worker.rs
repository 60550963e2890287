//! Lambda function consuming the webhook queue (SQS event source): delivers webhook events.

#[tokio::main]
async fn main() -> Result<(), reelgate_lambda::Error> {
    reelgate_lambda::run_webhook_worker().await
}
