//! Organizations, persons, memberships and API keys (console sessions: `domain::accounts::console`).
//!
//! Organizations (`organizations.rs`), people and memberships (`people.rs`), API keys
//! (`api_keys.rs`) and the authentication of a bearer key (`authentication.rs`) are operations
//! of one [`Accounts`] handle over the item store; this module holds the handle and the
//! [`Caller`] a credential resolves to.

mod api_keys;
mod authentication;
mod organizations;
mod people;

pub mod agreement;
pub mod console;
pub mod identities;
pub mod key_budget;
pub mod key_controls;
pub mod record;

pub use api_keys::{
    api_key_key, ApiKeyInfo, IssuedSecret, API_KEY_PREFIX, LAST_USED_EVERY_SECS, MAX_KEY_NAME_CHARS,
};
pub use authentication::AccountCache;
pub use organizations::{org_key, validate_money, Organization, DEFAULT_PLAN};
pub use people::Person;

use crate::domain::catalog::RateLimits;
use crate::ports::store::ItemStore;

/// The key id console traffic is attributed to wherever usage, limits or logs name a key.
pub const CONSOLE_KEY_ID: &str = "console";

/// Who is calling, resolved from the bearer credential.
#[derive(Clone, Debug, PartialEq)]
pub struct Caller {
    pub org: String,
    pub person: String,
    pub credential: Credential,
    /// The API key's own rate-limit overrides (none for the console); they win over the plan's.
    pub limits: RateLimits,
    /// The API key's monthly spending cap and what counts against it (none for the console).
    pub budget: Option<key_budget::KeyBudget>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Credential {
    ApiKey {
        key_id: String,
    },
    /// A console browser session (cookie); accepted only by the `/console` routes.
    ConsoleSession {
        session_id: String,
    },
}

impl Caller {
    /// The key id this caller's traffic is attributed to: the API key's id, or `console` for
    /// the console playground.
    pub fn key_id(&self) -> &str {
        match &self.credential {
            Credential::ApiKey { key_id } => key_id,
            Credential::ConsoleSession { .. } => CONSOLE_KEY_ID,
        }
    }
}

pub struct Accounts<'a> {
    store: &'a dyn ItemStore,
    credentials: Option<&'a AccountCache>,
    /// Whether authentication writes a key's last-use time (`Settings::record_key_use`).
    record_key_use: bool,
}

impl<'a> Accounts<'a> {
    pub fn new(store: &'a dyn ItemStore) -> Self {
        Accounts {
            store,
            credentials: None,
            record_key_use: false,
        }
    }

    /// Authentication that writes each key's last-use time (at most once a minute).
    pub fn recording_key_use(self, record_key_use: bool) -> Self {
        Accounts {
            record_key_use,
            ..self
        }
    }

    /// Authentication through (and revocation forgetting from) this process's cache.
    pub fn with_account_cache(self, cache: &'a AccountCache) -> Self {
        Accounts {
            credentials: Some(cache),
            ..self
        }
    }
}
