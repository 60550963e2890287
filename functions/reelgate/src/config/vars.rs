//! Reading the set variables: text, numbers and switches, and the error that names the
//! variable when a value is malformed.

use std::collections::BTreeMap;

/// A variable that stops start-up, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{variable}: {problem}")]
pub struct ConfigError {
    pub variable: String,
    pub problem: String,
}

impl ConfigError {
    pub(super) fn new(variable: &str, problem: impl Into<String>) -> Self {
        ConfigError {
            variable: variable.to_owned(),
            problem: problem.into(),
        }
    }
}

/// The set `REELGATE_*` values, trimmed, empty ones dropped.
pub(super) struct Vars(pub(super) BTreeMap<String, String>);

impl Vars {
    pub(super) fn text(&self, name: &str) -> Option<String> {
        self.0.get(name).cloned()
    }

    pub(super) fn number(&self, name: &str, what: &str) -> Result<Option<u64>, ConfigError> {
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
    pub(super) fn switch(&self, name: &str) -> Result<Option<bool>, ConfigError> {
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
