//! Lambda function for the workflow step `finalize` of statemachine/video.asl.json.

#[tokio::main]
async fn main() -> Result<(), reelgate_lambda::Error> {
    reelgate_lambda::run_finalize_step().await
}
