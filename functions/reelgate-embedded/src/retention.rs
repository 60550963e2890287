//! The local host's retention sweep: what DynamoDB's TTL and the bucket's lifecycle rules do on
//! AWS. One `now` per sweep; each expired record loses its blobs first and then itself, so a
//! crash in between leaves a record without bytes (read as gone, finished by the next sweep),
//! never bytes without a record. Per-person partitions (stored responses) are swept like the
//! rest, and no blob outlives [`BLOB_MAX_AGE_SECS`] even if a record never claimed it. Finished
//! workflow executions and dead-lettered render messages, which carry prompts, go too.

use crate::backend::LocalBackend;
use crate::journal::SqliteJournal;
use reelgate::domain::retention::{
    owned_blobs, BLOB_MAX_AGE_SECS, DEAD_LETTER_RETENTION_SECS, RETENTION_SECS,
    STAGING_MAX_AGE_SECS,
};
use reelgate::ports::blobs::BlobStore;
use reelgate::ports::store::{ItemExt, Key, PK, SK};

/// What one sweep removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SweepReport {
    /// Expired records deleted (after their blobs).
    pub records: usize,
    /// Expired records kept for the next sweep because deleting one of their blobs failed.
    pub deferred: usize,
    /// Blobs deleted by age (what the bucket's lifecycle rule does).
    pub aged_blobs: usize,
    /// Partial uploads a crash left behind, deleted after a day.
    pub partial_uploads: usize,
    /// Finished workflow executions past retention (their input holds the prompt).
    pub executions: usize,
    /// Dead-lettered render messages past the dead-letter queue's retention.
    pub dead_letters: usize,
}

/// Sweeps everything that expired at or before `now` (Unix seconds; the real clock in the
/// server, any instant in the aging test).
pub async fn sweep(backend: &LocalBackend, now: i64) -> anyhow::Result<SweepReport> {
    let (store, blobs) = (&backend.store, &backend.blobs);
    let mut report = SweepReport::default();
    for item in store.expired_items(now).await? {
        let (Some(pk), Some(sk)) = (item.str_attr(PK), item.str_attr(SK)) else {
            continue;
        };
        let key = Key::new(pk, sk);
        let mut blobs_gone = true;
        for blob in owned_blobs(&item) {
            if let Err(e) = blobs.delete(&blob).await {
                tracing::warn!(error = %e, pk, sk, "retention sweep: a blob could not be deleted; the record waits for the next sweep");
                blobs_gone = false;
                break;
            }
        }
        if !blobs_gone {
            report.deferred += 1;
            continue;
        }
        if store.delete_expired(&key, now).await? {
            report.records += 1;
        }
    }
    let (aged, partial) = blobs
        .expire_aged(now, BLOB_MAX_AGE_SECS, STAGING_MAX_AGE_SECS)
        .await?;
    report.aged_blobs = aged;
    report.partial_uploads = partial;
    report.executions = SqliteJournal::new(backend.db.clone())
        .prune_finished((now - RETENTION_SECS) * 1000)
        .await?;
    report.dead_letters = backend
        .render_queue
        .prune_dead((now - DEAD_LETTER_RETENTION_SECS) * 1000)
        .await?;
    if report != SweepReport::default() {
        tracing::info!(?report, "retention sweep");
    }
    Ok(report)
}
