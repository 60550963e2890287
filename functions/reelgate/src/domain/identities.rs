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
    format!("EMAIL#{}", email.trim().to_lowercase())
}

fn subject_pk(issuer: &str, subject: &str) -> String {
    let mut h = Sha256::new();
    h.update(issuer.as_bytes());
    h.update([0u8]);
    h.update(subject.as_bytes());
    format!("OIDCSUB#{}", hex::encode(h.finalize()))
}

fn entry_sk(person: &str) -> String {
    format!("PERSON#{person}")
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
    let mut it = item(&Key::new(
        format!("ORG#{org}#PERSON#{person}"),
        format!("IDENTITY#{pk}"),
    ));
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
        .query(Query::partition(pk).prefix("PERSON#").limit(100))
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
