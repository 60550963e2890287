//! The HTTP functions: one per API path, and the console's.

use lambda_runtime::Error;

use crate::app::app_or_exit;
use crate::functions;

/// Set to `1` on a function whose Lambda function URL is in `RESPONSE_STREAM` mode: it then
/// answers through Lambda response streaming (SSE chunks leave as the upstream produces them)
/// instead of one buffered API Gateway payload.
pub const RESPONSE_STREAM_ENV: &str = "REELGATE_RESPONSE_STREAM";

/// Serves one HTTP function's routes (one API path, or the console) through `lambda_http` (API
/// Gateway HTTP API payload 2.0, or a function URL). Buffered by default; streamed when
/// [`RESPONSE_STREAM_ENV`] is on. The binary passes its own manifest entry
/// ([`functions::API_UPLOADS`], ...), so it links that path's handlers and no others.
pub async fn run_http(function: &functions::LambdaFunction) -> Result<(), Error> {
    let Some(routes) = function.serves.http_routes() else {
        // A programming error in a binary's one line; say which, at init.
        eprintln!(
            "{} is not an HTTP function: {:?}",
            function.binary, function.serves
        );
        std::process::exit(1);
    };
    let (app, config) = app_or_exit(function).await;
    let router =
        reelgate::adapters::otel::flush_after_each_request(reelgate::api::serve(app, routes()));
    if config.response_stream {
        lambda_http::run_with_streaming_response(router).await
    } else {
        lambda_http::run(router).await
    }
}

/// Serves the member of `shared` that [`functions::FUNCTION_ENV`] names, as [`run_http`] would
/// serve it alone: its own routes only. The binary links its members' handlers, no others.
pub async fn run_http_group(shared: &functions::SharedBootstrap) -> Result<(), Error> {
    run_http(crate::shared::selected_member(shared)).await
}
