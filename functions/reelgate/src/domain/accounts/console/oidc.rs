//! Console sign-in through an OpenID Connect issuer: the authorization-code flow with PKCE
//! (S256), as a relying party of the issuer the operator configured (`REELGATE_OIDC_*`).
//!
//! 1. [`Oidc::begin`] reads the issuer's discovery document (once, then cached), stores a flow
//!    record (state, nonce, PKCE verifier; ten minutes) and answers the authorization URL and a
//!    browser secret. The secret goes into a short-lived cookie: the callback is accepted only
//!    from the browser that started the flow.
//! 2. [`Oidc::complete`] takes the callback: the cookie must name a live flow whose state is the
//!    one in the callback, and the flow is marked used before anything else (a replayed
//!    callback is refused). The code is exchanged at the token endpoint with the PKCE verifier;
//!    the ID token's signature is checked against the issuer's published keys (JWKS, cached,
//!    fetched again when a token names an unknown key id), then its issuer, audience, expiry
//!    (with a small leeway) and nonce.
//! 3. The person is found by the token's subject (a link stored at an earlier sign-in) or by its
//!    email address when the issuer says it is verified. A person who is a member of several
//!    organizations chooses one ([`Oidc::choose`]); then the same console session a sign-in
//!    link gives is opened, and the subject is linked to the person.

use super::{hash_secret, record_id, same_hash, Console, IssuedSession};
use crate::config::{is_https_or_loopback, OidcSettings};
use crate::domain::accounts::identities::{self, Candidate};
use crate::domain::accounts::Accounts;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::ids::{new_id, new_secret};
use crate::ports::issuer::{IssuerError, IssuerHttp};
use crate::ports::store::{item, now_secs, Condition, ItemExt, ItemStore, Key, StoreError, Update};
use base64::Engine;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Prefix of the browser secret held in the flow cookie.
pub const FLOW_PREFIX: &str = "rgo_";
/// How long a started sign-in may take at the issuer.
pub const FLOW_SECS: i64 = 10 * 60;
/// Clock difference tolerated on `exp`, `nbf` and `iat`.
pub const LEEWAY_SECS: u64 = 60;
/// The signing algorithms accepted (never `none`, never a shared-secret HMAC).
pub const ALGORITHMS: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
];
/// A token naming an unknown key id fetches the key set again, at most this often.
const JWKS_REFETCH_INTERVAL: Duration = Duration::from_secs(5);
/// Keys are fetched again when older than this, so a key the issuer withdrew stops working.
const JWKS_MAX_AGE: Duration = Duration::from_secs(3600);

fn flow_key(flow_id: &str) -> Key {
    crate::domain::table_keys::oidc_flow(flow_id)
}

fn refused(reason: &str) -> ApiError {
    ApiError::unauthorized(
        "oidc_sign_in_refused",
        format!("The sign-in was refused: {reason}. Start again from the console's sign-in page."),
    )
}

fn issuer_unavailable(what: &str, e: IssuerError) -> ApiError {
    tracing::warn!(error = %e, what, "OpenID Connect issuer call failed");
    ApiError::unavailable(
        "oidc_issuer_unavailable",
        format!("The identity provider could not be reached ({what}: {e}). Try again shortly."),
    )
}

/// The endpoints the issuer's discovery document names.
#[derive(Clone, Debug)]
struct Discovery {
    authorization_endpoint: String,
    token_endpoint: String,
    jwks_uri: String,
}

#[derive(Default)]
struct KeyCache {
    keys: Vec<Jwk>,
    fetched: Option<Instant>,
}

/// Why a token did not verify against a key set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenRefusal {
    /// The token names a key id the set does not hold (fetch the set again, then refuse).
    UnknownKey,
    /// Anything else, in words for the refusal page.
    Refused(&'static str),
}

