//! Lambda function for EventBridge's Step Functions execution status changes (failed, timed
//! out, aborted) of the video state machine.

#[tokio::main]
async fn main() -> Result<(), reelgate_lambda::Error> {
    reelgate_lambda::run_execution_ended().await
}
