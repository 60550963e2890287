//! People and their membership of an organization.

use super::Accounts;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::ids::{is_valid, new_id};
use crate::ports::store::{item, now_secs, Condition, ItemExt, Key, Query, TransactOp};
use serde::Serialize;

pub(super) fn person_key(person: &str) -> Key {
    crate::domain::table_keys::person(person)
}
pub(super) fn member_key(org: &str, person: &str) -> Key {
    crate::domain::table_keys::member(org, person)
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Person {
    pub id: String,
    pub email: String,
    pub org: String,
    pub created_at: i64,
}

impl Accounts<'_> {
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
