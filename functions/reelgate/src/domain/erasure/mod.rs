//! Erasure: an organization that leaves, or a person removed from one. What belongs to them goes
//! (jobs, outputs, thumbnails, files, uploads, stored responses, agreements, memberships); what
//! the operator must keep stays (the organization's account with its balance, the ledger of
//! charges, and moderation records until their own 30 days) and the report says so. Also the
//! storage report of `reelgate admin org show`. The inventory is docs/data.md.
//!
//! Erasure spans capabilities, so it sits above them: each names what is its own (videos its
//! running renders, files their staging area, accounts a person's index entries) and this
//! module composes them; none of them imports it.

use crate::domain::error::{ApiError, ApiResult};
use crate::domain::retention::{blob_kind, owned_blobs};
use crate::domain::Context;
use crate::ports::store::{query_all, Item, ItemExt, Key, Query, Update, PK, SK};
use serde::Serialize;
use std::collections::BTreeMap;

/// What an erasure removed and what it kept on purpose.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct ErasureReport {
    /// Renders that were still running and were canceled unbilled first (with `--force`).
    pub renders_stopped: usize,
    pub records_deleted: usize,
    pub blobs_deleted: usize,
    pub bytes_deleted: u64,
    /// What stays, and why.
    pub kept: Vec<&'static str>,
}

/// Records an erasure keeps: the ledger (render charges and token usage entries, with their
/// daily usage rollups `USAGE#`, which hold amounts, model and key ids only) and the moderation
/// records, which expire on their own 30-day schedule.
fn operator_keeps(sk: &str) -> bool {
    sk == crate::domain::table_keys::ORG_SK
        || sk.starts_with(crate::domain::table_keys::CHARGE_PREFIX)
        || sk.starts_with(crate::domain::table_keys::LEDGER_PREFIX)
        || sk.starts_with(crate::domain::table_keys::USAGE_PREFIX)
        || sk.starts_with(crate::domain::table_keys::MODERATION_PREFIX)
}

/// Every item of one partition, or of a prefix of it.
async fn partition_items(cx: Context<'_>, pk: &str, prefix: Option<&str>) -> ApiResult<Vec<Item>> {
    let mut query = Query::partition(pk);
    if let Some(prefix) = prefix {
        query = query.prefix(prefix);
    }
    Ok(query_all(cx.store, query).await?)
}

/// Deletes one record after its blobs (the order of docs/data.md).
async fn delete_record(cx: Context<'_>, item: &Item, report: &mut ErasureReport) -> ApiResult<()> {
    for blob in owned_blobs(item) {
        if let Some(meta) = cx.blobs.head(&blob).await? {
            cx.blobs.delete(&blob).await?;
            report.blobs_deleted += 1;
            report.bytes_deleted += meta.size;
        }
    }
    let (Some(pk), Some(sk)) = (item.str_attr(PK), item.str_attr(SK)) else {
        return Ok(());
    };
    // A person's back-reference names an index entry (email, sign-in subject) that goes with it.
    if let Some(entry) = crate::domain::accounts::identities::referenced_entry(item) {
        if cx.store.delete(&entry, None).await?.is_some() {
            report.records_deleted += 1;
        }
    }
    // A key's listing in its organization (`APIKEY#<person>#<key id>`) names the key record,
    // which goes with it: the secret's hash outlives nobody.
    if let Some(key_id) = crate::domain::table_keys::key_id_of_listing(sk) {
        let record = crate::domain::table_keys::api_key(key_id);
        if cx.store.delete(&record, None).await?.is_some() {
            report.records_deleted += 1;
        }
    }
    cx.store.delete(&Key::new(pk, sk), None).await?;
    report.records_deleted += 1;
    Ok(())
}

/// Deletes every blob left under `prefix` (bytes whose record was already gone).
async fn delete_blobs_under(
    cx: Context<'_>,
    prefix: &str,
    report: &mut ErasureReport,
) -> ApiResult<()> {
    for blob in cx.blobs.list(prefix).await? {
        cx.blobs.delete(&blob.key).await?;
        report.blobs_deleted += 1;
        report.bytes_deleted += blob.size;
    }
    Ok(())
}

/// Ends the running jobs that `started_by` selects: refused unless `force`, and then each is
/// canceled and its reservation released (never billed) before anything is erased.
async fn stop_running_jobs(
    cx: Context<'_>,
    org: &str,
    started_by: Option<&str>,
    force: bool,
    report: &mut ErasureReport,
) -> ApiResult<()> {
    let running = crate::domain::videos::jobs::running(cx, org, started_by).await?;
    if running.is_empty() {
        return Ok(());
    }
    if !force {
        return Err(ApiError::conflict(format!(
            "{} video(s) are still rendering ({}); wait until they finish, or force the erasure \
             to cancel them unbilled first.",
            running.len(),
            running.join(", ")
        )));
    }
    for video_id in &running {
        if crate::domain::videos::jobs::cancel(cx, org, video_id).await? {
            report.renders_stopped += 1;
        }
    }
    Ok(())
}

