//! Each HTTP function answers exactly its own path (issue #16: a binary links only its path's
//! handlers). Every binary passes its own manifest constant to its runner; each function's
//! routes, behind the service's common layers, serve every method `API_ROUTES` lists for its
//! path and no other function's path, as API Gateway would route them.

mod support;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use reelgate::config::Settings;
use reelgate::domain::catalog::Catalog;
use reelgate_embedded::backend::LocalBackend;
use reelgate_lambda::functions::{
    bootstrap, shared_bootstrap, LambdaFunction, Serves, BY_CONSTANT, FUNCTIONS, PIPELINE,
    SHARED_BY_CONSTANT,
};
use std::path::PathBuf;
use std::sync::Arc;
use support::matches_template;
use tower::ServiceExt;

#[test]
fn every_binary_runs_its_own_manifest_entry() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/bin");
    for f in FUNCTIONS {
        let source = std::fs::read_to_string(dir.join(format!("{}.rs", bootstrap(f))))
            .unwrap_or_else(|e| panic!("{}: {e}", bootstrap(f)));
        if bootstrap(f) == PIPELINE.binary {
            assert!(
                source.contains("run_pipeline()"),
                "src/bin/{}.rs must run the pipeline's functions",
                PIPELINE.binary
            );
            continue;
        }
        if let Some(shared) = shared_bootstrap(f) {
            let named = named_constant(&source, f);
            let (_, group) = SHARED_BY_CONSTANT
                .iter()
                .find(|(name, _)| *name == named)
                .unwrap_or_else(|| panic!("{}: no shared bootstrap constant {named}", f.binary));
            assert_eq!(
                group.binary, shared.binary,
                "src/bin/{}.rs runs another shared bootstrap's members ({named})",
                shared.binary
            );
            assert!(
                source.contains("run_http_group("),
                "{} is a shared HTTP bootstrap and must call run_http_group",
                shared.binary
            );
            continue;
        }
        if f.serves.http_routes().is_none() {
            continue;
        }
        let named = named_constant(&source, f);
        let (_, entry) = BY_CONSTANT
            .iter()
            .find(|(name, _)| *name == named)
            .unwrap_or_else(|| panic!("{}: no manifest constant {named}", f.binary));
        assert_eq!(
            entry.binary, f.binary,
            "src/bin/{}.rs runs the manifest entry of another binary ({named})",
            f.binary
        );
        assert!(
            source.contains("run_http("),
            "{} is an HTTP function and must call run_http",
            f.binary
        );
    }
}

/// The `reelgate_lambda::functions` constant a binary's source runs.
fn named_constant(source: &str, f: &LambdaFunction) -> String {
    source
        .split("reelgate_lambda::functions::")
        .nth(1)
        .map(|rest| {
            rest.chars()
                .take_while(|c| c.is_ascii_uppercase() || *c == '_')
                .collect::<String>()
        })
        .unwrap_or_else(|| {
            panic!(
                "{} does not name its reelgate_lambda::functions entry",
                bootstrap(f)
            )
        })
}

