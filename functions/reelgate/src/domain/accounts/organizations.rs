//! Organizations: creating one, reading it, its credits and its plan.
//!
//! Money on an organization: `balance` is what it owns, `reserved` the quotes of renders in
//! flight, and `available = balance − reserved` is kept by every update so that admission is a
//! single conditional write without arithmetic in the condition (DynamoDB allows none).

use super::Accounts;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::ids::{is_valid, new_id};
use crate::ports::store::{item, now_secs, Attr, Condition, ItemExt, Key, Update};
use rust_decimal::Decimal;
use serde::Serialize;

pub const DEFAULT_PLAN: &str = "starter";

pub fn org_key(org: &str) -> Key {
    crate::domain::table_keys::org(org)
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

pub fn validate_money(amount: Decimal, what: &str) -> ApiResult<Decimal> {
    if amount.is_sign_negative() || amount.scale() > 6 {
        return Err(ApiError::invalid(
            what,
            format!("{what} must be a non-negative decimal with at most 6 places"),
        ));
    }
    Ok(amount)
}

impl Accounts<'_> {
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
}
