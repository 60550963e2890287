//! Lambda bootstrap shared by the HTTP functions of the item store alone and upload creation
//! (which presigns): each deployed function runs it with `REELGATE_FUNCTION` naming which it is
//! (see `reelgate_lambda::functions::STORE_ROUTES`).

#[tokio::main]
async fn main() -> Result<(), reelgate_lambda::Error> {
    reelgate_lambda::run_http_group(&reelgate_lambda::functions::STORE_ROUTES).await
}
