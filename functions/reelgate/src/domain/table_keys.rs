//! The one owner of the table's key formats: every partition and sort key of the single table
//! (docs/table-design.md lists them, and `tests/architecture.rs` fails if a key prefix such as
//! `"ORG#` is written anywhere else in the crates' code). Tenancy is in the key: every
//! organization-scoped key is built from the organization id the caller authenticated as.

use crate::ports::store::{ItemExt, ItemStore, Key, Query, StoreError};

// ---- Organization partition `ORG#<org>` -------------------------------------------------------

/// The partition of everything an organization owns (jobs, files, ledger, members, …).
pub fn org_pk(org: &str) -> String {
    format!("ORG#{org}")
}

/// The organization's own item's sort key.
pub const ORG_SK: &str = "ORG";

/// The organization record (`ORG#<org>` / `ORG`).
pub fn org(org: &str) -> Key {
    Key::new(org_pk(org), ORG_SK)
}

/// The organization of an organization partition's key (`ORG#<org>`, not a per-person
/// partition `ORG#<org>#PERSON#<person>`).
pub fn org_of_pk(pk: &str) -> Option<&str> {
    pk.strip_prefix("ORG#").filter(|org| !org.contains('#'))
}

/// Sort-key prefix of video jobs (`VIDEO#<video id>`): ids sort by time, so the list is a range.
pub const VIDEO_PREFIX: &str = "VIDEO#";

pub fn video_sk(video_id: &str) -> String {
    format!("{VIDEO_PREFIX}{video_id}")
}

/// A video job (`ORG#<org>` / `VIDEO#<video id>`).
pub fn job(org: &str, video_id: &str) -> Key {
    Key::new(org_pk(org), video_sk(video_id))
}

pub const FILE_PREFIX: &str = "FILE#";

pub fn file_sk(file_id: &str) -> String {
    format!("{FILE_PREFIX}{file_id}")
}

/// An uploaded file (`ORG#<org>` / `FILE#<file id>`).
pub fn file(org: &str, file_id: &str) -> Key {
    Key::new(org_pk(org), file_sk(file_id))
}

pub const CHARACTER_PREFIX: &str = "CHARACTER#";

pub fn character_sk(character_id: &str) -> String {
    format!("{CHARACTER_PREFIX}{character_id}")
}

/// A video character (`ORG#<org>` / `CHARACTER#<character id>`).
pub fn character(org: &str, character_id: &str) -> Key {
    Key::new(org_pk(org), character_sk(character_id))
}

pub const UPLOAD_PREFIX: &str = "UPLOAD#";

/// A direct upload (`ORG#<org>` / `UPLOAD#<upload id>`).
pub fn upload(org: &str, upload_id: &str) -> Key {
    Key::new(org_pk(org), format!("{UPLOAD_PREFIX}{upload_id}"))
}

pub const MEMBER_PREFIX: &str = "MEMBER#";

/// A membership (`ORG#<org>` / `MEMBER#<person>`).
pub fn member(org: &str, person: &str) -> Key {
    Key::new(org_pk(org), format!("{MEMBER_PREFIX}{person}"))
}

/// The prefix of one person's agreements in an organization (`AGREEMENT#<person>#`).
pub fn agreements_of(person: &str) -> String {
    format!("AGREEMENT#{person}#")
}

/// An agreement to a terms version (`ORG#<org>` / `AGREEMENT#<person>#<version>`).
pub fn agreement(org: &str, person: &str, version: &str) -> Key {
    Key::new(org_pk(org), format!("{}{version}", agreements_of(person)))
}

pub const WEBHOOK_PREFIX: &str = "WEBHOOK#";

/// A webhook endpoint (`ORG#<org>` / `WEBHOOK#<id>`).
pub fn webhook(org: &str, id: &str) -> Key {
    Key::new(org_pk(org), format!("{WEBHOOK_PREFIX}{id}"))
}

/// The count of an organization's webhook endpoints (`ORG#<org>` / `WEBHOOK_COUNT`): every
/// create and delete changes it in the transaction that writes the endpoint, so the cap holds
/// under concurrent creates. Not under [`WEBHOOK_PREFIX`], so listings never see it.
pub fn webhook_count(org: &str) -> Key {
    Key::new(org_pk(org), "WEBHOOK_COUNT")
}

/// The prefix of an organization's webhook delivery slots (leases of in-flight POSTs).
pub const WEBHOOK_SLOT_PREFIX: &str = "WEBHOOK_INFLIGHT#";

/// One delivery slot (`ORG#<org>` / `WEBHOOK_INFLIGHT#<scope>#<n>`): `scope` is an endpoint id
/// for the endpoint's own slots, `org` for the organization's.
pub fn webhook_slot(org: &str, scope: &str, n: usize) -> Key {
    Key::new(org_pk(org), format!("{WEBHOOK_SLOT_PREFIX}{scope}#{n}"))
}

