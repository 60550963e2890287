//! [`Settings`]: the knobs the domain and the API read, and the defaults that depend on the
//! host.

use std::time::Duration;

use super::console::{oidc_settings, OidcSettings};
use super::secrets::{metrics_token, origin_secrets, MetricsToken, OriginSecrets};
use super::vars::{ConfigError, Vars};

/// The service's knobs as the domain and the API read them; each is documented in
/// docs/configuration.md.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The URL clients reach this service at (used in presigned local URLs and callbacks).
    pub public_base_url: String,
    /// Largest upload through `POST /v1/files`.
    pub max_upload_bytes: u64,
    /// Largest JSON request body.
    pub max_json_bytes: usize,
    /// Lifetime of presigned URLs handed to engines and upstream models.
    pub presign_ttl: Duration,
    /// Uploaded files expire this long after upload.
    pub file_retention: Duration,
    /// Finished jobs (record, prompt, output, thumbnail) are deleted this long after finishing.
    pub job_retention: Duration,
    /// Chat model (catalog id) that translates Japanese prompts; None refuses them
    /// (`translation_unavailable`).
    pub translation_model: Option<String>,
    /// How often the render worker asks the engine for progress.
    pub render_poll_interval: Duration,
    /// Consecutive failed engine calls before a render fails as `engine_unavailable`.
    pub engine_unreachable_attempts: u32,
    /// Local server: how long a render message stays hidden from the other workers while one
    /// handles it; past it the message is delivered again (as SQS's visibility timeout, which
    /// the template sets on AWS).
    pub render_visibility: Duration,
    /// Answer the content routes with a redirect to a short-lived blob URL instead of streaming
    /// the bytes (Lambda's response payload limit is 6 MB; an MP4 can be tens of MB).
    pub content_redirect: bool,
    /// Let the responses API's `file_url` reach private and loopback addresses (tests only).
    pub allow_private_file_urls: bool,
    /// How long this process trusts an API key it verified (its record and its holder's
    /// membership) before reading them again: a revoked key, a removed person or an erased
    /// organization is refused within this long (at once where this process revoked it).
    /// Zero reads both on every request.
    pub account_cache: Duration,
    /// Whether authenticating a key writes its last-use time (at most once a minute per key).
    /// A host default: on locally; off on Lambda, where most API functions may only read the
    /// table.
    pub record_key_use: bool,
    /// Whether this host's operator makes console sign-in links with `reelgate admin
    /// console-link` on the same data (the local server): the console's signed-out page then
    /// shows the person that command. A host default.
    pub console_links_by_cli: bool,
    /// `REELGATE_ORIGIN_SECRET` (and `_SECONDARY`): only requests carrying one of these in
    /// `x-reelgate-origin-secret` are served (`crate::api::origin`). None serves every request.
    pub origin_secrets: Option<OriginSecrets>,
    /// `REELGATE_METRICS_TOKEN`: the bearer token `GET /metrics` wants; None turns the route off.
    pub metrics_token: Option<MetricsToken>,
    /// How long an `Idempotency-Key` and the first result it answered are remembered.
    pub idempotency_ttl: Duration,
    /// How long a console sign-in link stays valid (it also works only once).
    pub console_link_ttl: Duration,
    /// `REELGATE_FETCH_ALLOW`: hosts and address ranges (CIDR) the guarded fetcher may reach
    /// although they are private, one entry per comma.
    pub fetch_allow: Vec<String>,
    /// Waits between a webhook event's delivery attempts (`REELGATE_WEBHOOK_RETRY_SECS`): one
    /// attempt, then one more after each wait; an event whose last attempt fails disables its
    /// endpoint. The default spans about 27 hours.
    pub webhook_retry_schedule: Vec<Duration>,
    /// Console sign-in through an OpenID Connect issuer, when configured.
    pub oidc: Option<OidcSettings>,
    /// Conforms (and stitches) this process runs at once, shared between organizations in
    /// turn (`REELGATE_CONFORM_CONCURRENCY`; default one per core).
    pub conform_concurrency: usize,
    /// How long a large request body waits for room in the body budget before it is answered
    /// 503 (`REELGATE_BODY_WAIT_SECS`, default 10 s).
    pub body_wait: Duration,
}

/// The default waits between webhook delivery attempts: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h,
/// 10 h (eight attempts over about 27.6 hours).
pub const WEBHOOK_RETRY_SECS: &[u64] = &[5, 300, 1800, 7200, 18000, 36000, 36000];

