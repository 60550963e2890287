//! Lambda function for the console's video routes but cancel, `/console/api/videos` and
//! `/console/api/videos/{proxy+}` (see `reelgate_lambda::functions` and docs/console.md).

#[tokio::main]
async fn main() -> Result<(), reelgate_lambda::Error> {
    reelgate_lambda::run_http(&reelgate_lambda::functions::CONSOLE_VIDEOS).await
}
