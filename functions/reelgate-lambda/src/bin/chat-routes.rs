//! Lambda bootstrap shared by the chat answers (chat completions, Messages and the console's
//! chat) and Messages' token count: each deployed function runs it with `REELGATE_FUNCTION`
//! naming which it is (see `reelgate_lambda::functions::CHAT_ROUTES`).

#[tokio::main]
async fn main() -> Result<(), reelgate_lambda::Error> {
    reelgate_lambda::run_http_group(&reelgate_lambda::functions::CHAT_ROUTES).await
}
