//! Lambda bootstrap shared by the HTTP functions of the item store and the bucket that decode no
//! video: each deployed function runs it with `REELGATE_FUNCTION` naming which it is (see
//! `reelgate_lambda::functions::BUCKET_ROUTES`).

#[tokio::main]
async fn main() -> Result<(), reelgate_lambda::Error> {
    reelgate_lambda::run_http_group(&reelgate_lambda::functions::BUCKET_ROUTES).await
}
