//! Test support: a real local server on 127.0.0.1 with embedded adapters in a temporary
//! directory, and helpers to make organizations, people and keys. Used by this crate's tests and
//! by other crates' tests (feature `contract`).

use crate::backend::LocalBackend;
use reelgate::app::App;
use reelgate::config::Settings;
use reelgate::domain::catalog::Catalog;
use rust_decimal::Decimal;
use std::sync::Arc;

pub mod store_contracts;

pub struct TestServer {
    pub app: App,
    pub backend: LocalBackend,
    pub base_url: String,
    pub dir: tempfile::TempDir,
    /// The reference engine and workflow, for servers started with [`TestServer::start_full`].
    pub services: Option<crate::host::LocalServices>,
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
        Self::start_with(
            Catalog::parse(reelgate::domain::catalog::DEFAULT_CATALOG).expect("catalog"),
            |_| {},
        )
        .await
    }

    /// Starts a server with `catalog`; `configure` may adjust the App (upstreams, workflow…)
    /// before the router is built.
    pub async fn start_with(catalog: Catalog, configure: impl FnOnce(&mut App)) -> TestServer {
        let dir = tempfile::tempdir().expect("tempdir");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let base_url = format!("http://{}", listener.local_addr().expect("addr"));
        let backend = LocalBackend::open(dir.path(), &base_url).expect("backend");
        let settings = Settings {
            public_base_url: base_url.clone(),
            ..Settings::default()
        };
        let mut app = backend.app(Arc::new(catalog), settings);
        // The harness renders PDFs in its own process (the serve binary uses a limited child).
        app.pdf = Arc::new(reelgate::adapters::pdf_in_process::InProcessRasterizer);
        // The default moderator (the rules), as the serve binary builds it without
        // REELGATE_MODERATION (`configure` may replace it).
        app.moderator = Arc::new(reelgate::adapters::rules_moderator::RuleModerator::default());
        // The HTTP upstream kinds, as the serve binary links them (`configure` may replace them).
        app.upstreams = Arc::new(
            reelgate::domain::chat::upstreams::Upstreams::with_connector(Arc::new(
                reelgate::adapters::CatalogConnector::new().with_http_kinds(),
            )),
        );
        configure(&mut app);
        let router = backend.router(app.clone());
        let server = tokio::spawn(async move {
            let _ = crate::listener::serve(
                listener,
                router,
                // Timer lag in a test process measures the busy test machine, not this server.
                crate::listener::ListenerLimits {
                    shed_lag: std::time::Duration::ZERO,
                    ..Default::default()
                },
                std::future::pending(),
            )
            .await;
        });
        TestServer {
            app,
            backend,
            base_url,
            dir,
            services: None,
            server,
        }
    }

    /// Starts the whole local service: API, in-process reference engine (with fault switches),
    /// the state machine on the embedded runner (waits scaled by `time_scale`), the render
    /// workers. `configure` runs before the services start (set a moderator, translator…).
    pub async fn start_full(time_scale: f64, configure: impl FnOnce(&mut App)) -> TestServer {
        Self::start_full_in(
            tempfile::tempdir().expect("tempdir"),
            None,
            time_scale,
            configure,
        )
        .await
    }

    /// As [`TestServer::start_full`], on an existing data directory and address (a restart).
    pub async fn start_full_in(
        dir: tempfile::TempDir,
        addr: Option<std::net::SocketAddr>,
        time_scale: f64,
        configure: impl FnOnce(&mut App),
    ) -> TestServer {
        let listener =
            tokio::net::TcpListener::bind(addr.unwrap_or_else(|| ([127, 0, 0, 1], 0).into()))
                .await
                .expect("bind");
        let base_url = format!("http://{}", listener.local_addr().expect("addr"));
        let backend = LocalBackend::open(dir.path(), &base_url).expect("backend");
        let settings = Settings {
            public_base_url: base_url.clone(),
            render_poll_interval: std::time::Duration::from_millis(200),
            engine_unreachable_attempts: 3,
            ..Settings::default()
        };
        let catalog = Catalog::parse(reelgate::domain::catalog::DEFAULT_CATALOG).expect("catalog");
        let catalog = Arc::new(catalog);
        let options = crate::host::LocalServiceOptions {
            time_scale,
            render_workers: 2,
            sweep_interval: std::time::Duration::from_secs(3600),
            engine_parallel: 2,
            engine_fault_injection: true,
            ..Default::default()
        };
        let workflow = crate::host::local_workflow(&backend, &options).expect("workflow");
        let mut app = backend
            .app(catalog.clone(), settings)
            .with_workflow(workflow.clone());
        // The harness renders PDFs in its own process (the serve binary uses a limited child).
        app.pdf = Arc::new(reelgate::adapters::pdf_in_process::InProcessRasterizer);
        // The default moderator (the rules), as the serve binary builds it without
        // REELGATE_MODERATION (`configure` may replace it).
        app.moderator = Arc::new(reelgate::adapters::rules_moderator::RuleModerator::default());
        // The HTTP upstream kinds, as the serve binary links them (`configure` may replace them).
        app.upstreams = Arc::new(
            reelgate::domain::chat::upstreams::Upstreams::with_connector(Arc::new(
                reelgate::adapters::CatalogConnector::new().with_http_kinds(),
            )),
        );
        configure(&mut app);
        // The harness builds its App by hand (its settings, fakes through `configure`); the
        // catalog's engines point at the in-process reference engine, as `assemble` does.
        app.engines = Arc::new(
            reelgate::adapters::engines_from_catalog_with_key(
                &catalog,
                Some(&crate::host::reference_engine_url(&base_url)),
                Some(&backend.engine_key),
                Arc::new(reelgate::app::guarded_fetcher(&app.settings)),
            )
            .expect("engines"),
        );
        let services = crate::host::start_services(&app, &backend, workflow, options)
            .await
            .expect("services");
        let router = crate::host::local_router(app.clone(), &backend, &services);
        let server = tokio::spawn(async move {
            let _ = crate::listener::serve(
                listener,
                router,
                // Timer lag in a test process measures the busy test machine, not this server.
                crate::listener::ListenerLimits {
                    shed_lag: std::time::Duration::ZERO,
                    ..Default::default()
                },
                std::future::pending(),
            )
            .await;
        });
        TestServer {
            app,
            backend,
            base_url,
            dir,
            services: Some(services),
            server,
        }
    }

    /// Stops serving and the local services, keeping the data directory (for restart tests).
    pub fn stop(mut self) -> (tempfile::TempDir, std::net::SocketAddr) {
        self.server.abort();
        if let Some(s) = self.services.take() {
            s.shutdown();
        }
        let addr: std::net::SocketAddr = self
            .base_url
            .trim_start_matches("http://")
            .parse()
            .expect("addr");
        let dir = std::mem::replace(&mut self.dir, tempfile::tempdir().expect("tempdir"));
        (dir, addr)
    }

    /// A new organization with one person and an API key: (org id, person id, key secret).
    pub async fn tenant(&self, credits: &str) -> Tenant {
        let accounts = self.app.accounts();
        let credits: Decimal = credits.parse().expect("credits");
        let org = accounts
            .create_org("Test org", "starter", "usd", credits)
            .await
            .expect("org");
        self.member(&org.id).await
    }

    /// Another person (with their own key) in an existing organization.
    pub async fn member(&self, org: &str) -> Tenant {
        let accounts = self.app.accounts();
        let person = accounts
            .create_person(
                org,
                &format!("{}@example.test", reelgate::domain::ids::new_secret(6)),
            )
            .await
            .expect("person");
        let key = accounts.create_api_key(&person.id).await.expect("key");
        Tenant {
            org: org.to_owned(),
            person: person.id,
            key: key.secret,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    /// Signs a person in to the console as a browser does: a one-time link, its redirect to the
    /// console with the session cookie, then the session's CSRF token.
    pub async fn console_sign_in(&self, person: &str, org: &str) -> ConsoleLogin {
        let link = reelgate::domain::accounts::console::Console::new(self.app.store.as_ref())
            .create_link(person, org, 60)
            .await
            .expect("sign-in link");
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("client");
        let res = http
            .get(link.url(&self.base_url))
            .send()
            .await
            .expect("sign in");
        assert_eq!(res.status().as_u16(), 303, "sign-in by link");
        assert_eq!(res.headers()["location"], "/console/");
        let secret = res.headers()["set-cookie"]
            .to_str()
            .expect("cookie")
            .split(';')
            .next()
            .and_then(|kv| kv.strip_prefix("reelgate_console="))
            .expect("session cookie")
            .to_owned();
        let cookie = format!("reelgate_console={secret}");
        let session: serde_json::Value = http
            .get(self.url("/console/api/session"))
            .header("cookie", &cookie)
            .send()
            .await
            .expect("session")
            .json()
            .await
            .expect("json");
        ConsoleLogin {
            link_url: link.url(&self.base_url),
            secret,
            cookie,
            csrf: session["csrf_token"].as_str().expect("csrf").to_owned(),
        }
    }
}

/// A console session from [`TestServer::console_sign_in`].
#[derive(Clone, Debug)]
pub struct ConsoleLogin {
    /// The one-time link it was opened with (already used).
    pub link_url: String,
    /// The session cookie's value.
    pub secret: String,
    /// The `Cookie` header that carries it.
    pub cookie: String,
    /// The token every state-changing console request carries in `x-csrf-token`.
    pub csrf: String,
}

#[derive(Clone, Debug)]
pub struct Tenant {
    pub org: String,
    pub person: String,
    pub key: String,
}

/// Records agreement to the current terms for a person, as the console does: a console session
/// is opened (what a sign-in link yields) and agreement recorded with it.
pub async fn agree(app: &App, org: &str, person: &str) {
    agree_in(app.context(), org, person).await
}

/// [`agree`] against any stores (the AWS emulator test has no assembled `App`).
pub async fn agree_in(cx: reelgate::domain::Context<'_>, org: &str, person: &str) {
    let console = reelgate::domain::accounts::console::Console::new(cx.store);
    let issued = console
        .create_session(person, org)
        .await
        .expect("console session");
    let session = console
        .session(&issued.secret)
        .await
        .expect("session lookup")
        .expect("live session");
    let status = reelgate::domain::accounts::agreement::accept(cx, &session.caller)
        .await
        .expect("accept");
    assert!(status.accepted);
}

/// The Python with `openai` and `pytest` named by `REELGATE_PYTHON`. Without it the calling test
/// is skipped with a message — except under CI (`CI` set), where that is a failure, so a suite
/// can never pass there without having run.
pub fn python_or_skip(test: &str) -> Option<String> {
    match std::env::var("REELGATE_PYTHON") {
        Ok(python) if !python.is_empty() => Some(python),
        _ if std::env::var_os("CI").is_some() => {
            panic!("{test}: REELGATE_PYTHON is not set under CI; scripts/test.sh sets it")
        }
        _ => {
            eprintln!("{test} skipped: set REELGATE_PYTHON to a Python with openai and pytest");
            None
        }
    }
}

/// tests/python/fake_upstream.py running, and a server whose catalog is tests/python/catalog.toml
/// pointing at it: the rig of the Python SDK suites.
pub struct PythonRig {
    pub python: String,
    pub dir: std::path::PathBuf,
    pub fake_url: String,
    pub server: TestServer,
    _fake: tokio::process::Child,
}

impl PythonRig {
    pub async fn start(python: String) -> PythonRig {
        use tokio::io::AsyncBufReadExt;
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/python");
        let mut fake = tokio::process::Command::new(&python)
            .arg(dir.join("fake_upstream.py"))
            .args(["--port", "0"])
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start the fake upstream");
        let stdout = fake.stdout.take().expect("stdout");
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        let first = tokio::time::timeout(std::time::Duration::from_secs(10), lines.next_line())
            .await
            .expect("the fake upstream starts")
            .expect("read")
            .expect("a line");
        let fake_url = first
            .strip_prefix("FAKE_UPSTREAM_URL=")
            .expect("the URL line")
            .to_owned();
        // The catalog expands ${FAKE_UPSTREAM_URL}; substitute here rather than set it in the
        // process environment that other tests share.
        let text = std::fs::read_to_string(dir.join("catalog.toml")).expect("catalog");
        let catalog = Catalog::parse(&text.replace("${FAKE_UPSTREAM_URL}", &fake_url))
            .expect("catalog parses");
        let server = TestServer::start_with(catalog, |_| {}).await;
        PythonRig {
            python,
            dir,
            fake_url,
            server,
            _fake: fake,
        }
    }

    /// Runs one pytest file with `env` (plus the base and fake URLs); fails the calling test if
    /// any Python test fails or is skipped.
    pub async fn pytest(&self, file: &str, env: &[(&str, &str)]) {
        let mut cmd = tokio::process::Command::new(&self.python);
        cmd.args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
            .arg(self.dir.join(file))
            .env("REELGATE_BASE_URL", &self.server.base_url)
            .env("FAKE_UPSTREAM_URL", &self.fake_url);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let output = cmd.output().await.expect("run pytest");
        let report = String::from_utf8_lossy(&output.stdout);
        eprintln!("{report}{}", String::from_utf8_lossy(&output.stderr));
        assert!(
            output.status.success(),
            "the Python SDK suite {file} failed"
        );
        assert!(
            !report.contains("skipped"),
            "no Python test may be skipped here"
        );
    }
}