/// The lease of an endpoint's latest test event (`ORG#<org>` / `WEBHOOK_TEST#<id>`): it expires
/// when the next test may be sent (`webhooks::test_event`). Not under [`WEBHOOK_PREFIX`].
pub fn webhook_test(org: &str, id: &str) -> Key {
    Key::new(org_pk(org), format!("WEBHOOK_TEST#{id}"))
}

pub const CHARGE_PREFIX: &str = "CHARGE#";

/// A render charge (`ORG#<org>` / `CHARGE#<video id>`), written once per job.
pub fn charge(org: &str, video_id: &str) -> Key {
    Key::new(org_pk(org), format!("{CHARGE_PREFIX}{video_id}"))
}

pub const LEDGER_PREFIX: &str = "LEDGER#";

/// A token-usage ledger entry (`ORG#<org>` / `LEDGER#<reference>`): the reference is stable
/// (a completion id), so a retry cannot charge twice.
pub fn ledger(org: &str, reference: &str) -> Key {
    Key::new(org_pk(org), format!("{LEDGER_PREFIX}{reference}"))
}

pub const USAGE_PREFIX: &str = "USAGE#";

/// The sort key where a day's rollups start (`USAGE#<YYYY-MM-DD>`): everything of that day sorts
/// after it, everything of earlier days before it.
pub fn usage_day_sk(day_label: &str) -> String {
    format!("{USAGE_PREFIX}{day_label}")
}

/// A daily usage rollup (`ORG#<org>` / `USAGE#<YYYY-MM-DD>#<type>#<model>#<key>`).
pub fn usage_rollup(org: &str, day_label: &str, charge_type: &str, model: &str, key: &str) -> Key {
    Key::new(
        org_pk(org),
        format!("{}#{charge_type}#{model}#{key}", usage_day_sk(day_label)),
    )
}

pub const MODERATION_PREFIX: &str = "MODERATION#";

/// A moderation record (`ORG#<org>` / `MODERATION#<video id>`).
pub fn moderation(org: &str, video_id: &str) -> Key {
    Key::new(org_pk(org), format!("{MODERATION_PREFIX}{video_id}"))
}

/// An idempotency record (`ORG#<org>` / `IDEMPOTENCY#<route>#<sha-256 hex of the key>`).
pub fn idempotency(org: &str, route: &str, digest_hex: &str) -> Key {
    Key::new(org_pk(org), format!("IDEMPOTENCY#{route}#{digest_hex}"))
}

/// The prefix of one person's key listings in an organization (`APIKEY#<person>#`).
pub fn api_key_listings_of(person: &str) -> String {
    format!("APIKEY#{person}#")
}

/// A person's key as listed in their organization's partition
/// (`ORG#<org>` / `APIKEY#<person>#<key id>`); the key record itself lives under its id.
pub fn api_key_listing(org: &str, person: &str, key_id: &str) -> Key {
    Key::new(
        org_pk(org),
        format!("{}{key_id}", api_key_listings_of(person)),
    )
}

/// The key id a key listing's sort key names.
pub fn key_id_of_listing(sk: &str) -> Option<&str> {
    sk.strip_prefix("APIKEY#")
        .and_then(|rest| rest.rsplit('#').next())
}

// ---- Per-person partition `ORG#<org>#PERSON#<person>` ------------------------------------------

/// The partition private to one person within an organization (stored responses, identity
/// back-references).
pub fn person_in_org_pk(org: &str, person: &str) -> String {
    format!("ORG#{org}#PERSON#{person}")
}

/// A stored response (`ORG#<org>#PERSON#<person>` / `RESPONSE#<id>`).
pub fn response(org: &str, person: &str, id: &str) -> Key {
    Key::new(person_in_org_pk(org, person), format!("RESPONSE#{id}"))
}

/// A stored response's input item (`ORG#<org>#PERSON#<person>` / `ITEM#<id>`).
pub fn response_item(org: &str, person: &str, id: &str) -> Key {
    Key::new(person_in_org_pk(org, person), format!("ITEM#{id}"))
}

/// A back-reference from a person to an identity index entry
/// (`ORG#<org>#PERSON#<person>` / `IDENTITY#<entry pk>`).
pub fn identity_ref(org: &str, person: &str, entry_pk: &str) -> Key {
    Key::new(
        person_in_org_pk(org, person),
        format!("IDENTITY#{entry_pk}"),
    )
}

// ---- Records under their own id -----------------------------------------------------------------

/// A person (`PERSON#<id>` / `PERSON`).
pub fn person(person: &str) -> Key {
    Key::new(format!("PERSON#{person}"), "PERSON")
}

/// An API key record (`APIKEY#<key id>` / `APIKEY`), where authentication finds it.
pub fn api_key(key_id: &str) -> Key {
    Key::new(format!("APIKEY#{key_id}"), "APIKEY")
}