/// The ID token claims the console uses.
#[derive(Debug, Clone, Deserialize)]
pub struct IdClaims {
    pub sub: String,
    #[serde(default)]
    pub email: Option<String>,
    /// `true`, or the string `"true"` (some issuers send it so).
    #[serde(default)]
    pub email_verified: Option<serde_json::Value>,
    #[serde(default)]
    pub nonce: Option<String>,
    #[serde(default)]
    pub azp: Option<String>,
    #[serde(default)]
    pub aud: Option<serde_json::Value>,
}

impl IdClaims {
    /// The email address, when the issuer says it is verified.
    pub fn verified_email(&self) -> Option<&str> {
        let verified = match &self.email_verified {
            Some(serde_json::Value::Bool(b)) => *b,
            Some(serde_json::Value::String(s)) => s.eq_ignore_ascii_case("true"),
            _ => false,
        };
        self.email
            .as_deref()
            .filter(|e| verified && e.contains('@'))
    }
}

/// Checks an ID token against a key set and the relying party's expectations. Pure: no I/O.
pub fn verify_id_token(
    token: &str,
    keys: &[Jwk],
    issuer: &str,
    client_id: &str,
    nonce: &str,
) -> Result<IdClaims, TokenRefusal> {
    use jsonwebtoken::errors::ErrorKind;
    let header = jsonwebtoken::decode_header(token)
        .map_err(|_| TokenRefusal::Refused("the ID token is malformed"))?;
    if !ALGORITHMS.contains(&header.alg) {
        return Err(TokenRefusal::Refused(
            "the ID token's signing algorithm is not accepted",
        ));
    }
    let signing_keys: Vec<&Jwk> = keys
        .iter()
        .filter(|k| {
            !matches!(
                k.common.public_key_use,
                Some(jsonwebtoken::jwk::PublicKeyUse::Encryption)
            )
        })
        .collect();
    let jwk = match &header.kid {
        Some(kid) => signing_keys
            .iter()
            .find(|k| k.common.key_id.as_deref() == Some(kid.as_str())),
        // Without a key id, only an issuer with a single key is unambiguous.
        None if signing_keys.len() == 1 => signing_keys.first(),
        None => None,
    }
    .ok_or(TokenRefusal::UnknownKey)?;
    if let Some(alg) = &jwk.common.key_algorithm {
        if format!("{alg:?}") != format!("{:?}", header.alg) {
            return Err(TokenRefusal::Refused(
                "the ID token's algorithm is not its key's algorithm",
            ));
        }
    }
    let key = DecodingKey::from_jwk(jwk)
        .map_err(|_| TokenRefusal::Refused("the issuer's signing key is unusable"))?;
    let mut validation = Validation::new(header.alg);
    validation.leeway = LEEWAY_SECS;
    validation.validate_exp = true;
    validation.validate_nbf = true;
    validation.set_issuer(&[issuer]);
    validation.set_audience(&[client_id]);
    validation.set_required_spec_claims(&["exp", "iat", "iss", "aud", "sub"]);
    let data = jsonwebtoken::decode::<IdClaims>(token, &key, &validation).map_err(|e| {
        TokenRefusal::Refused(match e.kind() {
            ErrorKind::InvalidSignature => "the ID token's signature does not verify",
            ErrorKind::ExpiredSignature => "the ID token has expired",
            ErrorKind::ImmatureSignature => "the ID token is not valid yet",
            ErrorKind::InvalidIssuer => "the ID token was issued by another issuer",
            ErrorKind::InvalidAudience => "the ID token was issued for another client",
            ErrorKind::InvalidAlgorithm => "the ID token's algorithm does not fit its key",
            ErrorKind::MissingRequiredClaim(_) => "the ID token lacks a required claim",
            _ => "the ID token does not verify",
        })
    })?;
    let claims = data.claims;
    // OpenID Connect Core 3.1.3.7: with several audiences, `azp` must be this client; when
    // present, it must be this client in any case.
    let several_audiences = matches!(&claims.aud, Some(serde_json::Value::Array(a)) if a.len() > 1);
    if (several_audiences || claims.azp.is_some()) && claims.azp.as_deref() != Some(client_id) {
        return Err(TokenRefusal::Refused(
            "the ID token was issued for another client",
        ));
    }
    let nonce_ok = claims.nonce.as_deref().is_some_and(|n| {
        use subtle::ConstantTimeEq;
        n.len() == nonce.len() && n.as_bytes().ct_eq(nonce.as_bytes()).unwrap_u8() == 1
    });
    if !nonce_ok {
        return Err(TokenRefusal::Refused(
            "the ID token's nonce is not the one this sign-in sent",
        ));
    }
    if claims.sub.is_empty() || claims.sub.len() > 255 {
        return Err(TokenRefusal::Refused("the ID token's subject is malformed"));
    }
    Ok(claims)
}