impl Default for Settings {
    fn default() -> Self {
        Settings {
            public_base_url: "http://127.0.0.1:8080".into(),
            max_upload_bytes: 100 * 1000 * 1000,
            max_json_bytes: 32 * 1024 * 1024,
            presign_ttl: Duration::from_secs(15 * 60),
            file_retention: Duration::from_secs(30 * 24 * 3600),
            job_retention: Duration::from_secs(30 * 24 * 3600),
            translation_model: None,
            render_poll_interval: Duration::from_secs(2),
            engine_unreachable_attempts: 5,
            render_visibility: Duration::from_secs(120),
            idempotency_ttl: Duration::from_secs(24 * 3600),
            content_redirect: false,
            allow_private_file_urls: false,
            account_cache: Duration::ZERO,
            record_key_use: false,
            console_links_by_cli: false,
            origin_secrets: None,
            metrics_token: None,
            console_link_ttl: Duration::from_secs(15 * 60),
            fetch_allow: Vec::new(),
            webhook_retry_schedule: WEBHOOK_RETRY_SECS
                .iter()
                .map(|s| Duration::from_secs(*s))
                .collect(),
            oidc: None,
            conform_concurrency: std::thread::available_parallelism().map_or(1, |n| n.get()),
            body_wait: Duration::from_secs(10),
        }
    }
}

/// The knobs every host shares, from the set variables (the host-dependent ones are filled in by
/// [`super::Config::settings_for_host`]).
pub(super) fn read(vars: &Vars) -> Result<Settings, ConfigError> {
    let mut settings = Settings::default();
    if let Some(v) = vars.number("REELGATE_PRESIGN_TTL_SECS", "whole seconds")? {
        settings.presign_ttl = Duration::from_secs(v.max(1));
    }
    if let Some(v) = vars.number("REELGATE_CONFORM_CONCURRENCY", "a whole number of conforms")? {
        settings.conform_concurrency = (v as usize).max(1);
    }
    if let Some(v) = vars.number("REELGATE_BODY_WAIT_SECS", "whole seconds")? {
        settings.body_wait = Duration::from_secs(v.max(1));
    }
    if let Some(v) = vars.number("REELGATE_RENDER_POLL_SECS", "whole seconds")? {
        settings.render_poll_interval = Duration::from_secs(v.max(1));
    }
    if let Some(v) = vars.number("REELGATE_RENDER_VISIBILITY_SECS", "whole seconds")? {
        settings.render_visibility = Duration::from_secs(v.max(1));
    }
    if let Some(v) = vars.number("REELGATE_IDEMPOTENCY_TTL_SECS", "whole seconds")? {
        settings.idempotency_ttl = Duration::from_secs(v.max(1));
    }
    if let Some(v) = vars.number("REELGATE_CONSOLE_LINK_TTL_SECS", "whole seconds")? {
        settings.console_link_ttl = Duration::from_secs(v.max(1));
    }
    if let Some(v) = vars.number("REELGATE_MAX_UPLOAD_BYTES", "a byte count")? {
        settings.max_upload_bytes = v;
    }
    if let Some(list) = vars.text("REELGATE_WEBHOOK_RETRY_SECS") {
        settings.webhook_retry_schedule = list
            .split(',')
            .map(|s| s.trim().parse::<u64>().map(Duration::from_secs))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| {
                ConfigError::new(
                    "REELGATE_WEBHOOK_RETRY_SECS",
                    "must be whole seconds separated by commas, e.g. 5,300,1800",
                )
            })?;
    }
    settings.translation_model = vars.text("REELGATE_TRANSLATION_MODEL");
    settings.origin_secrets = origin_secrets(vars)?;
    settings.metrics_token = metrics_token(vars)?;
    settings.oidc = oidc_settings(vars)?;
    settings.fetch_allow = vars
        .text("REELGATE_FETCH_ALLOW")
        .map(|v| {
            v.split(',')
                .map(|e| e.trim().to_owned())
                .filter(|e| !e.is_empty())
                .collect()
        })
        .unwrap_or_default();
    settings.allow_private_file_urls = vars
        .switch("REELGATE_ALLOW_PRIVATE_FILE_URLS")?
        .unwrap_or(false);
    Ok(settings)
}

/// The settings whose default depends on the host, used unless the environment sets them.
#[derive(Clone, Debug)]
pub struct HostDefaults {
    /// `REELGATE_CONTENT_REDIRECT`: on for Lambda, whose responses stop at 6 MB.
    pub content_redirect: bool,
    /// `REELGATE_ACCOUNT_CACHE_SECS`: a few seconds on Lambda, where each read is a network
    /// round trip; none locally, where it is a SQLite lookup and `reelgate admin key revoke`
    /// (another process) must take effect at once.
    pub account_cache: Duration,
    /// Whether authentication writes a key's last-use time: the local server does; on Lambda
    /// only a few functions may write the table, so the console shows no last use there yet.
    pub record_key_use: bool,
    /// Whether sign-in links come from `reelgate admin console-link` on this host's data.
    pub console_links_by_cli: bool,
}

impl HostDefaults {
    /// The local server's.
    pub const LOCAL: HostDefaults = HostDefaults {
        content_redirect: false,
        account_cache: Duration::ZERO,
        record_key_use: true,
        console_links_by_cli: true,
    };
    /// Lambda's.
    pub const LAMBDA: HostDefaults = HostDefaults {
        content_redirect: true,
        account_cache: Duration::from_secs(5),
        record_key_use: false,
        console_links_by_cli: false,
    };
}
