//! Lambda function for the console's chat answer, `POST /console/api/chat/completions`, streamed
//! through its function URL (see `reelgate_lambda::functions` and docs/console.md).

#[tokio::main]
async fn main() -> Result<(), reelgate_lambda::Error> {
    reelgate_lambda::run_http(&reelgate_lambda::functions::CONSOLE_CHAT).await
}