/// The PKCE S256 challenge of a verifier (RFC 7636 §4.2).
pub fn pkce_challenge(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// A started sign-in: where to send the browser, and the secret for its flow cookie.
#[derive(Debug, Clone)]
pub struct Started {
    pub authorize_url: String,
    pub browser_secret: String,
}

/// What the callback gives in its query.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Callback {
    #[serde(default)]
    pub code: Option<String>,
    #[serde(default)]
    pub state: Option<String>,
    #[serde(default)]
    pub error: Option<String>,
}

/// One organization a person may continue into.
#[derive(Debug, Clone)]
pub struct OrgChoice {
    pub org: String,
    pub name: String,
}

/// How a verified callback ends.
#[derive(Debug, Clone)]
pub enum Completed {
    /// Signed in (one organization).
    Session(IssuedSession),
    /// Several organizations: the person chooses; the form carries `form_token`.
    Choose {
        form_token: String,
        choices: Vec<OrgChoice>,
    },
}

/// The relying party of one issuer, with its cached discovery document and keys.
pub struct Oidc {
    settings: OidcSettings,
    http: Arc<dyn IssuerHttp>,
    discovery: tokio::sync::Mutex<Option<Discovery>>,
    keys: tokio::sync::Mutex<KeyCache>,
}

impl Oidc {
    pub fn new(settings: OidcSettings, http: Arc<dyn IssuerHttp>) -> Self {
        Oidc {
            settings,
            http,
            discovery: tokio::sync::Mutex::new(None),
            keys: tokio::sync::Mutex::new(KeyCache::default()),
        }
    }

    /// What the sign-in button calls the issuer.
    pub fn name(&self) -> &str {
        &self.settings.name
    }

    async fn discovery(&self) -> ApiResult<Discovery> {
        let mut cached = self.discovery.lock().await;
        if let Some(d) = cached.as_ref() {
            return Ok(d.clone());
        }
        let url = format!("{}/.well-known/openid-configuration", self.settings.issuer);
        let doc = self
            .http
            .get_json(&url)
            .await
            .map_err(|e| issuer_unavailable("discovery", e))?;
        let field = |name: &str| doc.get(name).and_then(|v| v.as_str()).map(str::to_owned);
        // OpenID Connect Discovery 4.3: the document's issuer is exactly the configured one.
        if field("issuer").as_deref().map(|i| i.trim_end_matches('/'))
            != Some(self.settings.issuer.as_str())
        {
            tracing::error!(
                configured = %self.settings.issuer,
                "the issuer's discovery document names another issuer"
            );
            return Err(ApiError::unavailable(
                "oidc_issuer_unavailable",
                "The identity provider's discovery document names another issuer; the \
                 operator must correct REELGATE_OIDC_ISSUER.",
            ));
        }
        let (Some(authorization_endpoint), Some(token_endpoint), Some(jwks_uri)) = (
            field("authorization_endpoint"),
            field("token_endpoint"),
            field("jwks_uri"),
        ) else {
            return Err(ApiError::unavailable(
                "oidc_issuer_unavailable",
                "The identity provider's discovery document lacks an endpoint.",
            ));
        };
        for endpoint in [&authorization_endpoint, &token_endpoint, &jwks_uri] {
            if !is_https_or_loopback(endpoint) {
                return Err(ApiError::unavailable(
                    "oidc_issuer_unavailable",
                    "The identity provider's discovery document names an endpoint that is not \
                     https.",
                ));
            }
        }
        let d = Discovery {
            authorization_endpoint,
            token_endpoint,
            jwks_uri,
        };
        *cached = Some(d.clone());
        Ok(d)
    }

