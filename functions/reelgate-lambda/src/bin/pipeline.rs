//! Lambda bootstrap shared by the workflow steps of statemachine/video.asl.json, the render and
//! webhook queues' workers and the execution-ended reconciler: each deployed function runs it
//! with `REELGATE_FUNCTION` naming which it is (see `reelgate_lambda::functions::PIPELINE`).

#[tokio::main]
async fn main() -> Result<(), reelgate_lambda::Error> {
    reelgate_lambda::run_pipeline().await
}
