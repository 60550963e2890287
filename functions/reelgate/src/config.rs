//! One typed configuration of the service, read from the environment once at start-up by
//! [`Config::from_env`] and handed to the assembly (`crate::app::assemble`); nothing else in the
//! workspace reads a `REELGATE_*` variable. Every variable is documented in
//! docs/configuration.md.
//!
//! Start-up stops, naming the variable, on a malformed value (a number that is not one, a switch
//! that is neither on nor off, an unknown moderator) and on a `REELGATE_*` name the service does
//! not know: a misspelt knob must not be silently ignored. The names the project's own scripts
//! and tests export into the environment the service starts in ([`TOOLING_VARIABLES`]) are known
//! and ignored.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Every `REELGATE_*` variable the service reads, with what it sets (docs/configuration.md has
/// the full story). Host-only variables are listed too: a name is known whichever host reads it.
pub const VARIABLES: &[(&str, &str)] = &[
    // The service.
    (
        "REELGATE_PUBLIC_URL",
        "the URL clients reach the service at",
    ),
    ("REELGATE_CATALOG", "path of the catalog TOML file"),
    ("REELGATE_MAX_UPLOAD_BYTES", "largest upload, in bytes"),
    (
        "REELGATE_PRESIGN_TTL_SECS",
        "lifetime of presigned URLs, in seconds",
    ),
    (
        "REELGATE_RENDER_POLL_SECS",
        "engine poll interval, in seconds",
    ),
    (
        "REELGATE_RENDER_VISIBILITY_SECS",
        "local server: how long a render message stays hidden while a worker handles it",
    ),
    (
        "REELGATE_IDEMPOTENCY_TTL_SECS",
        "how long an Idempotency-Key is remembered, in seconds",
    ),
    (
        "REELGATE_TRANSLATION_MODEL",
        "chat model that translates Japanese prompts",
    ),
    (
        "REELGATE_CONTENT_REDIRECT",
        "redirect content routes to blob URLs (on/off)",
    ),
    (
        "REELGATE_ACCOUNT_CACHE_SECS",
        "seconds a verified API key is trusted before it is read again",
    ),
    (
        "REELGATE_ALLOW_PRIVATE_FILE_URLS",
        "let file_url reach private addresses (on/off)",
    ),
    (
        "REELGATE_FETCH_ALLOW",
        "hosts and CIDR ranges server-side fetches may reach although private",
    ),
    (
        "REELGATE_REFERENCE_ENGINE_URL",
        "URL of the reference engine",
    ),
    (
        "REELGATE_WEBHOOK_RETRY_SECS",
        "waits between webhook delivery attempts, in seconds, comma-separated",
    ),
    (
        "REELGATE_CONSOLE_LINK_TTL_SECS",
        "how long a console sign-in link stays valid, in seconds",
    ),
    ("REELGATE_MODERATOR", "rules or openai"),
    (
        "REELGATE_MODERATION_RULES",
        "path of the rule moderator's TOML file",
    ),
    (
        "REELGATE_MODERATION_BASE_URL",
        "base URL of the OpenAI-compatible moderator",
    ),
    (
        "REELGATE_MODERATION_MODEL",
        "model of the OpenAI-compatible moderator",
    ),
    (
        "REELGATE_MODERATION_API_KEY",
        "key of the OpenAI-compatible moderator",
    ),
    (
        "REELGATE_UPSTREAM_BASE_URL",
        "quick-start OpenAI-compatible chat upstream",
    ),
    (
        "REELGATE_UPSTREAM_API_KEY",
        "key of the quick-start chat upstream",
    ),
    (
        "REELGATE_UPSTREAM_CAPABILITIES",
        "capabilities of the quick-start upstream's models",
    ),
    ("REELGATE_LOG", "log filter"),
    (
        "REELGATE_LOG_FORMAT",
        "json for JSON log lines (local server)",
    ),
    (
        "REELGATE_METRICS_TOKEN",
        "bearer token of GET /metrics (unset: the route is off)",
    ),
    (
        "REELGATE_LOG_PROMPTS",
        "debugging only: request log lines carry prompt text",
    ),
    // The local server and the `reelgate` command (read by its argument parser).
    ("REELGATE_ADDR", "address the local server listens on"),
    ("REELGATE_DATA_DIR", "the local server's data directory"),
    (
        "REELGATE_ENGINE_PARALLEL",
        "renders the reference engine runs at once",
    ),
    (
        "REELGATE_ENGINE_FAULT_INJECTION",
        "serve the reference engine's fault switches",
    ),
    (
        "REELGATE_MAX_CONNECTIONS",
        "local server: open connections at once",
    ),
    (
        "REELGATE_MAX_IN_FLIGHT",
        "local server: requests in flight before 503 server_overloaded",
    ),
    (
        "REELGATE_SHED_LAG_MS",
        "local server: runtime lag that sheds requests, in milliseconds",
    ),
    (
        "REELGATE_SHED_FLOOR",
        "local server: requests in flight a lagging server still admits, fewer the further it lags",
    ),
    (
        "REELGATE_HEADER_TIMEOUT_SECS",
        "local server: time to send a request's headers, in seconds",
    ),
    (
        "REELGATE_WRITE_TIMEOUT_SECS",
        "local server: time one write of an answer may wait for the client to read, in seconds",
    ),
    (
        "REELGATE_CONFORM_CONCURRENCY",
        "conforms and stitches one process runs at once (default: one per core)",
    ),
    (
        "REELGATE_BODY_WAIT_SECS",
        "time a large request body waits for room in the body budget before a 503, in seconds",
    ),
    (
        "REELGATE_PDF_WAIT_SECS",
        "local server: time a PDF waits for a free renderer before a 503, in seconds",
    ),
    (
        "REELGATE_MIN_BODY_RATE",
        "local server: bytes a second a request body must average",
    ),
    ("REELGATE_BACKEND", "reelgate admin: local or aws"),
    ("REELGATE_ENGINE_ADDR", "reelgate engine: listen address"),
    (
        "REELGATE_ENGINE_PUBLIC_URL",
        "reelgate engine: its public URL",
    ),
    (
        "REELGATE_ENGINE_API_KEY_ENV",
        "reelgate engine: variable holding its key",
    ),
    // AWS.
    ("REELGATE_TABLE", "DynamoDB table"),
    ("REELGATE_BUCKET", "S3 bucket"),
    ("REELGATE_RENDER_QUEUE_URL", "SQS render queue URL"),
    (
        "REELGATE_WEBHOOK_QUEUE_URL",
        "SQS webhook delivery queue URL",
    ),
    (
        "REELGATE_STATE_MACHINE_ARN",
        "Step Functions state machine ARN",
    ),
    (
        "REELGATE_PDF_FUNCTION",
        "Lambda function that renders PDF inputs",
    ),
    (
        "REELGATE_SECRETS_ARN",
        "Secrets Manager secret with provider keys",
    ),
    (
        "REELGATE_RESPONSE_STREAM",
        "this Lambda function streams its responses (on/off)",
    ),
    // The front door (docs/deploy.md).
    (
        "REELGATE_ORIGIN_SECRET",
        "refuse requests without this x-reelgate-origin-secret value",
    ),
    (
        "REELGATE_ORIGIN_SECRET_SECONDARY",
        "a second origin secret accepted during a rotation",
    ),
    (
        "REELGATE_ORIGIN_SECRET_ARN",
        "Secrets Manager secret holding the origin secret(s)",
    ),
    (
        "REELGATE_ENGINE_SECRETS_ARN",
        "Secrets Manager secret holding the hosted video providers' keys",
    ),
    // Console sign-in through OpenID Connect (docs/console.md).
    (
        "REELGATE_OIDC_ISSUER",
        "OpenID Connect issuer URL for console sign-in",
    ),
    (
        "REELGATE_OIDC_CLIENT_ID",
        "the console's client id at the OpenID Connect issuer",
    ),
    (
        "REELGATE_OIDC_CLIENT_SECRET",
        "the console's client secret at the issuer (confidential clients)",
    ),
    (
        "REELGATE_OIDC_NAME",
        "the issuer's name on the console's sign-in button",
    ),
];