    async fn fetch_keys(&self, jwks_uri: &str, cache: &mut KeyCache) -> ApiResult<()> {
        let set = self
            .http
            .get_json(jwks_uri)
            .await
            .map_err(|e| issuer_unavailable("signing keys", e))?;
        // Keys of a type this service does not know are skipped, not fatal.
        cache.keys = set
            .get("keys")
            .and_then(|k| k.as_array())
            .map(|keys| {
                keys.iter()
                    .filter_map(|k| serde_json::from_value::<Jwk>(k.clone()).ok())
                    .collect()
            })
            .unwrap_or_default();
        cache.fetched = Some(Instant::now());
        Ok(())
    }

    /// Verifies an ID token with the cached keys, fetching them when absent or old, and again
    /// (rate-limited) when the token names a key id they lack.
    async fn verify(&self, jwks_uri: &str, token: &str, nonce: &str) -> ApiResult<IdClaims> {
        let mut cache = self.keys.lock().await;
        if cache.fetched.is_none_or(|t| t.elapsed() > JWKS_MAX_AGE) {
            self.fetch_keys(jwks_uri, &mut cache).await?;
        }
        let check = |keys: &[Jwk]| {
            verify_id_token(
                token,
                keys,
                &self.settings.issuer,
                &self.settings.client_id,
                nonce,
            )
        };
        let outcome = match check(&cache.keys) {
            Err(TokenRefusal::UnknownKey)
                if cache
                    .fetched
                    .is_none_or(|t| t.elapsed() >= JWKS_REFETCH_INTERVAL) =>
            {
                self.fetch_keys(jwks_uri, &mut cache).await?;
                check(&cache.keys)
            }
            other => other,
        };
        outcome.map_err(|r| match r {
            TokenRefusal::UnknownKey => {
                refused("the ID token is signed by a key the issuer does not publish")
            }
            TokenRefusal::Refused(reason) => refused(reason),
        })
    }

    /// Starts a sign-in: stores the flow and answers where to send the browser.
    pub async fn begin(&self, store: &dyn ItemStore, redirect_uri: &str) -> ApiResult<Started> {
        let discovery = self.discovery().await?;
        let flow_id = new_id("of");
        let browser_secret = format!("{FLOW_PREFIX}{}_{}", &flow_id[3..], new_secret(32));
        let state = new_secret(24);
        let nonce = new_secret(24);
        let verifier = new_secret(48);
        let mut it = item(&flow_key(&flow_id));
        it.insert("kind".into(), "oidc_flow".into());
        it.insert("hash".into(), hash_secret(&browser_secret).into());
        it.insert("state".into(), state.clone().into());
        it.insert("nonce".into(), nonce.clone().into());
        it.insert("verifier".into(), verifier.clone().into());
        it.insert("stage".into(), "started".into());
        it.insert("expires_at".into(), (now_secs() + FLOW_SECS).into());
        store.put(it, Some(Condition::NotExists)).await?;
        let mut url = url::Url::parse(&discovery.authorization_endpoint).map_err(|_| {
            ApiError::unavailable(
                "oidc_issuer_unavailable",
                "The identity provider's authorization endpoint is not a URL.",
            )
        })?;
        url.query_pairs_mut()
            .append_pair("response_type", "code")
            .append_pair("client_id", &self.settings.client_id)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("scope", "openid email")
            .append_pair("state", &state)
            .append_pair("nonce", &nonce)
            .append_pair("code_challenge", &pkce_challenge(&verifier))
            .append_pair("code_challenge_method", "S256");
        Ok(Started {
            authorize_url: url.into(),
            browser_secret,
        })
    }

