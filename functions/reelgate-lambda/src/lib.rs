//! reelgate on AWS Lambda. The binaries in `src/bin/` are one line each: an HTTP function's
//! ([`run_http`]) or the PDF renderer's, or a bootstrap shared by several functions
//! ([`functions::SharedBootstrap`]), which becomes the function its environment names: HTTP
//! functions grouped by the ports they use ([`run_http_group`]), or the workflow steps, the queue
//! workers and the reconciler ([`run_pipeline`]: [`run_moderate_step`], ..., [`run_worker`]).
//! Every piece of behaviour lives in the `reelgate` library; this crate only builds the
//! [`App`](reelgate::app::App) over the AWS adapters ([`aws_app`]) and adapts Lambda events to it.
//!
//! [`functions::FUNCTIONS`] is the manifest of the binaries; `tests/infra_consistency.rs` checks
//! it against `infra/template.yaml`, `src/bin/` and `reelgate::api::API_ROUTES`.

pub mod functions;
pub mod ports;

mod app;
mod http;
mod pdf_rasterizer;
mod pipeline;
mod reconciler;
mod render_worker;
mod shared;
mod steps;
mod webhook_worker;

pub use app::{aws_app, flush_traces, init_tracing};
pub use http::{run_http, run_http_group, RESPONSE_STREAM_ENV};
pub use lambda_runtime::Error;
pub use pdf_rasterizer::run_pdf_rasterizer;
pub use pipeline::run_pipeline;
pub use reconciler::{
    handle_execution_ended, handle_recovery, run_execution_ended, ExecutionStatusChange,
    RECOVERY_GRACE,
};
pub use render_worker::{handle_sqs_batch, run_worker};
pub use steps::{
    run_fail_job_step, run_finalize_step, run_moderate_step, run_stitch_step, run_translate_step,
};
pub use webhook_worker::{handle_webhook_batch, run_webhook_worker};
