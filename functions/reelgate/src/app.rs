//! The assembled application: [`App`], the state every handler shares whichever host (local
//! server or Lambda) runs it, and [`assemble`], the one place it is put together from the typed
//! [`Config`] and a host's ports. Hosts add only what is theirs (the local host its reference
//! engine and workflow runner, the AWS hosts their Bedrock engines and upstream kind).

use crate::adapters::CatalogConnector;
use crate::config::{Config, Settings};
use crate::domain::catalog::providers::Engines;
use crate::domain::catalog::Catalog;
use crate::domain::chat::upstreams::Upstreams;
use crate::domain::videos::workflow::Pipeline;
use crate::domain::{Context, SharedContext};
use crate::ports::blobs::BlobStore;
use crate::ports::queue::MessageQueue;
use crate::ports::store::ItemStore;
use crate::ports::workflow::Workflow;
use anyhow::Context as _;
use std::sync::Arc;

/// The state every handler shares: one `Arc`, so the per-request clone axum makes of the
/// router's state is one reference count, not one per port. Fields are read through `Deref`;
/// a host or a test that sets one before serving writes through `DerefMut`, which copies the
/// state only if another clone already shares it (as setting a field of a clone always did).
#[derive(Clone)]
pub struct App(Arc<AppState>);

impl std::ops::Deref for App {
    type Target = AppState;
    fn deref(&self) -> &AppState {
        &self.0
    }
}

impl std::ops::DerefMut for App {
    fn deref_mut(&mut self) -> &mut AppState {
        Arc::make_mut(&mut self.0)
    }
}

/// The ports and settings an [`App`] holds: the use cases' ports ([`SharedContext`], read
/// through `Deref`: `app.store`, `app.settings`) and what only the hosts, the pipeline and the
/// text use cases add to them.
#[derive(Clone)]
pub struct AppState {
    pub ports: SharedContext,
    pub render_queue: Arc<dyn MessageQueue>,
    /// The workflow runner, if the host has one: given while the App is built
    /// ([`App::with_workflow`]), so every clone holds the same one.
    workflow: Option<Arc<dyn Workflow>>,
    /// Text-model upstreams by catalog id.
    pub upstreams: Arc<crate::domain::chat::upstreams::Upstreams>,
    /// Video engines by catalog id.
    pub engines: Arc<crate::domain::catalog::providers::Engines>,
    pub moderator: Arc<dyn crate::ports::moderator::Moderator>,
    /// An explicit translator; otherwise `settings.translation_model` through its upstream.
    pub translator: Option<Arc<dyn crate::ports::translator::Translator>>,
    /// Console sign-in through the configured OpenID Connect issuer, if any.
    pub oidc: Option<Arc<crate::domain::accounts::console::oidc::Oidc>>,
    /// Renders PDF inputs to page images, out of this process. Hosts set it after assembly:
    /// the local host a limited child process, Lambda the renderer function; until then no
    /// PDF is rendered (never in the API process, which a hostile document must not reach).
    pub pdf: Arc<dyn crate::ports::pdf::PdfRasterizer>,
    /// API keys this process verified recently (`Settings::account_cache`).
    pub credentials: Arc<crate::domain::accounts::AccountCache>,
}

impl std::ops::Deref for AppState {
    type Target = SharedContext;
    fn deref(&self) -> &SharedContext {
        &self.ports
    }
}

impl std::ops::DerefMut for AppState {
    fn deref_mut(&mut self) -> &mut SharedContext {
        &mut self.ports
    }
}

impl App {
    pub fn new(
        store: Arc<dyn ItemStore>,
        blobs: Arc<dyn BlobStore>,
        render_queue: Arc<dyn MessageQueue>,
        catalog: Arc<Catalog>,
        settings: Settings,
    ) -> Self {
        App(Arc::new(AppState {
            render_queue,
            workflow: None,
            upstreams: Arc::new(crate::domain::chat::upstreams::Upstreams::with_connector(
                Arc::new(crate::adapters::CatalogConnector::new()),
            )),
            engines: Arc::new(crate::domain::catalog::providers::Engines::default()),
            moderator: Arc::new(crate::ports::moderator::NoModerator),
            translator: None,
            oidc: settings.oidc.clone().map(|oidc| {
                Arc::new(crate::domain::accounts::console::oidc::Oidc::new(
                    oidc,
                    Arc::new(crate::adapters::issuer_http::IssuerHttpClient::default()),
                ))
            }),
            pdf: Arc::new(crate::ports::pdf::NoRasterizer),
            credentials: Arc::new(crate::domain::accounts::AccountCache::new(
                settings.account_cache,
            )),
            ports: SharedContext {
                store,
                blobs,
                catalog,
                fetcher: Arc::new(guarded_fetcher(&settings)),
                webhooks: None,
                settings: Arc::new(settings),
            },
        }))
    }

