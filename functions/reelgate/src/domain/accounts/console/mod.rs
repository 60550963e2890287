//! The console playground's sign-in: one-time sign-in links and browser sessions.
//!
//! A sign-in link carries a one-time token (`rgl_…`) that expires after the configured TTL; it
//! is redeemed once, for a console session. A console session is a browser cookie (`rgc_…`)
//! with a fixed lifetime and a CSRF token; it is accepted only by the `/console` routes, never
//! by `/v1` (which takes API keys only), and it is revoked server-side on sign-out. Each use of
//! a session checks that the person is still a member of the organization. Secrets are stored
//! only as SHA-256 hashes; the CSRF token is not a credential on its own and is stored as is.

pub mod oidc;

use crate::domain::accounts::{Accounts, Caller, Credential};
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::ids::{is_valid, new_id, new_secret};
use crate::ports::store::{item, now_secs, Condition, ItemExt, ItemStore, Key, StoreError, Update};
use serde::Serialize;
use sha2::{Digest, Sha256};

/// Prefix of a console session secret (the cookie value).
pub const SESSION_PREFIX: &str = "rgc_";
/// Prefix of a sign-in link token.
pub const LINK_PREFIX: &str = "rgl_";
/// Console sessions last a working day, from sign-in; they are not extended by use.
pub const SESSION_SECS: i64 = 12 * 3600;
pub use crate::domain::accounts::CONSOLE_KEY_ID;

fn session_key(session_id: &str) -> Key {
    crate::domain::table_keys::console_session(session_id)
}
fn link_key(link_id: &str) -> Key {
    crate::domain::table_keys::console_link(link_id)
}

fn hash_secret(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

fn same_hash(stored: &str, secret: &str) -> bool {
    use subtle::ConstantTimeEq;
    stored
        .as_bytes()
        .ct_eq(hash_secret(secret).as_bytes())
        .unwrap_u8()
        == 1
}

/// Splits `<prefix><26-char id suffix>_<secret>` into the record id `<id_prefix>_<suffix>`.
fn record_id(token: &str, prefix: &str, id_prefix: &str) -> Option<String> {
    let rest = token.strip_prefix(prefix)?;
    let suffix = rest.get(..26)?;
    let id = format!("{id_prefix}_{suffix}");
    is_valid(&id, id_prefix).then_some(id)
}

/// A sign-in link as issued (the token is shown once).
#[derive(Clone, Debug, Serialize)]
pub struct SignInLink {
    pub id: String,
    pub token: String,
    pub user: String,
    pub organization: String,
    pub expires_at: i64,
}

impl SignInLink {
    /// The URL a person opens, under the service's public base URL.
    pub fn url(&self, public_base_url: &str) -> String {
        format!(
            "{}/console/signin?token={}",
            public_base_url.trim_end_matches('/'),
            self.token
        )
    }
}

/// A console session as issued at sign-in: the cookie secret (shown once) and its CSRF token.
#[derive(Clone, Debug)]
pub struct IssuedSession {
    pub session_id: String,
    pub secret: String,
    pub csrf_token: String,
    pub expires_at: i64,
    pub user: String,
    pub organization: String,
}

/// A live console session, resolved from its cookie.
#[derive(Clone, Debug)]
pub struct Session {
    pub caller: Caller,
    pub session_id: String,
    pub csrf_token: String,
    pub expires_at: i64,
}

impl Session {
    /// True when `presented` is this session's CSRF token (constant-time comparison).
    pub fn csrf_matches(&self, presented: &str) -> bool {
        use subtle::ConstantTimeEq;
        !presented.is_empty()
            && self
                .csrf_token
                .as_bytes()
                .ct_eq(presented.as_bytes())
                .unwrap_u8()
                == 1
    }
}

pub struct Console<'a> {
    store: &'a dyn ItemStore,
}

impl<'a> Console<'a> {
    pub fn new(store: &'a dyn ItemStore) -> Self {
        Console { store }
    }

    /// Issues a one-time sign-in link for a member of `org`, valid for `ttl_secs`.
    pub async fn create_link(
        &self,
        person: &str,
        org: &str,
        ttl_secs: i64,
    ) -> ApiResult<SignInLink> {
        let accounts = Accounts::new(self.store);
        accounts.person(person).await?;
        accounts.require_member(org, person).await?;
        let link_id = new_id("cl");
        let token = format!("{LINK_PREFIX}{}_{}", &link_id[3..], new_secret(32));
        let expires_at = now_secs() + ttl_secs.max(1);
        let mut it = item(&link_key(&link_id));
        it.insert("kind".into(), "console_link".into());
        it.insert("link_id".into(), link_id.clone().into());
        it.insert("hash".into(), hash_secret(&token).into());
        it.insert("org".into(), org.into());
        it.insert("person".into(), person.into());
        it.insert("used".into(), false.into());
        it.insert("expires_at".into(), expires_at.into());
        self.store.put(it, Some(Condition::NotExists)).await?;
        Ok(SignInLink {
            id: link_id,
            token,
            user: person.to_owned(),
            organization: org.to_owned(),
            expires_at,
        })
    }

