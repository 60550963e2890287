//! Organizations, persons, memberships and API keys (console sessions: `domain::accounts::console`).
//!
//! Money on an organization: `balance` is what it owns, `reserved` the quotes of renders in
//! flight, and `available = balance − reserved` is kept by every update so that admission is a
//! single conditional write without arithmetic in the condition (DynamoDB allows none).
//! Secrets (API keys) are shown once and stored only as SHA-256 hashes.

pub mod agreement;
pub mod console;
pub mod identities;
pub mod key_budget;
pub mod key_controls;
pub mod record;

use crate::domain::catalog::RateLimits;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::ids::{is_valid, new_id, new_secret};
use crate::ports::store::{
    item, now_secs, Attr, Condition, ItemExt, ItemStore, Key, Query, TransactOp, Update,
};
use rust_decimal::Decimal;
use serde::Serialize;
use sha2::{Digest, Sha256};

pub const DEFAULT_PLAN: &str = "starter";
pub const API_KEY_PREFIX: &str = "rgk_";
/// The key id console traffic is attributed to wherever usage, limits or logs name a key.
pub const CONSOLE_KEY_ID: &str = "console";

pub fn org_key(org: &str) -> Key {
    crate::domain::table_keys::org(org)
}
fn person_key(person: &str) -> Key {
    crate::domain::table_keys::person(person)
}
fn member_key(org: &str, person: &str) -> Key {
    crate::domain::table_keys::member(org, person)
}
pub fn api_key_key(key_id: &str) -> Key {
    crate::domain::table_keys::api_key(key_id)
}
/// A person's key as listed in their organization's partition (the key record itself lives
/// under its id, where authentication finds it).
fn org_api_key_key(org: &str, person: &str, key_id: &str) -> Key {
    crate::domain::table_keys::api_key_listing(org, person, key_id)
}

/// The longest name a key may have.
pub const MAX_KEY_NAME_CHARS: usize = 64;
/// How often, at most, a key's `last_used_at` is written (seconds).
pub const LAST_USED_EVERY_SECS: i64 = 60;
const LAST_USED_AT: &str = "last_used_at";

