//! Lambda bootstrap shared by a video's edit and extension, which decode the caller's video before they answer: each deployed function runs it with `REELGATE_FUNCTION`
//! naming which it is (see `reelgate_lambda::functions::VIDEO_EDIT_EXTEND`).

#[tokio::main]
async fn main() -> Result<(), reelgate_lambda::Error> {
    reelgate_lambda::run_http_group(&reelgate_lambda::functions::VIDEO_EDIT_EXTEND).await
}