/// A concrete URL of a path template (`{video_id}` → an id that does not exist).
fn concrete(path: &str) -> String {
    path.split('/')
        .map(|part| {
            if part.starts_with('{') {
                "x_missing"
            } else {
                part
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The body's `error.code`, if it is the error envelope.
async fn error_code(response: axum::response::Response) -> Option<String> {
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .ok()?;
    let body: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    body["error"]["code"].as_str().map(str::to_owned)
}

#[tokio::test]
async fn each_http_function_serves_its_own_path_and_no_other() {
    let dir = tempfile::tempdir().expect("temp dir");
    let backend = LocalBackend::open(dir.path(), "http://127.0.0.1:9").expect("local backend");
    let catalog = Arc::new(Catalog::load(None).expect("catalog"));
    let app = backend.app(catalog, Settings::default());
    let http: Vec<_> = FUNCTIONS
        .iter()
        .filter_map(|f| match f.serves {
            Serves::Http { path, routes, .. } => Some((f.binary, path, routes)),
            _ => None,
        })
        .collect();
    for (binary, path, routes) in &http {
        let router = reelgate::api::serve(app.clone(), routes());
        for (method, _) in reelgate::api::API_ROUTES.iter().filter(|(_, p)| p == path) {
            let request = Request::builder()
                .method(Method::from_bytes(method.as_bytes()).expect("method"))
                .uri(concrete(path))
                .body(Body::empty())
                .expect("request");
            let response = router.clone().oneshot(request).await.expect("answer");
            let status = response.status();
            let code = error_code(response).await;
            assert!(
                status != StatusCode::NOT_FOUND || code.as_deref() != Some("unknown_url"),
                "{binary} does not serve {method} {path}"
            );
            assert_ne!(
                status,
                StatusCode::METHOD_NOT_ALLOWED,
                "{binary} refuses {method} {path}"
            );
        }
        for (other, other_path, _) in http
            .iter()
            .filter(|(b, p, _)| b != binary && !matches_template(path, &concrete(p)))
        {
            let request = Request::builder()
                .uri(concrete(other_path))
                .body(Body::empty())
                .expect("request");
            let response = router.clone().oneshot(request).await.expect("answer");
            assert_eq!(
                (response.status(), error_code(response).await.as_deref()),
                (StatusCode::NOT_FOUND, Some("unknown_url")),
                "{binary} also answers {other_path}, the path of {other}"
            );
        }
    }
}

fn console_routes(f: &LambdaFunction) -> Option<reelgate::api::PathRoutes> {
    match f.serves {
        Serves::Console { routes, .. } | Serves::ConsoleChat { routes } => Some(routes),
        _ => None,
    }
}

/// The console is four functions on AWS: each console route is answered by the one its
/// request reaches there, and by no other console function (which would mean a route linked
/// twice, or one that API Gateway sends where its handler is not).
#[tokio::test]
async fn each_console_route_is_served_by_the_console_function_it_reaches() {
    let dir = tempfile::tempdir().expect("temp dir");
    let backend = LocalBackend::open(dir.path(), "http://127.0.0.1:9").expect("local backend");
    let catalog = Arc::new(Catalog::load(None).expect("catalog"));
    let app = backend.app(catalog, Settings::default());
    let consoles: Vec<&LambdaFunction> = FUNCTIONS
        .iter()
        .filter(|f| console_routes(f).is_some())
        .collect();
    assert_eq!(
        consoles.len(),
        4,
        "console, console-videos, console-video-cancel, console-chat"
    );
    let mut served = std::collections::BTreeMap::new();
    for (method, path) in reelgate::api::CONSOLE_ROUTES.iter() {
        let expected = reelgate_lambda::functions::for_console_route(method, path)
            .unwrap_or_else(|| panic!("no console function takes {method} {path}"));
        *served.entry(expected.binary).or_insert(0) += 1;
        for f in &consoles {
            let routes = console_routes(f).expect("console routes");
            let router = reelgate::api::serve(app.clone(), routes());
            let request = Request::builder()
                .method(Method::from_bytes(method.as_bytes()).expect("method"))
                .uri(concrete(path))
                .body(Body::empty())
                .expect("request");
            let response = router.oneshot(request).await.expect("answer");
            let status = response.status();
            let unrouted = status == StatusCode::METHOD_NOT_ALLOWED
                || (status == StatusCode::NOT_FOUND
                    && error_code(response).await.as_deref() == Some("unknown_url"));
            if f.binary == expected.binary {
                assert!(
                    !unrouted,
                    "{} does not serve {method} {path} ({status})",
                    f.binary
                );
            } else {
                assert!(
                    unrouted,
                    "{} also serves {method} {path}, which reaches {} ({status})",
                    f.binary, expected.binary
                );
            }
        }
    }
    // Each function takes some of the console's routes.
    for f in &consoles {
        assert!(
            served.get(f.binary).is_some_and(|n| *n > 0),
            "{} serves nothing: {served:?}",
            f.binary
        );
    }
}
