//! The shared secrets requests are checked against: the front door's origin secret and the
//! metrics route's bearer token. Neither is ever shown by `Debug`.

use super::vars::{ConfigError, Vars};

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

/// `REELGATE_METRICS_TOKEN`, when set.
pub(super) fn metrics_token(vars: &Vars) -> Result<Option<MetricsToken>, ConfigError> {
    Ok(match vars.text("REELGATE_METRICS_TOKEN") {
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
    })
}

/// The shortest origin secret accepted: the header is the only thing standing between the
/// internet and the origins' own addresses.
pub const ORIGIN_SECRET_MIN_LEN: usize = 32;

pub(super) fn origin_secrets(vars: &Vars) -> Result<Option<OriginSecrets>, ConfigError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        Config::from_vars(vars.iter().map(|(n, v)| (n.to_string(), v.to_string())))
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
}