/// Names the project's scripts and tests export (test.sh, the e2e harness, the emulator
/// script). The service may start inside that environment, so they are known, and ignored.
pub const TOOLING_VARIABLES: &[&str] = &[
    "REELGATE_TOOLS_DIR",
    "REELGATE_PYTHON",
    "REELGATE_BIN",
    "REELGATE_EMULATOR_PORT",
    "REELGATE_EMULATOR_WAIT",
    "REELGATE_SKIP_AWS_TESTS",
    "REELGATE_TEST_TABLE",
    "REELGATE_TEST_BUCKET",
    "REELGATE_BASE_URL",
    "REELGATE_API_KEY",
    "REELGATE_SECOND_API_KEY",
    "REELGATE_OTHER_ORG_API_KEY",
    "REELGATE_EMPTY_API_KEY",
];

/// A variable that stops start-up, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{variable}: {problem}")]
pub struct ConfigError {
    pub variable: String,
    pub problem: String,
}

impl ConfigError {
    fn new(variable: &str, problem: impl Into<String>) -> Self {
        ConfigError {
            variable: variable.to_owned(),
            problem: problem.into(),
        }
    }
}

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

/// The OpenID Connect issuer the console signs people in with (`REELGATE_OIDC_*`). Its `Debug`
/// never shows the client secret.
#[derive(Clone, PartialEq, Eq)]
pub struct OidcSettings {
    /// The issuer URL exactly as the ID tokens name it (`iss`), without a trailing slash.
    pub issuer: String,
    pub client_id: String,
    /// The client secret of a confidential client (sent with HTTP Basic); None for a public
    /// client, which PKCE alone protects.
    pub client_secret: Option<String>,
    /// What the sign-in button calls the issuer ("Sign in with …").
    pub name: String,
}

impl std::fmt::Debug for OidcSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OidcSettings")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("name", &self.name)
            .finish()
    }
}