    /// Redeems a sign-in link once: marks it used (a conditional write, so two concurrent
    /// redemptions cannot both succeed) and opens a console session.
    pub async fn redeem_link(&self, token: &str) -> ApiResult<IssuedSession> {
        let refused = || {
            ApiError::unauthorized(
                "invalid_sign_in_link",
                "This sign-in link is unknown, already used or expired. Ask for a new one \
                 (`reelgate admin console-link --user … --org …`).",
            )
        };
        let link_id = record_id(token, LINK_PREFIX, "cl").ok_or_else(refused)?;
        let key = link_key(&link_id);
        let record = self.store.get(&key).await?.ok_or_else(refused)?;
        if !same_hash(record.str_attr("hash").unwrap_or_default(), token) {
            return Err(refused());
        }
        let now = now_secs();
        if record.i64_attr("expires_at").is_none_or(|t| t <= now) {
            return Err(refused());
        }
        let (Some(org), Some(person)) = (record.str_attr("org"), record.str_attr("person")) else {
            return Err(refused());
        };
        match self
            .store
            .update(
                &key,
                Update::new().set("used", true).set("used_at", now),
                Some(Condition::Exists.and(Condition::Eq("used".into(), false.into()))),
            )
            .await
        {
            Ok(_) => {}
            Err(StoreError::ConditionFailed) => return Err(refused()),
            Err(e) => return Err(e.into()),
        }
        self.create_session(person, org).await
    }

    /// Opens a console session for a member of `org` (what a sign-in yields).
    pub async fn create_session(&self, person: &str, org: &str) -> ApiResult<IssuedSession> {
        let accounts = Accounts::new(self.store);
        accounts.person(person).await?;
        accounts.require_member(org, person).await?;
        let session_id = new_id("cs");
        let secret = format!("{SESSION_PREFIX}{}_{}", &session_id[3..], new_secret(32));
        let csrf_token = new_secret(24);
        let expires_at = now_secs() + SESSION_SECS;
        let mut it = item(&session_key(&session_id));
        it.insert("kind".into(), "console_session".into());
        it.insert("session_id".into(), session_id.clone().into());
        it.insert("hash".into(), hash_secret(&secret).into());
        it.insert("csrf".into(), csrf_token.clone().into());
        it.insert("org".into(), org.into());
        it.insert("person".into(), person.into());
        it.insert("revoked".into(), false.into());
        it.insert("created_at".into(), now_secs().into());
        it.insert("expires_at".into(), expires_at.into());
        self.store.put(it, Some(Condition::NotExists)).await?;
        Ok(IssuedSession {
            session_id,
            secret,
            csrf_token,
            expires_at,
            user: person.to_owned(),
            organization: org.to_owned(),
        })
    }

    /// Resolves a session cookie; None for anything unknown, revoked, expired, or a person no
    /// longer in the organization.
    pub async fn session(&self, secret: &str) -> ApiResult<Option<Session>> {
        let Some(session_id) = record_id(secret, SESSION_PREFIX, "cs") else {
            return Ok(None);
        };
        let Some(record) = self.store.get(&session_key(&session_id)).await? else {
            return Ok(None);
        };
        if !same_hash(record.str_attr("hash").unwrap_or_default(), secret) {
            return Ok(None);
        }
        if record.bool_attr("revoked") == Some(true) {
            return Ok(None);
        }
        let expires_at = record.i64_attr("expires_at").unwrap_or_default();
        if expires_at <= now_secs() {
            return Ok(None);
        }
        let (Some(org), Some(person)) = (record.str_attr("org"), record.str_attr("person")) else {
            return Ok(None);
        };
        if !Accounts::new(self.store).is_member(org, person).await? {
            return Ok(None);
        }
        Ok(Some(Session {
            caller: Caller {
                org: org.to_owned(),
                person: person.to_owned(),
                credential: Credential::ConsoleSession {
                    session_id: session_id.clone(),
                },
                limits: Default::default(),
                budget: None,
            },
            session_id,
            csrf_token: record.str_attr("csrf").unwrap_or_default().to_owned(),
            expires_at,
        }))
    }

    /// Revokes a session (sign-out); later requests with its cookie are refused.
    pub async fn revoke_session(&self, session_id: &str) -> ApiResult<()> {
        if !is_valid(session_id, "cs") {
            return Ok(());
        }
        match self
            .store
            .update(
                &session_key(session_id),
                Update::new()
                    .set("revoked", true)
                    .set("revoked_at", now_secs()),
                Some(Condition::Exists),
            )
            .await
        {
            Ok(_) | Err(StoreError::ConditionFailed) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_ids_come_only_from_well_formed_tokens() {
        let id = new_id("cs");
        let token = format!("{SESSION_PREFIX}{}_{}", &id[3..], new_secret(8));
        assert_eq!(record_id(&token, SESSION_PREFIX, "cs"), Some(id));
        assert_eq!(record_id(&token, LINK_PREFIX, "cl"), None);
        assert_eq!(record_id("rgc_short", SESSION_PREFIX, "cs"), None);
        assert_eq!(record_id("rgk_whatever", SESSION_PREFIX, "cs"), None);
    }

    #[test]
    fn csrf_comparison_refuses_empty_and_wrong_tokens() {
        let s = Session {
            caller: Caller {
                org: "org_x".into(),
                person: "user_x".into(),
                credential: Credential::ConsoleSession {
                    session_id: "cs_x".into(),
                },
                limits: Default::default(),
                budget: None,
            },
            session_id: "cs_x".into(),
            csrf_token: "abc".into(),
            expires_at: 0,
        };
        assert!(s.csrf_matches("abc"));
        assert!(!s.csrf_matches(""));
        assert!(!s.csrf_matches("abd"));
    }
}
