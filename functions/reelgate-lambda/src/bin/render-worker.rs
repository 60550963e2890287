//! Lambda function consuming the render queue (SQS event source) through the render worker.

#[tokio::main]
async fn main() -> Result<(), reelgate_lambda::Error> {
    reelgate_lambda::run_worker().await
}
