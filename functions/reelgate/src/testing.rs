//! Test support: a real local server on 127.0.0.1 with embedded adapters in a temporary
//! directory, and helpers to make organizations, people and keys. Used by this crate's tests and
//! by other crates' tests (feature `contract`).

use crate::app::{App, Settings};
use crate::catalog::Catalog;
use crate::local::LocalBackend;
use rust_decimal::Decimal;
use std::sync::Arc;

pub struct TestServer {
    pub app: App,
    pub backend: LocalBackend,
    pub base_url: String,
    pub dir: tempfile::TempDir,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl TestServer {
    /// Starts a server with the built-in catalog.
    pub async fn start() -> TestServer {
        Self::start_with(Catalog::parse(crate::catalog::DEFAULT_CATALOG).expect("catalog"), |_| {}).await
    }

    /// Starts a server with `catalog`; `configure` may adjust the App (upstreams, workflow…)
    /// before the router is built.
    pub async fn start_with(catalog: Catalog, configure: impl FnOnce(&mut App)) -> TestServer {
        let dir = tempfile::tempdir().expect("tempdir");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base_url = format!("http://{}", listener.local_addr().expect("addr"));
        let backend = LocalBackend::open(dir.path(), &base_url).expect("backend");
        let settings = Settings { public_base_url: base_url.clone(), ..Settings::default() };
        let mut app = backend.app(Arc::new(catalog), settings);
        configure(&mut app);
        let router = crate::http::router(app.clone());
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        TestServer { app, backend, base_url, dir, server }
    }

    /// A new organization with one person and an API key: (org id, person id, key secret).
    pub async fn tenant(&self, credits: &str) -> Tenant {
        let accounts = self.app.accounts();
        let credits: Decimal = credits.parse().expect("credits");
        let org = accounts.create_org("Test org", "starter", "usd", credits).await.expect("org");
        self.member(&org.id).await
    }

    /// Another person (with their own key) in an existing organization.
    pub async fn member(&self, org: &str) -> Tenant {
        let accounts = self.app.accounts();
        let person = accounts
            .create_person(org, &format!("{}@example.test", crate::ids::new_secret(6)))
            .await
            .expect("person");
        let key = accounts.create_api_key(&person.id).await.expect("key");
        Tenant { org: org.to_owned(), person: person.id, key: key.secret }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }
}

#[derive(Clone, Debug)]
pub struct Tenant {
    pub org: String,
    pub person: String,
    pub key: String,
}
