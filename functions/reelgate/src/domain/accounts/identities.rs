//! How a person is found from outside the service: by email address (an index written when a
//! person is created) and by an OpenID Connect subject (a link written when someone first signs
//! in through an issuer). One human may be a person in several organizations, so each lookup
//! answers every (person, organization) it names; membership is checked by the caller.
//!
//! Each index entry has a back-reference in the person's own partition
//! (`ORG#<org>#PERSON#<person>`, sort key `IDENTITY#…`), so removing a person
//! (`domain::erasure`) removes the entries that name them.

use crate::ports::store::{
    item, now_secs, Condition, Item, ItemExt, ItemStore, Key, Query, TransactOp,
};
use sha2::{Digest, Sha256};

/// One (person, organization) an identity names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub person: String,
    pub org: String,
}

/// The attribute of a back-reference that names the index entry's partition.
pub const BACKREF_PK: &str = "identity_pk";
/// The attribute of a back-reference that names the index entry's sort key.
pub const BACKREF_SK: &str = "identity_sk";

fn email_pk(email: &str) -> String {
    crate::domain::table_keys::email_identity_pk(email)
}

fn subject_pk(issuer: &str, subject: &str) -> String {
    let mut h = Sha256::new();
    h.update(issuer.as_bytes());
    h.update([0u8]);
    h.update(subject.as_bytes());
    crate::domain::table_keys::oidc_subject_pk(&hex::encode(h.finalize()))
}

fn entry_sk(person: &str) -> String {
    crate::domain::table_keys::identity_entry_sk(person)
}

fn entry(pk: &str, kind: &str, person: &str, org: &str) -> Item {
    let mut it = item(&Key::new(pk, entry_sk(person)));
    it.insert("kind".into(), kind.into());
    it.insert("person".into(), person.into());
    it.insert("org".into(), org.into());
    it.insert("created_at".into(), now_secs().into());
    it
}

fn backref(pk: &str, person: &str, org: &str) -> Item {
    let mut it = item(&crate::domain::table_keys::identity_ref(org, person, pk));
    it.insert("kind".into(), "identity_ref".into());
    it.insert(BACKREF_PK.into(), pk.into());
    it.insert(BACKREF_SK.into(), entry_sk(person).into());
    it
}

/// The writes that index a new person by email (part of the transaction that creates them).
pub fn email_index_ops(email: &str, person: &str, org: &str) -> Vec<TransactOp> {
    let pk = email_pk(email);
    vec![
        TransactOp::Put {
            item: entry(&pk, "email_index", person, org),
            condition: Some(Condition::NotExists),
        },
        TransactOp::Put {
            item: backref(&pk, person, org),
            condition: Some(Condition::NotExists),
        },
    ]
}

async fn candidates(
    store: &dyn ItemStore,
    pk: String,
) -> Result<Vec<Candidate>, crate::ports::store::StoreError> {
    let page = store
        .query(
            Query::partition(pk)
                .prefix(crate::domain::table_keys::IDENTITY_ENTRY_PREFIX)
                .limit(100),
        )
        .await?;
    Ok(page
        .items
        .iter()
        .filter_map(|i| {
            Some(Candidate {
                person: i.str_attr("person")?.to_owned(),
                org: i.str_attr("org")?.to_owned(),
            })
        })
        .collect())
}

/// The persons created with this email address (case-insensitive).
pub async fn by_email(
    store: &dyn ItemStore,
    email: &str,
) -> Result<Vec<Candidate>, crate::ports::store::StoreError> {
    candidates(store, email_pk(email)).await
}

/// The persons an issuer's subject has been linked to.
pub async fn by_subject(
    store: &dyn ItemStore,
    issuer: &str,
    subject: &str,
) -> Result<Vec<Candidate>, crate::ports::store::StoreError> {
    candidates(store, subject_pk(issuer, subject)).await
}

/// Links an issuer's subject to a person (idempotent), so later sign-ins find them by subject
/// even if the address at the issuer changes.
pub async fn link_subject(
    store: &dyn ItemStore,
    issuer: &str,
    subject: &str,
    candidate: &Candidate,
) -> Result<(), crate::ports::store::StoreError> {
    let pk = subject_pk(issuer, subject);
    let mut link = entry(&pk, "oidc_subject", &candidate.person, &candidate.org);
    link.insert("issuer".into(), issuer.into());
    link.insert("subject".into(), subject.into());
    store.put(link, None).await?;
    store
        .put(backref(&pk, &candidate.person, &candidate.org), None)
        .await
}

/// What [`backfill_email`] found and wrote for one organization.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct EmailBackfill {
    pub org: String,
    /// Members seen.
    pub members: u64,
    /// Index entries written (members that had none).
    pub written: u64,
    /// Members already indexed.
    pub present: u64,
    /// Members with no email on record.
    pub without_email: u64,
}

/// Writes the email index entry (and its back-reference) of every member of `org` who has none:
/// people created before the index existed are otherwise found by OpenID Connect only through a
/// linked subject. Idempotent: an entry already there is kept as it is (a conditional put), and
/// the back-reference is the same item each time. The store has no scan, so this walks one
/// organization's memberships.
pub async fn backfill_email(
    store: &dyn ItemStore,
    org: &str,
) -> Result<EmailBackfill, crate::ports::store::StoreError> {
    let mut report = EmailBackfill {
        org: org.to_owned(),
        ..EmailBackfill::default()
    };
    let mut after = None;
    loop {
        let page = store
            .query(
                Query::partition(crate::domain::table_keys::org_pk(org))
                    .prefix(crate::domain::table_keys::MEMBER_PREFIX)
                    .limit(100)
                    .after(after.clone()),
            )
            .await?;
        for member in &page.items {
            let Some(person) = member.str_attr("person") else {
                continue;
            };
            report.members += 1;
            let email = match member.str_attr("email") {
                Some(e) if !e.trim().is_empty() => Some(e.to_owned()),
                _ => store
                    .get(&crate::domain::table_keys::person(person))
                    .await?
                    .and_then(|p| p.str_attr("email").map(str::to_owned))
                    .filter(|e| !e.trim().is_empty()),
            };
            let Some(email) = email else {
                report.without_email += 1;
                continue;
            };
            let pk = email_pk(&email);
            match store
                .put(
                    entry(&pk, "email_index", person, org),
                    Some(Condition::NotExists),
                )
                .await
            {
                Ok(()) => report.written += 1,
                Err(crate::ports::store::StoreError::ConditionFailed) => report.present += 1,
                Err(e) => return Err(e),
            }
            // Written every time, so an entry left without one (a run cut short) gets it too.
            store.put(backref(&pk, person, org), None).await?;
        }
        match page.last_sk {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    Ok(report)
}

/// The index entry a back-reference names (for erasure).
pub fn referenced_entry(backref: &Item) -> Option<Key> {
    Some(Key::new(
        backref.str_attr(BACKREF_PK)?,
        backref.str_attr(BACKREF_SK)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn email_lookups_ignore_case_and_subjects_are_scoped_by_issuer() {
        assert_eq!(email_pk(" Ana@Example.COM "), email_pk("ana@example.com"));
        assert_ne!(
            subject_pk("https://a.example", "123"),
            subject_pk("https://b.example", "123")
        );
        // The separator keeps ("ab", "c") and ("a", "bc") apart.
        assert_ne!(subject_pk("ab", "c"), subject_pk("a", "bc"));
    }
}