    /// Loads the live flow the browser's cookie names.
    async fn flow(
        &self,
        store: &dyn ItemStore,
        browser_secret: Option<&str>,
    ) -> ApiResult<(Key, crate::ports::store::Item)> {
        let not_this_browser = || {
            refused("this browser did not start this sign-in, or it took longer than ten minutes")
        };
        let secret = browser_secret.ok_or_else(not_this_browser)?;
        let flow_id = record_id(secret, FLOW_PREFIX, "of").ok_or_else(not_this_browser)?;
        let key = flow_key(&flow_id);
        let record = store.get(&key).await?.ok_or_else(not_this_browser)?;
        if !same_hash(record.str_attr("hash").unwrap_or_default(), secret)
            || record
                .i64_attr("expires_at")
                .is_none_or(|t| t <= now_secs())
        {
            return Err(not_this_browser());
        }
        Ok((key, record))
    }

    /// Moves a flow from one stage to the next, once (a conditional write).
    async fn advance(
        &self,
        store: &dyn ItemStore,
        key: &Key,
        from: &str,
        update: Update,
    ) -> ApiResult<()> {
        match store
            .update(
                key,
                update,
                Some(Condition::Exists.and(Condition::Eq("stage".into(), from.into()))),
            )
            .await
        {
            Ok(_) => Ok(()),
            Err(StoreError::ConditionFailed) => Err(refused("this sign-in was already used")),
            Err(e) => Err(e.into()),
        }
    }

    /// Completes a sign-in from the issuer's callback.
    pub async fn complete(
        &self,
        store: &dyn ItemStore,
        browser_secret: Option<&str>,
        callback: &Callback,
        redirect_uri: &str,
    ) -> ApiResult<Completed> {
        let (key, flow) = self.flow(store, browser_secret).await?;
        let state_ok = callback.state.as_deref().is_some_and(|s| {
            use subtle::ConstantTimeEq;
            let expected = flow.str_attr("state").unwrap_or_default();
            s.len() == expected.len() && s.as_bytes().ct_eq(expected.as_bytes()).unwrap_u8() == 1
        });
        if !state_ok {
            return Err(refused("the callback's state is not this sign-in's"));
        }
        self.advance(
            store,
            &key,
            "started",
            Update::new()
                .set("stage", "redeemed")
                .set("redeemed_at", now_secs()),
        )
        .await?;
        if callback.error.is_some() {
            return Err(refused("the identity provider did not sign you in"));
        }
        let code = callback
            .code
            .as_deref()
            .filter(|c| !c.is_empty())
            .ok_or_else(|| refused("the callback carries no code"))?;
        let discovery = self.discovery().await?;
        let verifier = flow.str_attr("verifier").unwrap_or_default();
        let form = [
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("client_id", self.settings.client_id.as_str()),
            ("code_verifier", verifier),
        ];
        let basic = self
            .settings
            .client_secret
            .as_deref()
            .map(|secret| (self.settings.client_id.as_str(), secret));
        let (status, body) = self
            .http
            .post_form(&discovery.token_endpoint, &form, basic)
            .await
            .map_err(|e| issuer_unavailable("token", e))?;
        if status != 200 {
            return Err(refused(
                "the identity provider did not accept the sign-in code",
            ));
        }
        let id_token = body
            .get("id_token")
            .and_then(|t| t.as_str())
            .ok_or_else(|| refused("the identity provider answered no ID token"))?;
        let nonce = flow.str_attr("nonce").unwrap_or_default();
        let claims = self.verify(&discovery.jwks_uri, id_token, nonce).await?;
        let candidates = self.candidates(store, &claims).await?;
        match candidates.as_slice() {
            [] => Err(ApiError::forbidden(
                "oidc_no_organization",
                format!(
                    "You signed in at {} as {}, but no organization on this service has you as a \
                     member. Ask an organization's administrator to add you (with the address \
                     your identity provider has verified).",
                    self.settings.name,
                    claims
                        .verified_email()
                        .unwrap_or("an account without a verified email address"),
                ),
            )),
            [only] => {
                self.advance(store, &key, "redeemed", Update::new().set("stage", "done"))
                    .await?;
                self.sign_in(store, &claims.sub, only)
                    .await
                    .map(Completed::Session)
            }
            several => {
                let form_token = new_secret(24);
                let list = serde_json::to_string(
                    &several
                        .iter()
                        .map(|c| serde_json::json!({"person": c.person, "org": c.org}))
                        .collect::<Vec<_>>(),
                )
                .unwrap_or_default();
                self.advance(
                    store,
                    &key,
                    "redeemed",
                    Update::new()
                        .set("stage", "choosing")
                        .set("candidates", list)
                        .set("subject", claims.sub.clone())
                        .set("form_token", form_token.clone()),
                )
                .await?;
                let accounts = Accounts::new(store);
                let mut choices = Vec::new();
                for c in several {
                    let name = accounts.org(&c.org).await?.name;
                    choices.push(OrgChoice {
                        org: c.org.clone(),
                        name,
                    });
                }
                Ok(Completed::Choose {
                    form_token,
                    choices,
                })
            }
        }
    }