/// True for an `https` URL with a host, or an `http` one whose host is a loopback address or
/// `localhost` (a development or test issuer). The OpenID Connect issuer and every endpoint it
/// names must pass.
pub fn is_https_or_loopback(url: &str) -> bool {
    let Ok(u) = url::Url::parse(url) else {
        return false;
    };
    match (u.scheme(), u.host()) {
        ("https", Some(_)) => true,
        ("http", Some(url::Host::Domain(d))) => d.eq_ignore_ascii_case("localhost"),
        ("http", Some(url::Host::Ipv4(ip))) => ip.is_loopback(),
        ("http", Some(url::Host::Ipv6(ip))) => ip.is_loopback(),
        _ => false,
    }
}

fn oidc_settings(vars: &Vars) -> Result<Option<OidcSettings>, ConfigError> {
    let issuer = vars.text("REELGATE_OIDC_ISSUER");
    let client_id = vars.text("REELGATE_OIDC_CLIENT_ID");
    let (issuer, client_id) = match (issuer, client_id) {
        (None, None) => {
            for name in ["REELGATE_OIDC_CLIENT_SECRET", "REELGATE_OIDC_NAME"] {
                if vars.text(name).is_some() {
                    return Err(ConfigError::new(
                        name,
                        "needs REELGATE_OIDC_ISSUER and REELGATE_OIDC_CLIENT_ID as well",
                    ));
                }
            }
            return Ok(None);
        }
        (Some(_), None) => {
            return Err(ConfigError::new(
                "REELGATE_OIDC_CLIENT_ID",
                "REELGATE_OIDC_ISSUER needs the console's client id at that issuer",
            ))
        }
        (None, Some(_)) => {
            return Err(ConfigError::new(
                "REELGATE_OIDC_ISSUER",
                "REELGATE_OIDC_CLIENT_ID needs the issuer URL",
            ))
        }
        (Some(i), Some(c)) => (i.trim_end_matches('/').to_owned(), c),
    };
    if !is_https_or_loopback(&issuer) {
        return Err(ConfigError::new(
            "REELGATE_OIDC_ISSUER",
            format!(
                "'{issuer}' must be an https URL (plain http only on a loopback address, for tests)"
            ),
        ));
    }
    let name = vars.text("REELGATE_OIDC_NAME").unwrap_or_else(|| {
        url::Url::parse(&issuer)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_else(|| issuer.clone())
    });
    Ok(Some(OidcSettings {
        issuer,
        client_id,
        client_secret: vars.text("REELGATE_OIDC_CLIENT_SECRET"),
        name,
    }))
}

/// The default waits between webhook delivery attempts: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h,
/// 10 h (eight attempts over about 27.6 hours).
pub const WEBHOOK_RETRY_SECS: &[u64] = &[5, 300, 1800, 7200, 18000, 36000, 36000];

/// The shortest `REELGATE_METRICS_TOKEN` accepted.
pub const METRICS_TOKEN_MIN_LEN: usize = 16;

/// The bearer token of `GET /metrics`. Its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct MetricsToken(String);

impl MetricsToken {
    pub fn new(value: impl Into<String>) -> MetricsToken {
        MetricsToken(value.into())
    }
    pub fn value(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for MetricsToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MetricsToken(…)")
    }
}

/// The values of the front door's origin header the service accepts (one, or two during a
/// rotation). Its `Debug` never shows them.
#[derive(Clone, PartialEq, Eq)]
pub struct OriginSecrets(Vec<String>);

impl OriginSecrets {
    /// The accepted values; None when there is none.
    pub fn new(values: impl IntoIterator<Item = String>) -> Option<OriginSecrets> {
        let values: Vec<String> = values.into_iter().filter(|v| !v.is_empty()).collect();
        (!values.is_empty()).then_some(OriginSecrets(values))
    }

    pub fn values(&self) -> &[String] {
        &self.0
    }
}

impl std::fmt::Debug for OriginSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OriginSecrets(<{} redacted>)", self.0.len())
    }
}

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

/// Which moderator checks prompts and images.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModerationConfig {
    /// The rule moderator, with the rules file (else the built-in rules).
    Rules { rules_path: Option<PathBuf> },
    /// An OpenAI-compatible `/v1/moderations` endpoint.
    OpenAi {
        base_url: String,
        model: String,
        api_key: Option<String>,
    },
}

/// The quick-start chat upstream: every model an OpenAI-compatible server lists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpstreamDiscovery {
    pub base_url: String,
    /// True when `REELGATE_UPSTREAM_API_KEY` holds a key (the upstream reads it by that name).
    pub has_api_key: bool,
    pub capabilities: Vec<String>,
}

/// Where the AWS adapters find their resources (only the AWS hosts require them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AwsResources {
    pub table: Option<String>,
    pub bucket: Option<String>,
    pub render_queue_url: Option<String>,
    /// `REELGATE_WEBHOOK_QUEUE_URL`: the webhook delivery queue (none: no webhooks are sent).
    pub webhook_queue_url: Option<String>,
    pub state_machine_arn: Option<String>,
    pub secrets_arn: Option<String>,
    /// `REELGATE_ORIGIN_SECRET_ARN`: read like `secrets_arn`, for the origin secret.
    pub origin_secret_arn: Option<String>,
    /// `REELGATE_ENGINE_SECRETS_ARN`: read like `secrets_arn`, for the hosted video providers'
    /// keys (set only on the render worker and the cancel route).
    pub engine_secrets_arn: Option<String>,
    /// `REELGATE_PDF_FUNCTION`: the Lambda function that renders PDF inputs to page images
    /// (none: a function that declares the PDF port cannot render).
    pub pdf_function: Option<String>,
}

