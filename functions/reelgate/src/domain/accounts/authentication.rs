//! Authentication of a bearer API key, with this process's cache of what it read recently and
//! the key's last-use time.

use super::api_keys::{
    api_key_key, hash_secret, key_limits_of, org_api_key_key, API_KEY_PREFIX, LAST_USED_AT,
    LAST_USED_EVERY_SECS,
};
use super::people::member_key;
use super::{key_budget, Accounts, Caller, Credential};
use crate::domain::error::ApiResult;
use crate::domain::ids::is_valid;
use crate::ports::store::{now_secs, Condition, ItemExt, TransactOp, Update};

/// What this process read about accounts recently (`Settings::account_cache`), so that a warm
/// request skips sequential reads (on AWS, DynamoDB round trips):
///
/// - API keys: each key's record, kept once the key verified and its holder was a member. The
///   secret is checked against the cached hash on every request; only successes are kept, so a
///   wrong secret always reads the store.
/// - Organizations' plans, so that a request's rate-limit windows can be written while its
///   organization's balance is read, not after.
///
/// What goes stale within the lifetime: a key's revocation (except where this process revoked
/// it: it forgets the key at once), a removed membership, a key's limits and its budget's
/// committed amount (render admission still holds the budget in its transaction), and a plan
/// change. Balances are never cached.
pub struct AccountCache {
    ttl: std::time::Duration,
    keys: Recent<std::sync::Arc<crate::ports::store::Item>>,
    plans: Recent<String>,
}

/// Entries kept at most per kind; past it the stale ones go, and if none is stale, all of them.
const ACCOUNT_CACHE_MAX: usize = 10_000;

/// Values by id with the instant each was read.
struct Recent<V> {
    entries: std::sync::Mutex<std::collections::HashMap<String, (std::time::Instant, V)>>,
}

impl<V: Clone> Recent<V> {
    fn new() -> Self {
        Recent {
            entries: Default::default(),
        }
    }

    fn get(&self, ttl: std::time::Duration, id: &str) -> Option<V> {
        let entries = self.entries.lock().ok()?;
        let (at, value) = entries.get(id)?;
        (at.elapsed() < ttl).then(|| value.clone())
    }

    fn put(&self, ttl: std::time::Duration, id: &str, value: V) {
        if let Ok(mut entries) = self.entries.lock() {
            if entries.len() >= ACCOUNT_CACHE_MAX {
                entries.retain(|_, (at, _)| at.elapsed() < ttl);
                if entries.len() >= ACCOUNT_CACHE_MAX {
                    entries.clear();
                }
            }
            entries.insert(id.to_owned(), (std::time::Instant::now(), value));
        }
    }

    fn forget(&self, id: &str) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.remove(id);
        }
    }
}

impl AccountCache {
    /// A cache whose entries live `ttl`; zero keeps nothing.
    pub fn new(ttl: std::time::Duration) -> Self {
        AccountCache {
            ttl,
            keys: Recent::new(),
            plans: Recent::new(),
        }
    }

    pub(super) fn key(&self, key_id: &str) -> Option<std::sync::Arc<crate::ports::store::Item>> {
        (!self.ttl.is_zero())
            .then(|| self.keys.get(self.ttl, key_id))
            .flatten()
    }

    pub(super) fn remember_key(
        &self,
        key_id: &str,
        record: std::sync::Arc<crate::ports::store::Item>,
    ) {
        if !self.ttl.is_zero() {
            self.keys.put(self.ttl, key_id, record);
        }
    }

    pub(super) fn forget_key(&self, key_id: &str) {
        self.keys.forget(key_id);
    }

    /// The organization's plan as read within the lifetime, if it was.
    pub fn plan_of(&self, org: &str) -> Option<String> {
        (!self.ttl.is_zero())
            .then(|| self.plans.get(self.ttl, org))
            .flatten()
    }

    pub fn remember_plan(&self, org: &str, plan: &str) {
        if !self.ttl.is_zero() {
            self.plans.put(self.ttl, org, plan.to_owned());
        }
    }
}

impl Accounts<'_> {
    /// Resolves a bearer token to its caller; None for anything unknown or revoked. Only API
    /// keys are bearer credentials: a console session (a browser cookie) never is.
    pub async fn authenticate(&self, token: &str) -> ApiResult<Option<Caller>> {
        let Some(rest) = token.strip_prefix(API_KEY_PREFIX) else {
            return Ok(None);
        };
        let Some(suffix) = rest.get(..26) else {
            return Ok(None);
        };
        let id = format!("key_{suffix}");
        if !is_valid(&id, "key") {
            return Ok(None);
        }
        let cached = self.credentials.and_then(|c| c.key(&id));
        let from_cache = cached.is_some();
        let record = match cached {
            Some(record) => record,
            None => match self.store.get(&api_key_key(&id)).await? {
                Some(record) => std::sync::Arc::new(record),
                None => return Ok(None),
            },
        };
        let secret_matches = {
            use subtle::ConstantTimeEq;
            let stored = record.str_attr("hash").unwrap_or_default();
            stored
                .as_bytes()
                .ct_eq(hash_secret(token).as_bytes())
                .unwrap_u8()
                == 1
        };
        if !secret_matches || record.bool_attr("revoked") == Some(true) {
            return Ok(None);
        }
        let (Some(org), Some(person)) = (record.str_attr("org"), record.str_attr("person")) else {
            return Ok(None);
        };
        if !from_cache {
            // A credential dies with its holder's membership (a removed person, an erased
            // organization), whatever its own record says. The last-use time (written from a
            // fresh record only, at most once a minute) goes in the same round trip.
            let member_key = member_key(org, person);
            let note_used = async {
                if self.record_key_use {
                    self.note_used(&id, org, person, &record).await;
                }
            };
            let (member, ()) = tokio::join!(self.store.get(&member_key), note_used);
            if member?.is_none() {
                return Ok(None);
            }
            if let Some(cache) = self.credentials {
                cache.remember_key(&id, record.clone());
            }
        }
        Ok(Some(Caller {
            org: org.to_owned(),
            person: person.to_owned(),
            credential: Credential::ApiKey { key_id: id },
            limits: key_limits_of(&record),
            budget: key_budget::from_record(&record, now_secs()),
        }))
    }

    /// Records that key `id` authenticated a request, at most once every
    /// [`LAST_USED_EVERY_SECS`]: the key record authentication just read carries the last time,
    /// so a key in use adds one write (to the record and its listing) per minute, never one per
    /// request. A failed write is logged and the request goes on.
    async fn note_used(
        &self,
        id: &str,
        org: &str,
        person: &str,
        record: &crate::ports::store::Item,
    ) {
        let now = now_secs();
        if record
            .i64_attr(LAST_USED_AT)
            .is_some_and(|t| now - t < LAST_USED_EVERY_SECS)
        {
            return;
        }
        let ops = vec![
            TransactOp::Update {
                key: api_key_key(id),
                update: Update::new().set(LAST_USED_AT, now),
                condition: Some(Condition::Exists),
            },
            TransactOp::Update {
                key: org_api_key_key(org, person, id),
                update: Update::new().set(LAST_USED_AT, now),
                condition: Some(Condition::Exists),
            },
        ];
        if let Err(e) = self.store.transact(ops).await {
            tracing::warn!(key_id = %id, error = %e, "could not record the key's last use");
        }
    }
}
