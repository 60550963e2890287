//! Lambda bootstrap shared by the video admissions that decode no caller's video (create and remix,
//! on the API and in the console): each deployed function runs it with `REELGATE_FUNCTION` naming
//! which it is (see `reelgate_lambda::functions::VIDEO_ADMISSION`).

#[tokio::main]
async fn main() -> Result<(), reelgate_lambda::Error> {
    reelgate_lambda::run_http_group(&reelgate_lambda::functions::VIDEO_ADMISSION).await
}
