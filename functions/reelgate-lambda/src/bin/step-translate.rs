//! Lambda function for the workflow step `translate` of statemachine/video.asl.json.

#[tokio::main]
async fn main() -> Result<(), reelgate_lambda::Error> {
    reelgate_lambda::run_translate_step().await
}
