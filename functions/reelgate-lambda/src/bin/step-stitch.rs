//! Lambda function for the workflow step `stitch` of statemachine/video.asl.json.

#[tokio::main]
async fn main() -> Result<(), reelgate_lambda::Error> {
    reelgate_lambda::run_stitch_step().await
}
