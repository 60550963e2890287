//! Lambda function for the console playground's pages, sign-in and account routes, `/console`
//! and `/console/{proxy+}` but for the video routes and the chat answer (see
//! `reelgate_lambda::functions` and docs/console.md).

#[tokio::main]
async fn main() -> Result<(), reelgate_lambda::Error> {
    reelgate_lambda::run_http(&reelgate_lambda::functions::CONSOLE).await
}