/// The whole configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// The knobs; `public_base_url` stays the default until the host knows its address
    /// ([`Config::public_url`] when set).
    pub settings: Settings,
    /// `REELGATE_PUBLIC_URL`, without a trailing slash.
    pub public_url: Option<String>,
    /// `REELGATE_CONTENT_REDIRECT` when set; each host has its own default (on for Lambda).
    pub content_redirect: Option<bool>,
    /// `REELGATE_ACCOUNT_CACHE_SECS` when set; each host has its own default.
    pub account_cache: Option<Duration>,
    pub catalog_path: Option<PathBuf>,
    pub moderation: ModerationConfig,
    pub reference_engine_url: Option<String>,
    pub upstream_discovery: Option<UpstreamDiscovery>,
    pub aws: AwsResources,
    /// `REELGATE_RESPONSE_STREAM`: this Lambda function answers through response streaming.
    pub response_stream: bool,
    pub log_filter: Option<String>,
    pub log_json: bool,
    /// `REELGATE_LOG_PROMPTS`: request log lines carry the prompt text (a debugging aid; off).
    pub log_prompts: bool,
    /// OpenTelemetry trace export (the standard `OTEL_*` variables); None: no tracing layer
    /// is installed at all.
    pub traces: Option<TraceExport>,
}

/// Where and how spans are exported over OTLP/HTTP (protobuf), from the standard variables:
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the full URL) or `OTEL_EXPORTER_OTLP_ENDPOINT` (a base
/// URL, `/v1/traces` appended), `OTEL_EXPORTER_OTLP_HEADERS` / `OTEL_EXPORTER_OTLP_TRACES_HEADERS`
/// (`name=value,…`), `OTEL_SERVICE_NAME`, `OTEL_EXPORTER_OTLP_PROTOCOL` (only `http/protobuf`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceExport {
    /// The full URL spans are POSTed to.
    pub endpoint: String,
    pub headers: Vec<(String, String)>,
    pub service_name: String,
}

/// Reads the standard OpenTelemetry exporter variables (empty values count as unset). No
/// endpoint: no export. `OTEL_SDK_DISABLED=true` turns export off even with one.
fn trace_export(otel: &BTreeMap<String, String>) -> Result<Option<TraceExport>, ConfigError> {
    let get = |name: &str| otel.get(name).map(String::as_str);
    if get("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        return Ok(None);
    }
    let endpoint = match (
        get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
        get("OTEL_EXPORTER_OTLP_ENDPOINT"),
    ) {
        (Some(full), _) => full.to_owned(),
        (None, Some(base)) => format!("{}/v1/traces", base.trim_end_matches('/')),
        (None, None) => return Ok(None),
    };
    let name = if get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some() {
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
    } else {
        "OTEL_EXPORTER_OTLP_ENDPOINT"
    };
    match url::Url::parse(&endpoint) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {}
        _ => {
            return Err(ConfigError::new(
                name,
                "must be an http:// or https:// URL, e.g. http://127.0.0.1:4318",
            ))
        }
    }
    for protocol in [
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ] {
        match get(protocol) {
            None | Some("http/protobuf") => {}
            Some(other) => {
                return Err(ConfigError::new(
                    protocol,
                    format!("'{other}' is not supported: reelgate exports http/protobuf only"),
                ))
            }
        }
    }
    let mut headers = Vec::new();
    for list in [
        "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    ] {
        for pair in get(list)
            .unwrap_or("")
            .split(',')
            .filter(|p| !p.trim().is_empty())
        {
            let (k, v) = pair.split_once('=').ok_or_else(|| {
                ConfigError::new(list, "must be name=value pairs separated by commas")
            })?;
            let (k, v) = (k.trim(), percent_decode(v.trim()));
            if http::HeaderName::from_bytes(k.as_bytes()).is_err()
                || http::HeaderValue::from_str(&v).is_err()
            {
                return Err(ConfigError::new(
                    list,
                    format!("'{k}' is not a valid header"),
                ));
            }
            headers.retain(|(name, _): &(String, String)| !name.eq_ignore_ascii_case(k));
            headers.push((k.to_owned(), v));
        }
    }
    Ok(Some(TraceExport {
        endpoint,
        headers,
        service_name: get("OTEL_SERVICE_NAME").unwrap_or("reelgate").to_owned(),
    }))
}