    /// This App with `workflow` as its workflow runner. It takes the App by value: the runner
    /// is part of building it, before any handler holds a clone.
    pub fn with_workflow(mut self, workflow: Arc<dyn Workflow>) -> Self {
        self.workflow = Some(workflow);
        self
    }

    pub fn workflow(&self) -> Option<Arc<dyn Workflow>> {
        self.workflow.clone()
    }

    /// The translator for Japanese prompts, if one is configured.
    pub fn translator(&self) -> Option<Arc<dyn crate::ports::translator::Translator>> {
        if let Some(t) = &self.translator {
            return Some(t.clone());
        }
        let model = self
            .catalog
            .chat_model(self.settings.translation_model.as_deref()?)?;
        // The routed upstream sets each deployment's own model name.
        let upstream = self.upstreams.for_model(&self.catalog, model);
        Some(Arc::new(
            crate::adapters::chat_translator::ChatTranslator::new(upstream, &model.id),
        ))
    }

    pub fn accounts(&self) -> crate::domain::accounts::Accounts<'_> {
        crate::domain::accounts::Accounts::new(self.store.as_ref())
            .with_account_cache(&self.credentials)
            .recording_key_use(self.settings.record_key_use)
    }

    /// The narrow context of the request-side use cases.
    pub fn context(&self) -> Context<'_> {
        self.ports.context()
    }

    /// What the Responses use case uses (a streamed turn keeps it after the request).
    pub fn responses_ports(&self) -> crate::domain::responses::create::ResponsesPorts {
        crate::domain::responses::create::ResponsesPorts {
            shared: self.ports.clone(),
            accounts: self.credentials.clone(),
            upstreams: self.upstreams.clone(),
            pdf: self.pdf.clone(),
        }
    }

    /// What the chat use case uses.
    pub fn chat_ports(&self) -> crate::domain::chat::complete::ChatPorts<'_> {
        crate::domain::chat::complete::ChatPorts {
            shared: &self.ports,
            accounts: &self.credentials,
            upstreams: &self.upstreams,
        }
    }

    /// What the workflow steps and the render worker use.
    pub fn pipeline(&self) -> Pipeline {
        Pipeline {
            shared: self.ports.clone(),
            render_queue: self.render_queue.clone(),
            engines: self.engines.clone(),
            moderator: self.moderator.clone(),
            translator: self.translator(),
            workflow: self.workflow(),
        }
    }
}

/// A host's adapters of the storage ports.
pub struct Ports {
    pub store: Arc<dyn ItemStore>,
    pub blobs: Arc<dyn BlobStore>,
    pub render_queue: Arc<dyn MessageQueue>,
    /// The workflow runner, when the host has one: Step Functions on AWS; locally the embedded
    /// runner, which is built before the App and reaches it through its own handle
    /// (`reelgate_embedded::workflow`).
    pub workflow: Option<Arc<dyn Workflow>>,
}

/// The guarded fetcher of `settings`: `REELGATE_FETCH_ALLOW` (checked by [`assemble`]) and
/// `REELGATE_ALLOW_PRIVATE_FILE_URLS`.
pub fn guarded_fetcher(settings: &Settings) -> crate::adapters::guarded_fetch::GuardedFetcher {
    use crate::adapters::guarded_fetch::{AllowEntry, FetchPolicy, GuardedFetcher};
    GuardedFetcher::new(FetchPolicy {
        allow: settings
            .fetch_allow
            .iter()
            .filter_map(|e| AllowEntry::parse(e).ok())
            .collect(),
        allow_all: settings.allow_private_file_urls,
        timeout: None,
    })
}

/// Registers engines a host's own crates provide (Bedrock on AWS) after the catalog's.
pub type EngineRegistrar = Box<dyn FnOnce(&Catalog, &Engines) -> anyhow::Result<()> + Send>;

