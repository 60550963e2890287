//! The providers the service calls besides its engines: the moderator, the quick-start chat
//! upstream, and the `${NAME}` expansion of the catalog's provider URLs.

use std::path::PathBuf;

use super::vars::{ConfigError, Vars};

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

/// `REELGATE_MODERATOR` and the chosen moderator's variables.
pub(super) fn moderation(vars: &Vars) -> Result<ModerationConfig, ConfigError> {
    Ok(match vars.text("REELGATE_MODERATOR").as_deref() {
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
    })
}

/// `REELGATE_UPSTREAM_*`, when a base URL is set.
pub(super) fn upstream_discovery(vars: &Vars) -> Option<UpstreamDiscovery> {
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
        })
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
