//! Lambda function for the workflow step `moderate` of statemachine/video.asl.json.

#[tokio::main]
async fn main() -> Result<(), reelgate_lambda::Error> {
    reelgate_lambda::run_moderate_step().await
}
