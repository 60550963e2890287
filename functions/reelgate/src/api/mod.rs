//! The HTTP surface: one axum router holding every route, mounted whole by the local server and
//! route by route by the Lambda binaries. Extractors here turn credentials and bodies into domain
//! values and every rejection into the OpenAI error envelope.

pub mod agreement;
pub mod characters;
pub mod chat;
pub mod chat_answers;
pub mod console;
pub mod content;
pub mod envelope;
pub mod extract;
pub mod files;
pub mod json_scan;
pub mod limits;
pub mod messages;
pub mod metrics;
pub mod models;
pub mod openapi;
pub mod operation;
pub mod origin;
pub mod rate_limits;
pub mod request_id;
pub mod responses;
pub mod uploads;
pub mod usage;
pub mod video_answers;
pub mod videos;
pub mod webhooks;

use crate::api::operation::{schema, Answer, Auth, Declared, Operation, DEFAULT};
use crate::app::App;
use crate::domain::error::ApiError;
use axum::extract::DefaultBodyLimit;
use axum::Router;

/// Every route of the public API as (method, path template), derived from the one declaration
/// of each operation's method and path, [`openapi::OPERATIONS`] (the `/v1` operations and the
/// document itself). The tests check the router, the Lambda manifest and infra/template.yaml
/// against it.
pub static API_ROUTES: std::sync::LazyLock<Vec<(&'static str, &'static str)>> =
    std::sync::LazyLock::new(|| {
        openapi::OPERATIONS
            .iter()
            .filter(|op| op.path.starts_with("/v1/") || op.path == openapi::PATH)
            .map(|op| (op.method, op.path))
            .collect()
    });

/// Every console route as (method, path template), derived from the one declaration of each
/// operation's method and path, [`openapi::OPERATIONS`]; the tests check the router
/// and the console function against it.
pub static CONSOLE_ROUTES: std::sync::LazyLock<Vec<(&'static str, &'static str)>> =
    std::sync::LazyLock::new(|| {
        openapi::OPERATIONS
            .iter()
            .filter(|op| {
                op.path == console::CONSOLE_PAGE.path
                    || op.path.starts_with(console::CONSOLE_PAGE_SLASH.path)
            })
            .map(|op| (op.method, op.path))
            .collect()
    });

/// The routes of one path of the public API (every method it accepts), or the console's: the
/// unit one Lambda function serves (`reelgate_lambda::functions`). A binary that names one of
/// these links only that path's handlers, not the whole service (issue #16's artifact sizes).
pub type PathRoutes = fn() -> Router<App>;

pub const HEALTH: Operation = Operation {
    path: "/health",
    id: "Health",
    tag: "service",
    summary: "Liveness: answers while the process serves",
    auth: Auth::None,
    ok: &[(200, Answer::Json(schema::<crate::api::Health>))],
    errors: &[],
    ..DEFAULT
};

/// The whole service, as the local server mounts it.
pub fn router(app: App) -> Router {
    let routes = Router::new()
        .declared(&HEALTH, health)
        .merge(files::routes())
        .merge(uploads::routes())
        .merge(videos::routes())
        .merge(characters::routes())
        .merge(models::routes())
        .merge(chat::routes())
        .merge(messages::routes())
        .merge(responses::routes())
        .merge(webhooks::routes())
        .merge(usage::routes())
        .merge(metrics::routes())
        .merge(console::routes())
        .merge(openapi::routes());
    serve(app, routes)
}

/// `routes` behind the layers every answer goes through (request id and log line, the front
/// door's origin check, the body budget) with the API's 404 and 405 answers: the whole service
/// locally ([`router`]), one path per Lambda function.
pub fn serve(app: App, routes: Router<App>) -> Router {
    let json_limit = app.settings.max_json_bytes;
    let origin_secrets = app.settings.origin_secrets.clone();
    routes
        // The matched route's template, for the request's log line (`request_id::tag`).
        .route_layer(axum::middleware::from_fn(request_id::note_route))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(json_limit))
        .layer(axum::middleware::from_fn_with_state(
            (
                app.clone(),
                limits::BodyBudget::new(json_limit, app.settings.body_wait),
            ),
            limits::body_budget,
        ))
        // Outermost: a request that did not come through the front door is refused before
        // anything reads its body.
        .layer(axum::middleware::from_fn_with_state(
            origin_secrets,
            origin::guard,
        ))
        .layer(tower_http::trace::TraceLayer::new_for_http())
        // Outermost of all: every answer, a refusal at the front door included, carries the
        // request's id, and everything logged while serving it names that id.
        .layer(axum::middleware::from_fn(request_id::tag))
        .with_state(app)
}

/// `GET /health`: answers while the process serves.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct Health {
    /// `ok`.
    pub status: &'static str,
}

async fn health() -> axum::Json<Health> {
    axum::Json(Health { status: "ok" })
}

async fn not_found(uri: axum::http::Uri) -> ApiError {
    not_found_path(uri.path())
}

/// The answer to an unknown URL (also `GET /metrics` while it is off).
pub fn not_found_path(path: &str) -> ApiError {
    ApiError::new(
        crate::domain::error::ErrorKind::UnknownRoute,
        "unknown_url",
        format!("Unknown request URL: {path}. Check the path and the method."),
    )
}

async fn method_not_allowed(method: axum::http::Method, uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        crate::domain::error::ErrorKind::MethodNotAllowed,
        "method_not_allowed",
        format!("{method} is not allowed on {}.", uri.path()),
    )
}