/// Erases an organization's data and closes it. Its members can no longer authenticate (their
/// memberships are gone); the account item stays, marked erased, with its balance, beside the
/// ledger and the moderation records.
pub async fn erase_org(cx: Context<'_>, org: &str, force: bool) -> ApiResult<ErasureReport> {
    let accounts = cx.accounts();
    accounts.org(org).await?;
    let mut report = ErasureReport::default();
    stop_running_jobs(cx, org, None, force, &mut report).await?;
    for person in accounts.members(org).await? {
        erase_person_data(cx, org, &person, &mut report).await?;
    }
    for item in partition_items(cx, &crate::domain::table_keys::org_pk(org), None).await? {
        if !operator_keeps(item.str_attr(SK).unwrap_or_default()) {
            delete_record(cx, &item, &mut report).await?;
        }
    }
    delete_blobs_under(cx, &format!("{org}/"), &mut report).await?;
    let staging = crate::domain::files::uploads::staging_prefix(org);
    delete_blobs_under(cx, &staging, &mut report).await?;
    cx.store
        .update(
            &crate::domain::accounts::org_key(org),
            Update::new().set("erased_at", crate::ports::store::now_secs()),
            None,
        )
        .await?;
    report.kept = vec![
        "the organization's account record (marked erased) with its balance",
        "the ledger: render charges and token usage entries",
        "moderation records, until 30 days after each check",
    ];
    Ok(report)
}

/// Removes one person from an organization with what is theirs alone: membership, agreements,
/// stored responses, and the person record. Videos and files belong to the organization and
/// stay; renders the person started are refused unless `force`.
pub async fn remove_person(
    cx: Context<'_>,
    org: &str,
    person: &str,
    force: bool,
) -> ApiResult<ErasureReport> {
    let accounts = cx.accounts();
    accounts.org(org).await?;
    if !accounts.members(org).await?.iter().any(|p| p == person) {
        return Err(ApiError::not_found(
            "user_not_found",
            format!("{person} is not a member of {org}."),
        ));
    }
    let mut report = ErasureReport::default();
    stop_running_jobs(cx, org, Some(person), force, &mut report).await?;
    erase_person_data(cx, org, person, &mut report).await?;
    report.kept = vec![
        "the organization's videos and files, including those this person created",
        "the ledger: render charges and token usage entries",
        "moderation records, until 30 days after each check",
    ];
    Ok(report)
}

/// A person's own records within `org`: membership, agreements, API keys, their stored-response
/// partition with its blobs, and the person record.
async fn erase_person_data(
    cx: Context<'_>,
    org: &str,
    person: &str,
    report: &mut ErasureReport,
) -> ApiResult<()> {
    for item in partition_items(
        cx,
        &crate::domain::table_keys::person_in_org_pk(org, person),
        None,
    )
    .await?
    {
        delete_record(cx, &item, report).await?;
    }
    delete_blobs_under(cx, &format!("{org}/responses/{person}/"), report).await?;
    for prefix in [
        crate::domain::table_keys::agreements_of(person),
        crate::domain::table_keys::api_key_listings_of(person),
    ] {
        for item in
            partition_items(cx, &crate::domain::table_keys::org_pk(org), Some(&prefix)).await?
        {
            delete_record(cx, &item, report).await?;
        }
    }
    for key in [
        crate::domain::table_keys::member(org, person),
        crate::domain::table_keys::person(person),
    ] {
        if cx.store.delete(&key, None).await?.is_some() {
            report.records_deleted += 1;
        }
    }
    Ok(())
}

/// Bytes an organization stores, by kind (`video_outputs`, `thumbnails`, `files`,
/// `stored_responses`, …), from the blob store itself.
pub async fn stored_bytes(cx: Context<'_>, org: &str) -> ApiResult<BTreeMap<&'static str, u64>> {
    let mut by_kind = BTreeMap::new();
    let mut blobs = cx.blobs.list(&format!("{org}/")).await?;
    let staging = crate::domain::files::uploads::staging_prefix(org);
    blobs.extend(cx.blobs.list(&staging).await?);
    for blob in blobs {
        *by_kind.entry(blob_kind(&blob.key)).or_insert(0) += blob.size;
    }
    Ok(by_kind)
}