/// A console session (`CONSOLE#<id>` / `CONSOLE`).
pub fn console_session(session_id: &str) -> Key {
    Key::new(format!("CONSOLE#{session_id}"), "CONSOLE")
}

/// A console sign-in link (`CONSOLELINK#<id>` / `CONSOLELINK`).
pub fn console_link(link_id: &str) -> Key {
    Key::new(format!("CONSOLELINK#{link_id}"), "CONSOLELINK")
}

/// An OpenID Connect sign-in in flight (`OIDCFLOW#<id>` / `OIDCFLOW`).
pub fn oidc_flow(flow_id: &str) -> Key {
    Key::new(format!("OIDCFLOW#{flow_id}"), "OIDCFLOW")
}

// ---- Identity index: `EMAIL#<address>` / `OIDCSUB#<hash>` partitions of `PERSON#<id>` entries ---

/// The partition of the people an email address (trimmed, lower-cased) signs in as.
pub fn email_identity_pk(email: &str) -> String {
    format!("EMAIL#{}", email.trim().to_lowercase())
}

/// The partition of the people an issuer's subject signs in as (`sha256(issuer 0 subject)` hex).
pub fn oidc_subject_pk(subject_digest_hex: &str) -> String {
    format!("OIDCSUB#{subject_digest_hex}")
}

/// Sort-key prefix of an identity index entry (`PERSON#<person>`).
pub const IDENTITY_ENTRY_PREFIX: &str = "PERSON#";

pub fn identity_entry_sk(person: &str) -> String {
    format!("{IDENTITY_ENTRY_PREFIX}{person}")
}

// ---- Rate-limit windows `RATE#…` / `<kind>#<minute>` ------------------------------------------

/// The window partition of one API key.
pub fn rate_key_scope(org: &str, key_id: &str) -> String {
    format!("RATE#{org}#KEY#{key_id}")
}

/// The window partition of a person's console traffic.
pub fn rate_console_scope(org: &str, person: &str) -> String {
    format!("RATE#{org}#CONSOLE#{person}")
}

/// The window partition of a whole organization.
pub fn rate_org_scope(org: &str) -> String {
    format!("RATE#{org}")
}

/// Whether a window partition is one holder's (a key or a console person), not the
/// organization's.
pub fn is_holder_rate_scope(scope_pk: &str) -> bool {
    scope_pk.contains("#KEY#") || scope_pk.contains("#CONSOLE#")
}

/// One minute's window of a scope (`<scope>` / `<kind tag>#<Unix minute>`).
pub fn rate_window(scope_pk: &str, kind_tag: &str, minute: i64) -> Key {
    Key::new(scope_pk.to_owned(), format!("{kind_tag}#{minute}"))
}

// ---- Operational partitions ---------------------------------------------------------------------

/// The partition of the "admitted, workflow start not yet confirmed" markers (see
/// `jobs::recover_unstarted`). Operational, not tenant data: each marker names its org.
pub const UNSTARTED_PK: &str = "UNSTARTED";

/// The partition of the "job ended, webhook event not yet queued" markers (see
/// `videos::events::recover_unsent`).
pub const UNSENT_PK: &str = "UNSENT_EVENTS";

/// A job's start marker (`UNSTARTED` / `VIDEO#<video id>`).
pub fn unstarted_marker(video_id: &str) -> Key {
    Key::new(UNSTARTED_PK, video_sk(video_id))
}

/// A job's unsent-event marker (`UNSENT_EVENTS` / `VIDEO#<video id>`).
pub fn unsent_marker(video_id: &str) -> Key {
    Key::new(UNSENT_PK, video_sk(video_id))
}

/// A key no record ever has: reading it proves the table, region and credentials work.
pub fn probe() -> Key {
    Key::new("ADMIN#PROBE", "PROBE")
}

/// The markers of a marker partition (`UNSTARTED`, `UNSENT_EVENTS`: sort key `VIDEO#<id>`, each
/// naming its `org` and `video_id`) written at or before `cutoff`, as (org, video id), read a
/// page at a time. Only the recovery passes read these partitions.
pub async fn markers_written_by(
    store: &dyn ItemStore,
    partition: &str,
    cutoff: i64,
) -> Result<Vec<(String, String)>, StoreError> {
    let mut found = Vec::new();
    let mut after = None;
    loop {
        let page = store
            .query(
                Query::partition(partition)
                    .prefix(VIDEO_PREFIX)
                    .limit(100)
                    .after(after.take()),
            )
            .await?;
        for marker in &page.items {
            if let (Some(org), Some(video_id)) =
                (marker.str_attr("org"), marker.str_attr("video_id"))
            {
                if marker.i64_attr("created_at").unwrap_or(0) <= cutoff {
                    found.push((org.to_owned(), video_id.to_owned()));
                }
            }
        }
        match page.last_sk {
            Some(sk) => after = Some(sk),
            None => return Ok(found),
        }
    }
}
