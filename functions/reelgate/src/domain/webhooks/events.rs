//! Events: the terminal transition of a job emits one queue message per subscribed endpoint;
//! an unsent-event marker written with the settlement makes a crash in between re-emit it.

use super::endpoints::{list, EVENT_CANCELED, EVENT_COMPLETED, EVENT_FAILED, STATUS_ENABLED};
use crate::domain::dates::rfc3339;
use crate::domain::error::ApiResult;
use crate::domain::videos::object::Video;
use crate::domain::videos::record::{STATUS_CANCELED, STATUS_COMPLETED, STATUS_FAILED};
use crate::domain::Context;
use crate::ports::queue::MessageQueue;
use crate::ports::store::{item, now_secs, TransactOp};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The event type a terminal job status emits.
pub fn event_type(status: &str) -> Option<&'static str> {
    match status {
        STATUS_COMPLETED => Some(EVENT_COMPLETED),
        STATUS_FAILED => Some(EVENT_FAILED),
        STATUS_CANCELED => Some(EVENT_CANCELED),
        _ => None,
    }
}

/// The `webhook-id` of a job's terminal event: the same whoever emits it, however often.
pub fn event_id(video_id: &str, event_type: &str) -> String {
    let suffix = event_type.trim_start_matches("video.");
    format!("evt_{}_{suffix}", video_id.trim_start_matches("video_"))
}

/// One queue message: one event for one endpoint, at one attempt.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Delivery {
    pub org: String,
    pub endpoint_id: String,
    pub event_id: String,
    pub event_type: String,
    /// The body every attempt sends, byte for byte.
    pub payload: String,
    /// 1 for the first attempt.
    pub attempt: u32,
    /// Not to be attempted before this unix time (a wait longer than one queue hop).
    pub due_at: i64,
}

/// Emits the terminal event of job `video_id` (call after the settlement that ended it): one
/// delivery per enabled endpoint of `org` subscribed to it. Never fails: without a webhook
/// queue nothing is sent, and a failure to read or enqueue is logged.
pub async fn emit(cx: Context<'_>, org: &str, video_id: &str) {
    // Without a queue the marker stays for a host that has one (its recovery pass sends it).
    let Some(queue) = cx.webhooks else {
        return;
    };
    match emit_to(cx, queue, org, video_id).await {
        Ok(()) => {
            if let Err(e) = cx
                .store
                .delete(&crate::domain::table_keys::unsent_marker(video_id), None)
                .await
            {
                // The recovery pass emits it again: a duplicate with the same webhook-id.
                tracing::warn!(%video_id, error = %e, "could not clear the unsent-event marker");
            }
        }
        Err(e) => {
            tracing::error!(%video_id, error = %e, "could not emit the job's webhook event; the recovery pass retries it")
        }
    }
}

// The partition of unsent-event markers: jobs that ended and whose webhook event is not yet
// known to be queued. Operational, not tenant data: only [`recover_unsent`] reads it, and each
// marker names its organization.
use crate::domain::table_keys::UNSENT_PK;

/// How long a marker is kept if no recovery pass ever sends it (then TTL removes it).
const UNSENT_KEPT_SECS: i64 = 7 * 24 * 3600;

/// The marker a job's settlement writes in its own transaction (see the module's comment).
pub fn unsent_event_op(org: &str, video_id: &str, now: i64) -> TransactOp {
    let mut marker = item(&crate::domain::table_keys::unsent_marker(video_id));
    marker.insert("kind".into(), "unsent_event".into());
    marker.insert("org".into(), org.into());
    marker.insert("video_id".into(), video_id.into());
    marker.insert("created_at".into(), now.into());
    marker.insert(
        crate::ports::store::EXPIRES_AT.into(),
        (now + UNSENT_KEPT_SECS).into(),
    );
    TransactOp::Put {
        item: marker,
        condition: None,
    }
}

/// The recovery pass of webhook events: emits the event of every job whose marker is at least
/// `grace` old (its settling process died before queueing it, or the queue refused). Returns how
/// many it emitted again. A host without a webhook queue does nothing.
pub async fn recover_unsent(cx: Context<'_>, grace: Duration) -> ApiResult<usize> {
    if cx.webhooks.is_none() {
        return Ok(0);
    }
    let cutoff = now_secs() - grace.as_secs() as i64;
    let markers =
        crate::domain::table_keys::markers_written_by(cx.store, UNSENT_PK, cutoff).await?;
    for (org, video_id) in &markers {
        tracing::warn!(%video_id, %org, "a job's webhook event was never queued; emitting it");
        emit(cx, org, video_id).await;
    }
    Ok(markers.len())
}

async fn emit_to(
    cx: Context<'_>,
    queue: &dyn MessageQueue,
    org: &str,
    video_id: &str,
) -> Result<(), String> {
    let endpoints = list(cx, org).await.map_err(|e| e.message)?;
    if endpoints.is_empty() {
        return Ok(());
    }
    let job = crate::domain::videos::record::load(cx.store, org, video_id)
        .await
        .map_err(|e| e.to_string())?;
    let Some(video) = job.as_ref().map(Video::of) else {
        return Ok(());
    };
    let Some(event_type) = event_type(&video.status) else {
        return Ok(());
    };
    let payload = serde_json::json!({
        "type": event_type,
        "timestamp": rfc3339(video.completed_at.unwrap_or_else(now_secs)),
        "data": video,
    })
    .to_string();
    let event_id = event_id(video_id, event_type);
    for endpoint in endpoints {
        if endpoint.status != STATUS_ENABLED || !endpoint.events.iter().any(|e| e == event_type) {
            continue;
        }
        let delivery = Delivery {
            org: org.to_owned(),
            endpoint_id: endpoint.id.clone(),
            event_id: event_id.clone(),
            event_type: event_type.to_owned(),
            payload: payload.clone(),
            attempt: 1,
            due_at: 0,
        };
        let body = serde_json::to_string(&delivery).map_err(|e| e.to_string())?;
        queue
            .send(&body, Duration::ZERO)
            .await
            .map_err(|e| e.to_string())?;
        tracing::info!(%video_id, webhook = %endpoint.id, event = event_type, "webhook event queued");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_events_id_is_the_jobs_and_its_outcome() {
        assert_eq!(
            event_id("video_01ABC", EVENT_COMPLETED),
            "evt_01ABC_completed"
        );
    }
}