/// What differs between hosts.
pub struct Host {
    /// The URL this host answers at when `REELGATE_PUBLIC_URL` is not set.
    pub fallback_url: String,
    /// The settings this host defaults differently (content redirects, the credential cache).
    pub defaults: crate::config::HostDefaults,
    /// Where the reference engine is served in-process, if it is (the local host); the
    /// configured `REELGATE_REFERENCE_ENGINE_URL` wins.
    pub in_process_engine_url: Option<String>,
    /// The bearer key the in-process reference engine requires (used only with its URL).
    pub in_process_engine_key: Option<String>,
    /// The chat-upstream kinds this host links (`openai` and `anthropic`, plus `bedrock` where
    /// reelgate-aws is).
    pub connector: CatalogConnector,
    /// Builds the catalog's engines (`adapters::engines_from_catalog_with_key`), where the host
    /// links them; `None` (a Lambda function that renders nothing) starts with no engine, and
    /// `extra_engines` fills them in.
    pub catalog_engines: Option<crate::adapters::CatalogEngines>,
    /// Builds the moderator from `REELGATE_MODERATION` (`adapters::moderator_from_config`),
    /// where the host runs the moderation step; `None` keeps `NoModerator`, which fails closed.
    pub moderator: Option<crate::adapters::ModeratorBuilder>,
    pub extra_engines: Option<EngineRegistrar>,
    /// True: an upstream or a discovery that fails stops start-up (the local server). False:
    /// it is logged and connected on first use, so one provider cannot take the video routes
    /// down (Lambda).
    pub strict_upstreams: bool,
    /// Whether the catalog's chat upstreams are connected during assembly (surfacing a bad
    /// configuration at start-up). False for a function that serves no chat: its upstreams, if
    /// it ever needs one, connect on first use.
    pub connect_upstreams: bool,
}

/// Puts the application together: the catalog (`REELGATE_CATALOG`, plus the quick-start
/// upstream's models), the settings, the video engines, the moderator, the chat upstreams and
/// the host's ports.
pub async fn assemble(config: &Config, ports: Ports, host: Host) -> anyhow::Result<App> {
    crate::observability::telemetry::set_log_prompts(config.log_prompts);
    let mut catalog =
        Catalog::load(config.catalog_path.as_deref()).context("loading the catalog")?;
    if let Some(discovery) = &config.upstream_discovery {
        if let Err(e) =
            crate::adapters::upstream_discovery::discover_upstream_models(&mut catalog, discovery)
                .await
        {
            if host.strict_upstreams {
                return Err(e.context("listing the models of REELGATE_UPSTREAM_BASE_URL"));
            }
            // A failure leaves the catalog's own models (and the video routes) working.
            tracing::error!(
                error = format!("{e:#}"),
                "listing the models of REELGATE_UPSTREAM_BASE_URL failed"
            );
        }
    }
    let catalog = Arc::new(catalog);
    let settings = config.settings_for_host(&host.fallback_url, &host.defaults);
    for entry in &settings.fetch_allow {
        crate::adapters::guarded_fetch::AllowEntry::parse(entry)
            .map_err(|e| anyhow::anyhow!("REELGATE_FETCH_ALLOW: {e}"))?;
    }
    // Store, blob and queue calls are spans only while traces are exported; otherwise the
    // adapters are used bare.
    let (store, blobs, render_queue): (
        Arc<dyn ItemStore>,
        Arc<dyn BlobStore>,
        Arc<dyn MessageQueue>,
    ) = if config.traces.is_some() {
        use crate::adapters::traced::{TracedBlobs, TracedQueue, TracedStore};
        (
            Arc::new(TracedStore(ports.store)),
            Arc::new(TracedBlobs(ports.blobs)),
            Arc::new(TracedQueue(ports.render_queue)),
        )
    } else {
        (ports.store, ports.blobs, ports.render_queue)
    };
    let mut app = App::new(store, blobs, render_queue, catalog.clone(), settings);
    let (engine_url, engine_key) = match config.reference_engine_url.as_deref() {
        Some(url) => (Some(url), None),
        None => (
            host.in_process_engine_url.as_deref(),
            host.in_process_engine_key.as_deref(),
        ),
    };
    let engines = match host.catalog_engines {
        Some(build) => {
            // Hosted providers' outputs come through the same guarded fetcher as callers' URLs,
            // with a download's time allowance.
            let mut output_fetcher = guarded_fetcher(&app.settings);
            output_fetcher.set_timeout(crate::adapters::hosted::DOWNLOAD_TIMEOUT);
            build(&catalog, engine_url, engine_key, Arc::new(output_fetcher))
                .context("configuring the video engines")?
        }
        None => crate::domain::catalog::providers::Engines::default(),
    };
    if let Some(register) = host.extra_engines {
        register(&catalog, &engines)?;
    }
    app.engines = Arc::new(engines);
    if let Some(build) = host.moderator {
        app.moderator = build(&config.moderation).context("configuring moderation")?;
    }
    let upstreams = Upstreams::with_connector(Arc::new(host.connector));
    let connected = if host.connect_upstreams {
        upstreams.connect_all(&catalog).await
    } else {
        Ok(())
    };
    if let Err(e) = connected {
        if host.strict_upstreams {
            return Err(
                anyhow::Error::new(e).context("connecting the catalog's text-model upstreams")
            );
        }
        tracing::error!(error = %e, "chat upstreams are not all configured; they connect on first use");
    }
    app.upstreams = Arc::new(upstreams);
    if let Some(workflow) = ports.workflow {
        app = app.with_workflow(workflow);
    }
    Ok(app)
}