/// `%XX` escapes in an OTLP header value (the OpenTelemetry spec's format for them).
fn percent_decode(v: &str) -> String {
    let bytes = v.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
            if let Ok(b) = u8::from_str_radix(hex, 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Default for Config {
    fn default() -> Self {
        Config {
            settings: Settings::default(),
            public_url: None,
            content_redirect: None,
            account_cache: None,
            catalog_path: None,
            moderation: ModerationConfig::Rules { rules_path: None },
            reference_engine_url: None,
            upstream_discovery: None,
            aws: AwsResources::default(),
            response_stream: false,
            log_filter: None,
            log_json: false,
            log_prompts: false,
            traces: None,
        }
    }
}

impl Config {
    /// Reads this process's environment once.
    pub fn from_env() -> Result<Config, ConfigError> {
        Self::from_vars(std::env::vars_os().filter_map(|(name, value)| {
            let name = name.into_string().ok()?;
            // A non-UTF-8 value of one of our variables is malformed; keep it visible as such.
            let value = value
                .into_string()
                .unwrap_or_else(|raw| format!("\u{FFFD}{}", raw.to_string_lossy()));
            Some((name, value))
        }))
    }

    /// Reads the given variables (only `REELGATE_*` names are looked at). Empty values count as
    /// unset, as they always have.
    pub fn from_vars(
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Config, ConfigError> {
        let mut ours = BTreeMap::new();
        let mut otel = BTreeMap::new();
        for (name, value) in vars {
            if name.starts_with("OTEL_") {
                let value = value.trim().to_owned();
                if !value.is_empty() {
                    otel.insert(name, value);
                }
                continue;
            }
            if !name.starts_with("REELGATE_") {
                continue;
            }
            if TOOLING_VARIABLES.contains(&name.as_str()) {
                continue;
            }
            if !VARIABLES.iter().any(|(known, _)| *known == name) {
                return Err(ConfigError::new(
                    &name,
                    "reelgate does not know this variable (see docs/configuration.md); remove it \
                     or correct its name",
                ));
            }
            let value = value.trim().to_owned();
            if !value.is_empty() {
                ours.insert(name, value);
            }
        }
        let vars = Vars(ours);
        let mut settings = Settings::default();
        if let Some(v) = vars.number("REELGATE_PRESIGN_TTL_SECS", "whole seconds")? {
            settings.presign_ttl = Duration::from_secs(v.max(1));
        }
        if let Some(v) =
            vars.number("REELGATE_CONFORM_CONCURRENCY", "a whole number of conforms")?
        {
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
        settings.origin_secrets = origin_secrets(&vars)?;
        settings.metrics_token = match vars.text("REELGATE_METRICS_TOKEN") {
            None => None,
            Some(v) if v.len() >= METRICS_TOKEN_MIN_LEN && v.bytes().all(|b| b.is_ascii_graphic()) => {
                Some(MetricsToken(v))
            }
            Some(_) => {
                return Err(ConfigError::new(
                    "REELGATE_METRICS_TOKEN",
                    format!(
                        "the metrics token needs at least {METRICS_TOKEN_MIN_LEN} printable ASCII characters without spaces"
                    ),
                ))
            }
        };
        settings.oidc = oidc_settings(&vars)?;
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
        let moderation = match vars.text("REELGATE_MODERATOR").as_deref() {
            None | Some("rules") => ModerationConfig::Rules {
                rules_path: vars.text("REELGATE_MODERATION_RULES").map(PathBuf::from),
            },
            Some("openai") => ModerationConfig::OpenAi {
                base_url: vars.text("REELGATE_MODERATION_BASE_URL").ok_or_else(|| {
                    ConfigError::new(
                        "REELGATE_MODERATION_BASE_URL",
                        "REELGATE_MODERATOR=openai needs the moderation service's base URL",
                    )
                })?,
                model: vars
                    .text("REELGATE_MODERATION_MODEL")
                    .unwrap_or_else(|| "omni-moderation-latest".into()),
                api_key: vars.text("REELGATE_MODERATION_API_KEY"),
            },
            Some(other) => {
                return Err(ConfigError::new(
                    "REELGATE_MODERATOR",
                    format!("'{other}' is not a moderator: use rules or openai"),
                ))
            }
        };
        let upstream_discovery =
            vars.text("REELGATE_UPSTREAM_BASE_URL")
                .map(|base_url| UpstreamDiscovery {
                    base_url,
                    has_api_key: vars.text("REELGATE_UPSTREAM_API_KEY").is_some(),
                    capabilities: vars
                        .text("REELGATE_UPSTREAM_CAPABILITIES")
                        .map(|list| {
                            list.split(',')
                                .map(|c| c.trim().to_ascii_lowercase())
                                .filter(|c| !c.is_empty())
                                .collect::<Vec<_>>()
                        })
                        .filter(|list| !list.is_empty())
                        .unwrap_or_else(|| vec!["text".into(), "tools".into()]),
                });
        let log_json = match vars.text("REELGATE_LOG_FORMAT").as_deref() {
            None | Some("text") => false,
            Some("json") => true,
            Some(other) => {
                return Err(ConfigError::new(
                    "REELGATE_LOG_FORMAT",
                    format!("'{other}' is not a log format: use json or text"),
                ))
            }
        };
        Ok(Config {
            settings,
            public_url: vars
                .text("REELGATE_PUBLIC_URL")
                .map(|u| u.trim_end_matches('/').to_owned()),
            content_redirect: vars.switch("REELGATE_CONTENT_REDIRECT")?,
            account_cache: vars
                .number("REELGATE_ACCOUNT_CACHE_SECS", "a number of seconds")?
                .map(Duration::from_secs),
            catalog_path: vars.text("REELGATE_CATALOG").map(PathBuf::from),
            moderation,
            reference_engine_url: vars.text("REELGATE_REFERENCE_ENGINE_URL"),
            upstream_discovery,
            aws: AwsResources {
                table: vars.text("REELGATE_TABLE"),
                bucket: vars.text("REELGATE_BUCKET"),
                render_queue_url: vars.text("REELGATE_RENDER_QUEUE_URL"),
                webhook_queue_url: vars.text("REELGATE_WEBHOOK_QUEUE_URL"),
                state_machine_arn: vars.text("REELGATE_STATE_MACHINE_ARN"),
                secrets_arn: vars.text("REELGATE_SECRETS_ARN"),
                origin_secret_arn: vars.text("REELGATE_ORIGIN_SECRET_ARN"),
                engine_secrets_arn: vars.text("REELGATE_ENGINE_SECRETS_ARN"),
                pdf_function: vars.text("REELGATE_PDF_FUNCTION"),
            },
            response_stream: vars.switch("REELGATE_RESPONSE_STREAM")?.unwrap_or(false),
            log_filter: vars.text("REELGATE_LOG"),
            log_json,
            log_prompts: vars.switch("REELGATE_LOG_PROMPTS")?.unwrap_or(false),
            traces: trace_export(&otel)?,
        })
    }

    /// The settings a host runs with: its public URL (the configured one, else `fallback_url`)
    /// and, unless configured, its own default for content redirects.
    pub fn settings_for_host(&self, fallback_url: &str, defaults: &HostDefaults) -> Settings {
        Settings {
            public_base_url: self
                .public_url
                .clone()
                .unwrap_or_else(|| fallback_url.trim_end_matches('/').to_owned()),
            content_redirect: self.content_redirect.unwrap_or(defaults.content_redirect),
            account_cache: self.account_cache.unwrap_or(defaults.account_cache),
            record_key_use: defaults.record_key_use,
            console_links_by_cli: defaults.console_links_by_cli,
            ..self.settings.clone()
        }
    }
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

/// The shortest origin secret accepted: the header is the only thing standing between the
/// internet and the origins' own addresses.
pub const ORIGIN_SECRET_MIN_LEN: usize = 32;

fn origin_secrets(vars: &Vars) -> Result<Option<OriginSecrets>, ConfigError> {
    let names = ["REELGATE_ORIGIN_SECRET", "REELGATE_ORIGIN_SECRET_SECONDARY"];
    for name in names {
        if let Some(v) = vars.text(name) {
            if v.len() < ORIGIN_SECRET_MIN_LEN {
                return Err(ConfigError::new(
                    name,
                    format!("an origin secret needs at least {ORIGIN_SECRET_MIN_LEN} characters"),
                ));
            }
            if !v.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(ConfigError::new(
                    name,
                    "an origin secret is printable ASCII without spaces (it travels in a header)",
                ));
            }
        }
    }
    if vars.text(names[0]).is_none() && vars.text(names[1]).is_some() {
        return Err(ConfigError::new(
            names[1],
            "a secondary origin secret needs REELGATE_ORIGIN_SECRET as well",
        ));
    }
    Ok(OriginSecrets::new(
        names.into_iter().filter_map(|name| vars.text(name)),
    ))
}

/// The set `REELGATE_*` values, trimmed, empty ones dropped.
struct Vars(BTreeMap<String, String>);

impl Vars {
    fn text(&self, name: &str) -> Option<String> {
        self.0.get(name).cloned()
    }

    fn number(&self, name: &str, what: &str) -> Result<Option<u64>, ConfigError> {
        self.0
            .get(name)
            .map(|v| {
                v.parse::<u64>()
                    .map_err(|_| ConfigError::new(name, format!("'{v}' is not {what}")))
            })
            .transpose()
    }

    /// On/off: `1`/`true`/`on`/`yes` or `0`/`false`/`off`/`no` (any case); anything else stops
    /// start-up, so `REELGATE_CONTENT_REDIRECT=flase` cannot mean "on" on one host and "off" on
    /// another.
    fn switch(&self, name: &str) -> Result<Option<bool>, ConfigError> {
        self.0
            .get(name)
            .map(|v| match v.to_ascii_lowercase().as_str() {
                "1" | "true" | "on" | "yes" => Ok(true),
                "0" | "false" | "off" | "no" => Ok(false),
                _ => Err(ConfigError::new(
                    name,
                    format!("'{v}' is not a switch: use 1/true/on or 0/false/off"),
                )),
            })
            .transpose()
    }
}

/// Replaces `${NAME}` with the environment variable's value (empty when unset), as the catalog
/// documents for URLs. (The catalog names provider variables of the operator's choosing, such
/// as keys loaded from Secrets Manager at start-up; they are read where a provider connects.)
pub fn expand_env(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find('}') {
            Some(end) => {
                out.push_str(&std::env::var(&after[..end]).unwrap_or_default());
                rest = &after[end + 1..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        Config::from_vars(vars.iter().map(|(n, v)| (n.to_string(), v.to_string())))
    }

    #[test]
    fn oidc_needs_issuer_and_client_id_and_an_https_issuer() {
        assert!(config(&[]).expect("none").settings.oidc.is_none());
        let c = config(&[
            ("REELGATE_OIDC_ISSUER", "https://id.example.com/realms/r/"),
            ("REELGATE_OIDC_CLIENT_ID", "console"),
            ("REELGATE_OIDC_CLIENT_SECRET", "s3cret-value"),
        ])
        .expect("valid");
        let oidc = c.settings.oidc.expect("set");
        assert_eq!(oidc.issuer, "https://id.example.com/realms/r");
        assert_eq!(oidc.name, "id.example.com");
        assert!(!format!("{oidc:?}").contains("s3cret-value"));
        let err = config(&[("REELGATE_OIDC_ISSUER", "https://id.example.com")]).unwrap_err();
        assert_eq!(err.variable, "REELGATE_OIDC_CLIENT_ID");
        let err = config(&[("REELGATE_OIDC_CLIENT_ID", "console")]).unwrap_err();
        assert_eq!(err.variable, "REELGATE_OIDC_ISSUER");
        let err = config(&[
            ("REELGATE_OIDC_ISSUER", "http://id.example.com"),
            ("REELGATE_OIDC_CLIENT_ID", "console"),
        ])
        .unwrap_err();
        assert_eq!(err.variable, "REELGATE_OIDC_ISSUER");
        let local = config(&[
            ("REELGATE_OIDC_ISSUER", "http://127.0.0.1:9000"),
            ("REELGATE_OIDC_CLIENT_ID", "console"),
            ("REELGATE_OIDC_NAME", "Test issuer"),
        ])
        .expect("loopback http is fine");
        assert_eq!(local.settings.oidc.expect("set").name, "Test issuer");
        let err = config(&[("REELGATE_OIDC_CLIENT_SECRET", "x")]).unwrap_err();
        assert_eq!(err.variable, "REELGATE_OIDC_CLIENT_SECRET");
    }

    #[test]
    fn trace_export_only_with_an_endpoint() {
        assert_eq!(config(&[]).expect("none").traces, None);
        assert_eq!(
            config(&[("OTEL_SERVICE_NAME", "x")])
                .expect("no endpoint")
                .traces,
            None
        );
        let t = config(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318/"),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "authorization=Bearer%20abc, x-team = ops",
            ),
        ])
        .expect("valid")
        .traces
        .expect("on");
        assert_eq!(t.endpoint, "http://127.0.0.1:4318/v1/traces");
        assert_eq!(t.service_name, "reelgate");
        assert_eq!(
            t.headers,
            vec![
                ("authorization".to_owned(), "Bearer abc".to_owned()),
                ("x-team".to_owned(), "ops".to_owned())
            ]
        );
        let t = config(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://base:4318"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "https://c.example/otlp/traces",
            ),
            ("OTEL_SERVICE_NAME", "gw"),
        ])
        .expect("valid")
        .traces
        .expect("on");
        assert_eq!(t.endpoint, "https://c.example/otlp/traces");
        assert_eq!(t.service_name, "gw");
        let off = config(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("OTEL_SDK_DISABLED", "true"),
        ]);
        assert_eq!(off.expect("valid").traces, None);
        for (name, value) in [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "127.0.0.1:4318"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "no-equals-sign"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "bad name=v"),
        ] {
            let mut vars = vec![(name, value)];
            if name != "OTEL_EXPORTER_OTLP_ENDPOINT" {
                vars.push(("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"));
            }
            let err = config(&vars).expect_err(value);
            assert_eq!(err.variable, name, "{value}");
        }
    }

    #[test]
    fn an_unknown_reelgate_name_stops_start_up_naming_it() {
        let err = config(&[("REELGATE_PRESIGN_TTL", "60")]).expect_err("unknown");
        assert_eq!(err.variable, "REELGATE_PRESIGN_TTL");
        assert!(
            err.to_string().starts_with("REELGATE_PRESIGN_TTL: "),
            "{err}"
        );
        // Other prefixes are not ours; the tooling's names are known.
        config(&[("PATH", "/bin"), ("REELGATE_TOOLS_DIR", "/x")]).expect("others ignored");
    }

    #[test]
    fn a_malformed_value_stops_start_up_naming_the_variable() {
        for (name, value) in [
            ("REELGATE_PRESIGN_TTL_SECS", "15m"),
            ("REELGATE_RENDER_POLL_SECS", "-1"),
            ("REELGATE_MAX_UPLOAD_BYTES", "1e9"),
            ("REELGATE_CONTENT_REDIRECT", "flase"),
            ("REELGATE_ALLOW_PRIVATE_FILE_URLS", "maybe"),
            ("REELGATE_RESPONSE_STREAM", "2"),
            ("REELGATE_MODERATOR", "openia"),
            ("REELGATE_LOG_FORMAT", "xml"),
        ] {
            let err = config(&[(name, value)]).expect_err(name);
            assert_eq!(err.variable, name, "{err}");
            assert!(err.problem.contains(value), "{err}");
        }
        let err = config(&[("REELGATE_MODERATOR", "openai")]).expect_err("no base url");
        assert_eq!(err.variable, "REELGATE_MODERATION_BASE_URL");
    }

    #[test]
    fn content_redirect_has_one_rule_and_a_host_default() {
        let off = config(&[("REELGATE_CONTENT_REDIRECT", "false")]).expect("off");
        let (lambda, local) = (&HostDefaults::LAMBDA, &HostDefaults::LOCAL);
        assert!(!off.settings_for_host("http://x", lambda).content_redirect);
        let zero = config(&[("REELGATE_CONTENT_REDIRECT", "0")]).expect("0");
        assert!(!zero.settings_for_host("http://x", lambda).content_redirect);
        let on = config(&[("REELGATE_CONTENT_REDIRECT", "TRUE")]).expect("on");
        assert!(on.settings_for_host("http://x", local).content_redirect);
        let unset = config(&[("REELGATE_CONTENT_REDIRECT", " ")]).expect("unset");
        assert!(unset.settings_for_host("http://x", lambda).content_redirect);
        assert!(!unset.settings_for_host("http://x", local).content_redirect);
    }

    #[test]
    fn the_account_cache_is_the_hosts_unless_set() {
        let unset = config(&[]).expect("unset");
        let lambda = unset.settings_for_host("http://x", &HostDefaults::LAMBDA);
        assert_eq!(lambda.account_cache, Duration::from_secs(5));
        let local = unset.settings_for_host("http://x", &HostDefaults::LOCAL);
        assert_eq!(local.account_cache, Duration::ZERO);
        let off = config(&[("REELGATE_ACCOUNT_CACHE_SECS", "0")]).expect("0");
        let off = off.settings_for_host("http://x", &HostDefaults::LAMBDA);
        assert_eq!(off.account_cache, Duration::ZERO);
        assert!(config(&[("REELGATE_ACCOUNT_CACHE_SECS", "soon")]).is_err());
    }

    #[test]
    fn origin_secrets_are_long_printable_and_never_shown() {
        let long = "a".repeat(ORIGIN_SECRET_MIN_LEN);
        let other = "b".repeat(ORIGIN_SECRET_MIN_LEN + 8);
        let c = config(&[("REELGATE_ORIGIN_SECRET", &long)]).expect("one");
        let secrets = c.settings.origin_secrets.expect("set");
        assert_eq!(secrets.values(), std::slice::from_ref(&long));
        assert!(
            !format!("{secrets:?}").contains(&long),
            "Debug hides the value"
        );
        let c = config(&[
            ("REELGATE_ORIGIN_SECRET", &long),
            ("REELGATE_ORIGIN_SECRET_SECONDARY", &other),
        ])
        .expect("two");
        assert_eq!(
            c.settings.origin_secrets.expect("set").values(),
            [long.clone(), other.clone()]
        );
        assert!(config(&[]).expect("none").settings.origin_secrets.is_none());
        let short = "a".repeat(ORIGIN_SECRET_MIN_LEN - 1);
        let spaced = format!("{} x", "a".repeat(ORIGIN_SECRET_MIN_LEN));
        for (vars, variable) in [
            (
                vec![("REELGATE_ORIGIN_SECRET", short.as_str())],
                "REELGATE_ORIGIN_SECRET",
            ),
            (
                vec![("REELGATE_ORIGIN_SECRET", spaced.as_str())],
                "REELGATE_ORIGIN_SECRET",
            ),
            (
                vec![("REELGATE_ORIGIN_SECRET_SECONDARY", other.as_str())],
                "REELGATE_ORIGIN_SECRET_SECONDARY",
            ),
        ] {
            let err = config(&vars).expect_err("refused");
            assert_eq!(err.variable, variable, "{err}");
        }
        let c = config(&[("REELGATE_ORIGIN_SECRET_ARN", "arn:aws:secretsmanager:x")]).expect("arn");
        assert_eq!(
            c.aws.origin_secret_arn.as_deref(),
            Some("arn:aws:secretsmanager:x")
        );
    }

    #[test]
    fn values_are_typed() {
        let c = config(&[
            ("REELGATE_PRESIGN_TTL_SECS", "0"),
            ("REELGATE_MAX_UPLOAD_BYTES", "1024"),
            ("REELGATE_PUBLIC_URL", "https://api.example.test/"),
            ("REELGATE_UPSTREAM_BASE_URL", "http://127.0.0.1:9/v1"),
            ("REELGATE_UPSTREAM_CAPABILITIES", "Vision, tools,"),
            ("REELGATE_MODERATOR", "openai"),
            ("REELGATE_MODERATION_BASE_URL", "http://127.0.0.1:9"),
        ])
        .expect("config");
        assert_eq!(c.settings.presign_ttl, Duration::from_secs(1));
        assert_eq!(c.settings.max_upload_bytes, 1024);
        let s = c.settings_for_host("http://fallback", &HostDefaults::LOCAL);
        assert_eq!(s.public_base_url, "https://api.example.test");
        let d = c.upstream_discovery.expect("discovery");
        assert_eq!(d.capabilities, vec!["vision", "tools"]);
        assert!(!d.has_api_key);
        assert!(
            matches!(c.moderation, ModerationConfig::OpenAi { ref model, .. } if model == "omni-moderation-latest")
        );
    }

    #[test]
    fn every_variable_is_documented() {
        let docs = include_str!("../../../docs/configuration.md");
        for (name, _) in VARIABLES {
            assert!(
                docs.contains(name),
                "{name} is missing from docs/configuration.md"
            );
        }
    }
}
