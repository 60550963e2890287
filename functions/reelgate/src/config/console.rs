//! Console sign-in through an OpenID Connect issuer (`REELGATE_OIDC_*`).

use super::vars::{ConfigError, Vars};

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

pub(super) fn oidc_settings(vars: &Vars) -> Result<Option<OidcSettings>, ConfigError> {
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

#[cfg(test)]
mod tests {
    use crate::config::{Config, ConfigError};

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
}
