//! Talking to the configured OpenID Connect issuer: its discovery document, its signing keys
//! (JWKS) and its token endpoint. The issuer is an operator setting (`REELGATE_OIDC_ISSUER`),
//! never caller input; the URLs come from that setting and from the discovery document the
//! issuer itself serves. The HTTP implementation (`crate::adapters::issuer_http`) bounds time
//! and size and follows no redirects.

use async_trait::async_trait;

/// Why a call to the issuer gave nothing usable. The messages name the endpoint's role, never
/// what it answered: they may end up on a sign-in page.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IssuerError {
    #[error("the URL is not https (plain http is allowed only on a loopback address)")]
    BadUrl,
    #[error("the identity provider is unreachable")]
    Unreachable,
    #[error("the identity provider did not answer in time")]
    Timeout,
    #[error("the identity provider answered HTTP {0}")]
    Status(u16),
    #[error("the identity provider's answer is larger than {0} bytes")]
    TooLarge(usize),
    #[error("the identity provider's answer is not JSON")]
    NotJson,
}

/// The HTTP calls an OpenID Connect relying party makes.
#[async_trait]
pub trait IssuerHttp: Send + Sync {
    /// GETs a JSON document (discovery, JWKS).
    async fn get_json(&self, url: &str) -> Result<serde_json::Value, IssuerError>;

    /// POSTs a form (the token request), with HTTP Basic client authentication when
    /// `basic_auth` is given; answers the status and the JSON body (an error answer has a JSON
    /// body too).
    async fn post_form(
        &self,
        url: &str,
        form: &[(&str, &str)],
        basic_auth: Option<(&str, &str)>,
    ) -> Result<(u16, serde_json::Value), IssuerError>;
}
