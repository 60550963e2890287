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

/// Entries kept at most per kind; past it a shard's stale ones go, and if none is stale, all of
/// that shard's.
const ACCOUNT_CACHE_MAX: usize = 10_000;

/// Locks per kind. Every request reads its key here, so one lock would be a point every core
/// waits at; a key's shard is chosen by its id's hash, and a lookup holds only that shard.
const SHARDS: usize = 16;

type Entries<V> = std::collections::HashMap<String, (std::time::Instant, V)>;

/// Values by id with the instant each was read.
struct Recent<V> {
    shards: [std::sync::Mutex<Entries<V>>; SHARDS],
    hasher: std::collections::hash_map::RandomState,
}

impl<V: Clone> Recent<V> {
    fn new() -> Self {
        Recent {
            shards: std::array::from_fn(|_| Default::default()),
            hasher: Default::default(),
        }
    }

    fn shard_of(&self, id: &str) -> usize {
        use std::hash::BuildHasher;
        (self.hasher.hash_one(id) % SHARDS as u64) as usize
    }

    fn shard(&self, id: &str) -> Option<std::sync::MutexGuard<'_, Entries<V>>> {
        self.shards[self.shard_of(id)].lock().ok()
    }

    fn get(&self, ttl: std::time::Duration, id: &str) -> Option<V> {
        let entries = self.shard(id)?;
        let (at, value) = entries.get(id)?;
        (at.elapsed() < ttl).then(|| value.clone())
    }

    fn put(&self, ttl: std::time::Duration, id: &str, value: V) {
        if let Some(mut entries) = self.shard(id) {
            if entries.len() >= ACCOUNT_CACHE_MAX / SHARDS {
                entries.retain(|_, (at, _)| at.elapsed() < ttl);
                if entries.len() >= ACCOUNT_CACHE_MAX / SHARDS {
                    entries.clear();
                }
            }
            entries.insert(id.to_owned(), (std::time::Instant::now(), value));
        }
    }

    fn forget(&self, id: &str) {
        if let Some(mut entries) = self.shard(id) {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The contention check of the account cache, like the rate windows' one: with one key's
    /// shard held, another key's lookup still answers. With one lock for the whole cache
    /// (`SHARDS = 1`) no key lies outside the held shard and the test fails; a lookup that
    /// waited for the held shard fails by the deadline.
    #[test]
    fn a_held_shard_does_not_stop_another_keys_lookup() {
        let ttl = std::time::Duration::from_secs(60);
        let cache = AccountCache::new(ttl);
        let held_id = "key_held";
        let other_id = (0..1000)
            .map(|i| format!("key_{i}"))
            .find(|id| cache.keys.shard_of(id) != cache.keys.shard_of(held_id))
            .expect("a key outside the held key's shard: the cache is one lock");
        cache.remember_key(&other_id, Default::default());
        let held = cache.keys.shards[cache.keys.shard_of(held_id)]
            .lock()
            .expect("lock");
        let (done, answer) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| {
                let _ = done.send(cache.key(&other_id).is_some());
            });
            let found = answer.recv_timeout(std::time::Duration::from_secs(5));
            // Released before asserting, so a shared lock fails the test instead of hanging it.
            drop(held);
            assert_eq!(
                found,
                Ok(true),
                "another key's lookup waited for the held shard"
            );
        });
    }

    /// Keys spread over the shards, and the cache keeps at most its bound however many it is given.
    #[test]
    fn keys_spread_and_the_cache_stays_bounded() {
        let ttl = std::time::Duration::from_secs(60);
        let cache = AccountCache::new(ttl);
        let used: std::collections::HashSet<usize> = (0..1000)
            .map(|i| cache.keys.shard_of(&format!("key_{i}")))
            .collect();
        assert!(
            used.len() > SHARDS / 2,
            "{} of {SHARDS} shards used",
            used.len()
        );
        for i in 0..(2 * ACCOUNT_CACHE_MAX) {
            cache.remember_plan(&format!("org_{i}"), "free");
        }
        let kept: usize = cache
            .plans
            .shards
            .iter()
            .map(|s| s.lock().expect("lock").len())
            .sum();
        assert!(kept <= ACCOUNT_CACHE_MAX, "{kept} plans kept");
        assert_eq!(cache.plan_of("org_19999").as_deref(), Some("free"));
    }
}