    /// Finishes a sign-in that asked the person to choose an organization.
    pub async fn choose(
        &self,
        store: &dyn ItemStore,
        browser_secret: Option<&str>,
        form_token: &str,
        org: &str,
    ) -> ApiResult<IssuedSession> {
        let (key, flow) = self.flow(store, browser_secret).await?;
        let token_ok = {
            use subtle::ConstantTimeEq;
            let expected = flow.str_attr("form_token").unwrap_or_default();
            !expected.is_empty()
                && expected.len() == form_token.len()
                && expected.as_bytes().ct_eq(form_token.as_bytes()).unwrap_u8() == 1
        };
        if flow.str_attr("stage") != Some("choosing") || !token_ok {
            return Err(refused("this choice is not part of a sign-in in progress"));
        }
        let candidates: Vec<serde_json::Value> =
            serde_json::from_str(flow.str_attr("candidates").unwrap_or("[]")).unwrap_or_default();
        let chosen = candidates
            .iter()
            .filter_map(|c| {
                Some(Candidate {
                    person: c.get("person")?.as_str()?.to_owned(),
                    org: c.get("org")?.as_str()?.to_owned(),
                })
            })
            .find(|c| c.org == org)
            .ok_or_else(|| refused("you are not a member of that organization"))?;
        self.advance(store, &key, "choosing", Update::new().set("stage", "done"))
            .await?;
        let subject = flow.str_attr("subject").unwrap_or_default().to_owned();
        self.sign_in(store, &subject, &chosen).await
    }

    /// The (person, organization) pairs the token names: linked to its subject, or created with
    /// its verified email address; only current members count.
    async fn candidates(
        &self,
        store: &dyn ItemStore,
        claims: &IdClaims,
    ) -> ApiResult<Vec<Candidate>> {
        let mut found = identities::by_subject(store, &self.settings.issuer, &claims.sub).await?;
        if let Some(email) = claims.verified_email() {
            for c in identities::by_email(store, email).await? {
                if !found.contains(&c) {
                    found.push(c);
                }
            }
        }
        let accounts = Accounts::new(store);
        let mut members = Vec::new();
        for c in found {
            if accounts.is_member(&c.org, &c.person).await? && !members.contains(&c) {
                members.push(c);
            }
        }
        members.sort_by(|a, b| a.org.cmp(&b.org));
        Ok(members)
    }

