//! Lambda function for the console playground, `/console` and `/console/{proxy+}` (see
//! `reelgate_lambda::functions` and docs/console.md).

#[tokio::main]
async fn main() -> Result<(), reelgate_lambda::Error> {
    reelgate_lambda::run_http(&reelgate_lambda::functions::CONSOLE).await
}
