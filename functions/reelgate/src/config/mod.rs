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

mod aws;
mod console;
mod providers;
mod secrets;
mod settings;
mod telemetry;
mod variables;
mod vars;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

pub use aws::AwsResources;
pub use console::{is_https_or_loopback, OidcSettings};
pub use providers::{expand_env, ModerationConfig, UpstreamDiscovery};
pub use secrets::{MetricsToken, OriginSecrets, METRICS_TOKEN_MIN_LEN, ORIGIN_SECRET_MIN_LEN};
pub use settings::{HostDefaults, Settings, WEBHOOK_RETRY_SECS};
pub use telemetry::TraceExport;
pub use variables::{TOOLING_VARIABLES, VARIABLES};
pub use vars::ConfigError;

use vars::Vars;

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
        let settings = settings::read(&vars)?;
        let moderation = providers::moderation(&vars)?;
        let upstream_discovery = providers::upstream_discovery(&vars);
        let log_json = telemetry::log_json(&vars)?;
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
            aws: AwsResources::from_vars(&vars),
            response_stream: vars.switch("REELGATE_RESPONSE_STREAM")?.unwrap_or(false),
            log_filter: vars.text("REELGATE_LOG"),
            log_json,
            log_prompts: vars.switch("REELGATE_LOG_PROMPTS")?.unwrap_or(false),
            traces: telemetry::trace_export(&otel)?,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        Config::from_vars(vars.iter().map(|(n, v)| (n.to_string(), v.to_string())))
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
}