    async fn sign_in(
        &self,
        store: &dyn ItemStore,
        subject: &str,
        who: &Candidate,
    ) -> ApiResult<IssuedSession> {
        identities::link_subject(store, &self.settings.issuer, subject, who).await?;
        Console::new(store)
            .create_session(&who.person, &who.org)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{encode, EncodingKey, Header};

    /// Test-only RSA keys (PKCS#1 DER, base64) with their public JWKs: never use them elsewhere.
    mod fake_keys {
        include!("oidc_test_keys.rs");
    }

    const ISSUER: &str = "https://id.example.test";
    const CLIENT: &str = "console-client";
    const NONCE: &str = "n-0S6_WzA2Mj";

    fn jwk(n: &str, e: &str, kid: &str) -> Jwk {
        serde_json::from_value(serde_json::json!({
            "kty": "RSA", "use": "sig", "alg": "RS256", "kid": kid, "n": n, "e": e
        }))
        .expect("jwk")
    }

    fn issuer_keys() -> Vec<Jwk> {
        vec![jwk(fake_keys::ISSUER_N, fake_keys::ISSUER_E, "k1")]
    }

    fn sign(private_der_b64: &str, kid: Option<&str>, claims: serde_json::Value) -> String {
        let der = base64::engine::general_purpose::STANDARD
            .decode(private_der_b64)
            .expect("der");
        let mut header = Header::new(Algorithm::RS256);
        header.kid = kid.map(str::to_owned);
        encode(&header, &claims, &EncodingKey::from_rsa_der(&der)).expect("sign")
    }

    fn claims(overrides: serde_json::Value) -> serde_json::Value {
        let now = now_secs();
        let mut c = serde_json::json!({
            "iss": ISSUER, "aud": CLIENT, "sub": "subject-1", "iat": now, "exp": now + 300,
            "nonce": NONCE, "email": "ana@example.com", "email_verified": true,
        });
        for (k, v) in overrides.as_object().expect("object") {
            if v.is_null() {
                c.as_object_mut().expect("object").remove(k);
            } else {
                c[k] = v.clone();
            }
        }
        c
    }

    fn check(token: &str) -> Result<IdClaims, TokenRefusal> {
        verify_id_token(token, &issuer_keys(), ISSUER, CLIENT, NONCE)
    }

    fn good(overrides: serde_json::Value) -> String {
        sign(fake_keys::ISSUER_DER, Some("k1"), claims(overrides))
    }

    #[test]
    fn a_token_signed_by_the_issuer_verifies() {
        let c = check(&good(serde_json::json!({}))).expect("verifies");
        assert_eq!(c.sub, "subject-1");
        assert_eq!(c.verified_email(), Some("ana@example.com"));
        // A single key and no key id is unambiguous.
        let no_kid = sign(fake_keys::ISSUER_DER, None, claims(serde_json::json!({})));
        assert!(check(&no_kid).is_ok());
    }

    #[test]
    fn a_forged_signature_is_refused() {
        let forged = sign(
            fake_keys::OTHER_DER,
            Some("k1"),
            claims(serde_json::json!({})),
        );
        assert_eq!(
            check(&forged).unwrap_err(),
            TokenRefusal::Refused("the ID token's signature does not verify")
        );
        // Claims edited after signing.
        let token = good(serde_json::json!({}));
        let parts: Vec<&str> = token.split('.').collect();
        let body = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(
            serde_json::to_vec(&claims(serde_json::json!({"sub": "someone-else"}))).unwrap(),
        );
        let edited = format!("{}.{}.{}", parts[0], body, parts[2]);
        assert!(check(&edited).is_err());
    }

    #[test]
    fn an_unknown_key_id_asks_for_the_keys_again() {
        let t = sign(
            fake_keys::OTHER_DER,
            Some("k2"),
            claims(serde_json::json!({})),
        );
        assert_eq!(check(&t).unwrap_err(), TokenRefusal::UnknownKey);
        let keys = vec![
            jwk(fake_keys::ISSUER_N, fake_keys::ISSUER_E, "k1"),
            jwk(fake_keys::OTHER_N, fake_keys::OTHER_E, "k2"),
        ];
        assert!(verify_id_token(&t, &keys, ISSUER, CLIENT, NONCE).is_ok());
        // Two keys and no key id: ambiguous.
        let no_kid = sign(fake_keys::ISSUER_DER, None, claims(serde_json::json!({})));
        assert_eq!(
            verify_id_token(&no_kid, &keys, ISSUER, CLIENT, NONCE).unwrap_err(),
            TokenRefusal::UnknownKey
        );
    }

    #[test]
    fn expiry_has_a_small_leeway() {
        let now = now_secs();
        assert!(check(&good(serde_json::json!({"exp": now - 30}))).is_ok());
        assert_eq!(
            check(&good(serde_json::json!({"exp": now - 120}))).unwrap_err(),
            TokenRefusal::Refused("the ID token has expired")
        );
        assert!(check(&good(serde_json::json!({"exp": null}))).is_err());
    }

    #[test]
    fn issuer_audience_and_nonce_must_match() {
        assert_eq!(
            check(&good(serde_json::json!({"iss": "https://evil.example"}))).unwrap_err(),
            TokenRefusal::Refused("the ID token was issued by another issuer")
        );
        assert_eq!(
            check(&good(serde_json::json!({"aud": "another-client"}))).unwrap_err(),
            TokenRefusal::Refused("the ID token was issued for another client")
        );
        // Several audiences need azp = this client.
        assert!(check(&good(serde_json::json!({"aud": [CLIENT, "other"]}))).is_err());
        assert!(check(&good(
            serde_json::json!({"aud": [CLIENT, "other"], "azp": CLIENT})
        ))
        .is_ok());
        assert!(check(&good(serde_json::json!({"azp": "other"}))).is_err());
        assert_eq!(
            check(&good(serde_json::json!({"nonce": "another"}))).unwrap_err(),
            TokenRefusal::Refused("the ID token's nonce is not the one this sign-in sent")
        );
        assert!(check(&good(serde_json::json!({"nonce": null}))).is_err());
    }

    #[test]
    fn hmac_and_none_algorithms_are_refused() {
        let hs = encode(
            &Header::new(Algorithm::HS256),
            &claims(serde_json::json!({})),
            &EncodingKey::from_secret(b"the public modulus, say"),
        )
        .unwrap();
        assert_eq!(
            check(&hs).unwrap_err(),
            TokenRefusal::Refused("the ID token's signing algorithm is not accepted")
        );
        let b64 = |v: serde_json::Value| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(serde_json::to_vec(&v).unwrap())
        };
        let none = format!(
            "{}.{}.",
            b64(serde_json::json!({"alg": "none", "typ": "JWT"})),
            b64(claims(serde_json::json!({})))
        );
        assert!(check(&none).is_err());
    }

    #[test]
    fn only_a_verified_email_counts() {
        let c = |v: serde_json::Value| {
            check(&good(serde_json::json!({"email_verified": v}))).expect("verifies")
        };
        assert_eq!(c(serde_json::json!(false)).verified_email(), None);
        assert_eq!(
            c(serde_json::json!("true")).verified_email(),
            Some("ana@example.com")
        );
        let unset = check(&good(serde_json::json!({"email_verified": null}))).unwrap();
        assert_eq!(unset.verified_email(), None);
    }

    #[test]
    fn the_pkce_challenge_is_rfc7636s() {
        // RFC 7636 appendix B.
        assert_eq!(
            pkce_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }
}