/// An API key as its owner sees it in a list (never the secret).
#[derive(Clone, Debug, Serialize, PartialEq, utoipa::ToSchema)]
pub struct ApiKeyInfo {
    pub id: String,
    #[schema(value_type = String, pattern = "^api_key$")]
    pub object: &'static str,
    /// The name its owner gave it at creation (None for keys made without one).
    pub name: Option<String>,
    pub created_at: i64,
    /// When it last authenticated a request, to the minute: [`Accounts::authenticate`] writes
    /// it at most once a minute per key (see [`LAST_USED_EVERY_SECS`]).
    pub last_used_at: Option<i64>,
    pub revoked: bool,
    pub revoked_at: Option<i64>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Organization {
    pub id: String,
    pub name: String,
    pub plan: String,
    pub currency: String,
    #[serde(with = "rust_decimal::serde::str")]
    pub balance: Decimal,
    /// Quotes of renders admitted and not yet finished.
    #[serde(with = "rust_decimal::serde::str")]
    pub reserved: Decimal,
    #[serde(with = "rust_decimal::serde::str")]
    pub available: Decimal,
    pub renders_in_flight: i64,
    pub created_at: i64,
}

impl Organization {
    pub fn from_item(item: &crate::ports::store::Item) -> Option<Self> {
        Some(Organization {
            id: item.str_attr("id")?.to_owned(),
            name: item.str_attr("name").unwrap_or_default().to_owned(),
            plan: item.str_attr("plan").unwrap_or(DEFAULT_PLAN).to_owned(),
            currency: item.str_attr("currency").unwrap_or("usd").to_owned(),
            balance: item.decimal_attr("balance").unwrap_or_default(),
            reserved: item.decimal_attr("reserved").unwrap_or_default(),
            available: item.decimal_attr("available").unwrap_or_default(),
            renders_in_flight: item.i64_attr("in_flight").unwrap_or_default(),
            created_at: item.i64_attr("created_at").unwrap_or_default(),
        })
    }
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Person {
    pub id: String,
    pub email: String,
    pub org: String,
    pub created_at: i64,
}

/// A secret shown once at creation.
#[derive(Clone, Debug, Serialize)]
pub struct IssuedSecret {
    pub id: String,
    pub secret: String,
    pub person: String,
    pub org: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
}

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

/// The key record's attributes holding its rate-limit overrides.
/// The update that sets a key's limit overrides (an absent one is removed: the plan's applies).
fn limits_update(limits: &RateLimits) -> Update {
    limit_attrs(limits)
        .into_iter()
        .fold(Update::new(), |update, (name, value)| match value {
            Some(v) => update.set(name, Decimal::from(v)),
            None => update.remove(name),
        })
}

fn limit_attrs(limits: &RateLimits) -> [(&'static str, Option<u64>); 3] {
    [
        ("limit_requests_per_minute", limits.requests_per_minute),
        ("limit_tokens_per_minute", limits.tokens_per_minute),
        (
            "limit_video_creates_per_minute",
            limits.video_creates_per_minute,
        ),
    ]
}

fn key_limits_of(record: &crate::ports::store::Item) -> RateLimits {
    let read = |name: &str| record.i64_attr(name).and_then(|v| u64::try_from(v).ok());
    RateLimits {
        requests_per_minute: read("limit_requests_per_minute"),
        tokens_per_minute: read("limit_tokens_per_minute"),
        video_creates_per_minute: read("limit_video_creates_per_minute"),
    }
}

fn hash_secret(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

pub fn validate_money(amount: Decimal, what: &str) -> ApiResult<Decimal> {
    if amount.is_sign_negative() || amount.scale() > 6 {
        return Err(ApiError::invalid(
            what,
            format!("{what} must be a non-negative decimal with at most 6 places"),
        ));
    }
    Ok(amount)
}

pub struct Accounts<'a> {
    store: &'a dyn ItemStore,
    credentials: Option<&'a AccountCache>,
    /// Whether authentication writes a key's last-use time (`Settings::record_key_use`).
    record_key_use: bool,
}

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

    fn key(&self, key_id: &str) -> Option<std::sync::Arc<crate::ports::store::Item>> {
        (!self.ttl.is_zero())
            .then(|| self.keys.get(self.ttl, key_id))
            .flatten()
    }

    fn remember_key(&self, key_id: &str, record: std::sync::Arc<crate::ports::store::Item>) {
        if !self.ttl.is_zero() {
            self.keys.put(self.ttl, key_id, record);
        }
    }

    fn forget_key(&self, key_id: &str) {
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

    pub async fn create_org(
        &self,
        name: &str,
        plan: &str,
        currency: &str,
        credits: Decimal,
    ) -> ApiResult<Organization> {
        let credits = validate_money(credits, "credits")?;
        let currency = currency.to_ascii_lowercase();
        if currency.len() != 3 || !currency.bytes().all(|b| b.is_ascii_lowercase()) {
            return Err(ApiError::invalid(
                "currency",
                "currency must be a three-letter code such as usd",
            ));
        }
        let id = new_id("org");
        let mut it = item(&org_key(&id));
        it.insert("kind".into(), "organization".into());
        it.insert("id".into(), id.clone().into());
        it.insert("name".into(), name.into());
        it.insert("plan".into(), plan.into());
        it.insert("currency".into(), currency.into());
        it.insert("balance".into(), Attr::N(credits));
        it.insert("reserved".into(), Attr::N(Decimal::new(0, 2)));
        it.insert("available".into(), Attr::N(credits));
        it.insert("in_flight".into(), 0i64.into());
        it.insert("created_at".into(), now_secs().into());
        let org = Organization::from_item(&it)
            .ok_or_else(|| ApiError::internal("creating an organization", "bad item"))?;
        self.store.put(it, Some(Condition::NotExists)).await?;
        Ok(org)
    }

    pub async fn org(&self, org: &str) -> ApiResult<Organization> {
        if !is_valid(org, "org") {
            return Err(ApiError::not_found(
                "organization_not_found",
                format!("No organization {org}."),
            ));
        }
        let found = self.store.get(&org_key(org)).await?;
        found
            .as_ref()
            .and_then(Organization::from_item)
            .ok_or_else(|| {
                ApiError::not_found("organization_not_found", format!("No organization {org}."))
            })
    }

    pub async fn add_credits(&self, org: &str, amount: Decimal) -> ApiResult<Organization> {
        let amount = validate_money(amount, "amount")?;
        self.org(org).await?;
        let updated = self
            .store
            .update(
                &org_key(org),
                crate::domain::accounts::record::top_up(amount),
                Some(Condition::Exists),
            )
            .await?;
        Organization::from_item(&updated)
            .ok_or_else(|| ApiError::internal("adding credits", "bad item"))
    }

    pub async fn set_plan(&self, org: &str, plan: &str) -> ApiResult<Organization> {
        self.org(org).await?;
        let updated = self
            .store
            .update(
                &org_key(org),
                Update::new().set("plan", plan),
                Some(Condition::Exists),
            )
            .await?;
        Organization::from_item(&updated)
            .ok_or_else(|| ApiError::internal("setting the plan", "bad item"))
    }

    /// Creates a person as a member of `org`.
    pub async fn create_person(&self, org: &str, email: &str) -> ApiResult<Person> {
        if !email.contains('@') || email.len() > 320 {
            return Err(ApiError::invalid(
                "email",
                "email must be an address such as ana@example.com",
            ));
        }
        self.org(org).await?;
        let id = new_id("user");
        let now = now_secs();
        let mut p = item(&person_key(&id));
        p.insert("kind".into(), "person".into());
        p.insert("id".into(), id.clone().into());
        p.insert("email".into(), email.into());
        p.insert("org".into(), org.into());
        p.insert("created_at".into(), now.into());
        let mut m = item(&member_key(org, &id));
        m.insert("kind".into(), "membership".into());
        m.insert("person".into(), id.clone().into());
        m.insert("email".into(), email.into());
        m.insert("created_at".into(), now.into());
        let mut ops = vec![
            TransactOp::Put {
                item: p,
                condition: Some(Condition::NotExists),
            },
            TransactOp::Put {
                item: m,
                condition: Some(Condition::NotExists),
            },
        ];
        ops.extend(crate::domain::accounts::identities::email_index_ops(
            email, &id, org,
        ));
        self.store.transact(ops).await?;
        Ok(Person {
            id,
            email: email.to_owned(),
            org: org.to_owned(),
            created_at: now,
        })
    }

    pub async fn person(&self, person: &str) -> ApiResult<Person> {
        let not_found = || ApiError::not_found("user_not_found", format!("No user {person}."));
        if !is_valid(person, "user") {
            return Err(not_found());
        }
        let it = self
            .store
            .get(&person_key(person))
            .await?
            .ok_or_else(not_found)?;
        Ok(Person {
            id: person.to_owned(),
            email: it.str_attr("email").unwrap_or_default().to_owned(),
            org: it.str_attr("org").unwrap_or_default().to_owned(),
            created_at: it.i64_attr("created_at").unwrap_or_default(),
        })
    }

    /// True when `person` is (still) a member of `org`.
    pub async fn is_member(&self, org: &str, person: &str) -> ApiResult<bool> {
        if !is_valid(org, "org") || !is_valid(person, "user") {
            return Ok(false);
        }
        Ok(self.store.get(&member_key(org, person)).await?.is_some())
    }

    pub async fn require_member(&self, org: &str, person: &str) -> ApiResult<()> {
        self.org(org).await?;
        if self.store.get(&member_key(org, person)).await?.is_none() {
            return Err(ApiError::not_found(
                "membership_not_found",
                format!("User {person} is not a member of {org}."),
            ));
        }
        Ok(())
    }

    /// Issues an API key for a person in their organization.
    pub async fn create_api_key(&self, person: &str) -> ApiResult<IssuedSecret> {
        self.create_named_api_key(person, None).await
    }

    /// Issues an API key with a name its owner chose (trimmed; at most
    /// [`MAX_KEY_NAME_CHARS`] characters, param `name`).
    pub async fn create_named_api_key(
        &self,
        person: &str,
        name: Option<&str>,
    ) -> ApiResult<IssuedSecret> {
        let name = name.map(str::trim).filter(|n| !n.is_empty());
        if let Some(n) = name {
            if n.chars().count() > MAX_KEY_NAME_CHARS || n.chars().any(char::is_control) {
                return Err(ApiError::invalid(
                    "name",
                    format!(
                        "name must be at most {MAX_KEY_NAME_CHARS} characters, without control \
                         characters."
                    ),
                ));
            }
        }
        let p = self.person(person).await?;
        self.require_member(&p.org, person).await?;
        let key_id = new_id("key");
        let secret = format!("{API_KEY_PREFIX}{}_{}", &key_id[4..], new_secret(32));
        let mut it = item(&api_key_key(&key_id));
        it.insert("kind".into(), "api_key".into());
        it.insert("key_id".into(), key_id.clone().into());
        it.insert("hash".into(), hash_secret(&secret).into());
        it.insert("org".into(), p.org.clone().into());
        it.insert("person".into(), person.into());
        it.insert("revoked".into(), false.into());
        it.insert("created_at".into(), now_secs().into());
        let mut listed = item(&org_api_key_key(&p.org, person, &key_id));
        listed.insert("kind".into(), "api_key_listing".into());
        listed.insert("key_id".into(), key_id.clone().into());
        listed.insert("person".into(), person.into());
        listed.insert("revoked".into(), false.into());
        listed.insert("created_at".into(), now_secs().into());
        if let Some(n) = name {
            it.insert("name".into(), n.into());
            listed.insert("name".into(), n.into());
        }
        self.store
            .transact(vec![
                TransactOp::Put {
                    item: it,
                    condition: Some(Condition::NotExists),
                },
                TransactOp::Put {
                    item: listed,
                    condition: Some(Condition::NotExists),
                },
            ])
            .await?;
        Ok(IssuedSecret {
            id: key_id,
            secret,
            person: person.to_owned(),
            org: p.org,
            expires_at: None,
        })
    }

    pub async fn revoke_api_key(&self, key_id: &str) -> ApiResult<()> {
        let not_found =
            || ApiError::not_found("api_key_not_found", format!("No API key {key_id}."));
        if !is_valid(key_id, "key") {
            return Err(not_found());
        }
        if let Some(cache) = self.credentials {
            cache.forget_key(key_id);
        }
        let now = now_secs();
        let updated = match self
            .store
            .update(
                &api_key_key(key_id),
                Update::new().set("revoked", true).set("revoked_at", now),
                Some(Condition::Exists),
            )
            .await
        {
            Ok(updated) => updated,
            Err(crate::ports::store::StoreError::ConditionFailed) => return Err(not_found()),
            Err(e) => return Err(e.into()),
        };
        if let (Some(org), Some(person)) = (updated.str_attr("org"), updated.str_attr("person")) {
            match self
                .store
                .update(
                    &org_api_key_key(org, person, key_id),
                    Update::new().set("revoked", true).set("revoked_at", now),
                    Some(Condition::Exists),
                )
                .await
            {
                Ok(_) | Err(crate::ports::store::StoreError::ConditionFailed) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Sets an API key's own rate limits (an absent one falls back to the plan's).
    pub async fn set_key_limits(&self, key_id: &str, limits: &RateLimits) -> ApiResult<RateLimits> {
        let not_found =
            || ApiError::not_found("api_key_not_found", format!("No API key {key_id}."));
        if !is_valid(key_id, "key") {
            return Err(not_found());
        }
        let update = limits_update(limits);
        match self
            .store
            .update(&api_key_key(key_id), update, Some(Condition::Exists))
            .await
        {
            Ok(item) => Ok(key_limits_of(&item)),
            Err(crate::ports::store::StoreError::ConditionFailed) => Err(not_found()),
            Err(e) => Err(e.into()),
        }
    }

    /// An API key as the limiter sees it: its holder, organization and own rate limits.
    pub async fn api_key_holder(&self, key_id: &str) -> ApiResult<Caller> {
        let found = if is_valid(key_id, "key") {
            self.store.get(&api_key_key(key_id)).await?
        } else {
            None
        };
        let not_found =
            || ApiError::not_found("api_key_not_found", format!("No API key {key_id}."));
        let item = found.ok_or_else(not_found)?;
        Ok(Caller {
            org: item.str_attr("org").ok_or_else(not_found)?.to_owned(),
            person: item.str_attr("person").ok_or_else(not_found)?.to_owned(),
            credential: Credential::ApiKey {
                key_id: key_id.to_owned(),
            },
            limits: key_limits_of(&item),
            budget: key_budget::from_record(&item, now_secs()),
        })
    }

    /// Sets (or, with None, removes) an API key's monthly budget, in its organization's currency.
    pub async fn set_key_budget(
        &self,
        key_id: &str,
        monthly: Option<Decimal>,
    ) -> ApiResult<Caller> {
        let not_found =
            || ApiError::not_found("api_key_not_found", format!("No API key {key_id}."));
        if !is_valid(key_id, "key") {
            return Err(not_found());
        }
        let update = match monthly {
            Some(amount) => {
                validate_money(amount, "the budget")?;
                Update::new().set(key_budget::BUDGET_ATTR, amount)
            }
            None => Update::new().remove(key_budget::BUDGET_ATTR),
        };
        match self
            .store
            .update(&api_key_key(key_id), update, Some(Condition::Exists))
            .await
        {
            Ok(_) => self.api_key_holder(key_id).await,
            Err(crate::ports::store::StoreError::ConditionFailed) => Err(not_found()),
            Err(e) => Err(e.into()),
        }
    }

    /// One of the person's own keys in `org` as the limiter sees it; anyone else's key (or a
    /// revoked one) does not exist.
    pub async fn own_api_key_holder(
        &self,
        org: &str,
        person: &str,
        key_id: &str,
    ) -> ApiResult<Caller> {
        let holder = self.api_key_holder(key_id).await?;
        let record = self.store.get(&api_key_key(key_id)).await?;
        let revoked = record
            .as_ref()
            .and_then(|r| r.bool_attr("revoked"))
            .unwrap_or(false);
        if holder.org != org || holder.person != person || revoked {
            return Err(ApiError::not_found(
                "api_key_not_found",
                format!("No API key {key_id}."),
            ));
        }
        Ok(holder)
    }

    /// Replaces the rate-limit overrides and the monthly budget of one of the person's own keys
    /// in `org`, in one conditional write: the key must still be theirs and not revoked. An
    /// absent limit falls back to the plan's; no budget removes the cap.
    pub async fn set_own_key_controls(
        &self,
        org: &str,
        person: &str,
        key_id: &str,
        limits: &RateLimits,
        monthly_budget: Option<Decimal>,
    ) -> ApiResult<Caller> {
        let not_found =
            || ApiError::not_found("api_key_not_found", format!("No API key {key_id}."));
        if !is_valid(key_id, "key") {
            return Err(not_found());
        }
        let mut update = limits_update(limits);
        update = match monthly_budget {
            Some(amount) => update.set(
                key_budget::BUDGET_ATTR,
                validate_money(amount, "monthly_budget")?,
            ),
            None => update.remove(key_budget::BUDGET_ATTR),
        };
        let owned = Condition::Exists
            .and(Condition::Eq("org".into(), Attr::from(org)))
            .and(Condition::Eq("person".into(), Attr::from(person)))
            .and(Condition::Not(Box::new(Condition::Eq(
                "revoked".into(),
                Attr::from(true),
            ))));
        match self
            .store
            .update(&api_key_key(key_id), update, Some(owned))
            .await
        {
            Ok(_) => self.api_key_holder(key_id).await,
            Err(crate::ports::store::StoreError::ConditionFailed) => Err(not_found()),
            Err(e) => Err(e.into()),
        }
    }

    /// The keys `person` holds in `org`, newest first.
    pub async fn list_api_keys(&self, org: &str, person: &str) -> ApiResult<Vec<ApiKeyInfo>> {
        let page = self
            .store
            .query(
                Query::partition(crate::domain::table_keys::org_pk(org))
                    .prefix(crate::domain::table_keys::api_key_listings_of(person))
                    .descending()
                    .limit(1000),
            )
            .await?;
        Ok(page
            .items
            .iter()
            .filter_map(|i| {
                Some(ApiKeyInfo {
                    id: i.str_attr("key_id")?.to_owned(),
                    object: "api_key",
                    name: i.str_attr("name").map(str::to_owned),
                    created_at: i.i64_attr("created_at").unwrap_or_default(),
                    last_used_at: i.i64_attr(LAST_USED_AT),
                    revoked: i.bool_attr("revoked").unwrap_or(false),
                    revoked_at: i.i64_attr("revoked_at"),
                })
            })
            .collect())
    }

    /// Revokes one of the person's own keys in `org`; anyone else's key does not exist.
    pub async fn revoke_own_api_key(&self, org: &str, person: &str, key_id: &str) -> ApiResult<()> {
        let not_found =
            || ApiError::not_found("api_key_not_found", format!("No API key {key_id}."));
        if !is_valid(key_id, "key") {
            return Err(not_found());
        }
        let record = self
            .store
            .get(&api_key_key(key_id))
            .await?
            .ok_or_else(not_found)?;
        if record.str_attr("org") != Some(org) || record.str_attr("person") != Some(person) {
            return Err(not_found());
        }
        self.revoke_api_key(key_id).await
    }

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

    pub async fn members(&self, org: &str) -> ApiResult<Vec<String>> {
        let page = self
            .store
            .query(
                Query::partition(crate::domain::table_keys::org_pk(org))
                    .prefix(crate::domain::table_keys::MEMBER_PREFIX)
                    .limit(1000),
            )
            .await?;
        Ok(page
            .items
            .iter()
            .filter_map(|i| i.str_attr("person").map(str::to_owned))
            .collect())
    }
}
