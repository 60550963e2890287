//! Lambda function for the workflow step `fail_job` of statemachine/video.asl.json.

#[tokio::main]
async fn main() -> Result<(), reelgate_lambda::Error> {
    reelgate_lambda::run_fail_job_step().await
}
