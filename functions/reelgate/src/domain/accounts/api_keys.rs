//! API keys: issuing one (its secret shown once, stored only as a SHA-256 hash), listing and
//! revoking a person's keys, and a key's own rate limits and monthly budget.

use super::organizations::validate_money;
use super::{key_budget, Accounts, Caller, Credential};
use crate::domain::catalog::RateLimits;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::ids::{is_valid, new_id, new_secret};
use crate::ports::store::{
    item, now_secs, Attr, Condition, ItemExt, Key, Query, TransactOp, Update,
};
use rust_decimal::Decimal;
use serde::Serialize;
use sha2::{Digest, Sha256};

pub const API_KEY_PREFIX: &str = "rgk_";

pub fn api_key_key(key_id: &str) -> Key {
    crate::domain::table_keys::api_key(key_id)
}
/// A person's key as listed in their organization's partition (the key record itself lives
/// under its id, where authentication finds it).
pub(super) fn org_api_key_key(org: &str, person: &str, key_id: &str) -> Key {
    crate::domain::table_keys::api_key_listing(org, person, key_id)
}

/// The longest name a key may have.
pub const MAX_KEY_NAME_CHARS: usize = 64;
/// How often, at most, a key's `last_used_at` is written (seconds).
pub const LAST_USED_EVERY_SECS: i64 = 60;
pub(super) const LAST_USED_AT: &str = "last_used_at";

/// An API key as its owner sees it in a list (never the secret).
#[derive(Clone, Debug, Serialize, PartialEq, utoipa::ToSchema)]
pub struct ApiKeyInfo {
    pub id: String,
    #[schema(value_type = String, pattern = "^api_key$")]
    pub object: &'static str,
    /// The name its owner gave it at creation (None for keys made without one).
    pub name: Option<String>,
    pub created_at: i64,
    /// When it last authenticated a request, to the minute: authentication writes it at most
    /// once a minute per key.
    pub last_used_at: Option<i64>,
    pub revoked: bool,
    pub revoked_at: Option<i64>,
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

pub(super) fn key_limits_of(record: &crate::ports::store::Item) -> RateLimits {
    let read = |name: &str| record.i64_attr(name).and_then(|v| u64::try_from(v).ok());
    RateLimits {
        requests_per_minute: read("limit_requests_per_minute"),
        tokens_per_minute: read("limit_tokens_per_minute"),
        video_creates_per_minute: read("limit_video_creates_per_minute"),
    }
}

pub(super) fn hash_secret(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

impl Accounts<'_> {
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
}
