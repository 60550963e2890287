//! Lambda function for the console's Cancel button, `/console/api/videos/{video_id}/cancel` (see
//! `reelgate_lambda::functions` and docs/console.md).

#[tokio::main]
async fn main() -> Result<(), reelgate_lambda::Error> {
    reelgate_lambda::run_http(&reelgate_lambda::functions::CONSOLE_VIDEO_CANCEL).await
}
