//! Events: one queue message per subscribed endpoint for an event its subject's owner built
//! (a job's terminal event: `domain::videos::events`); an unsent-event marker written with the
//! settlement that ended the job makes a crash in between re-emit it.

use super::endpoints::{list, STATUS_ENABLED};
use crate::domain::Context;
use crate::ports::queue::MessageQueue;
use crate::ports::store::{item, TransactOp};
use serde::{Deserialize, Serialize};
use std::time::Duration;

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

/// An event ready to send: its `webhook-id` (the same on every attempt and every emission), its
/// type, and the body every attempt sends.
pub struct Event {
    pub id: String,
    pub event_type: &'static str,
    pub payload: String,
}

/// Whether this host sends webhook events: without a webhook queue the unsent-event markers wait
/// for a host that has one (its recovery pass sends them).
pub fn sending(cx: Context<'_>) -> bool {
    cx.webhooks.is_some()
}

/// Queues the event `make` builds for every enabled endpoint of `org` subscribed to its type
/// (call after the settlement that ended `subject`, the job), then clears `subject`'s
/// unsent-event marker. `make` runs only when the organization has endpoints; `Ok(None)` sends
/// nothing (the job is gone, or not terminal). Never fails: a failure to read or enqueue is
/// logged and the marker stays for the recovery pass.
pub async fn emit<F, Fut>(cx: Context<'_>, org: &str, subject: &str, make: F)
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<Option<Event>, String>>,
{
    let Some(queue) = cx.webhooks else {
        return;
    };
    match emit_to(cx, queue, org, make).await {
        Ok(()) => {
            if let Err(e) = cx
                .store
                .delete(&crate::domain::table_keys::unsent_marker(subject), None)
                .await
            {
                // The recovery pass emits it again: a duplicate with the same webhook-id.
                tracing::warn!(video_id = %subject, error = %e, "could not clear the unsent-event marker");
            }
        }
        Err(e) => {
            tracing::error!(video_id = %subject, error = %e, "could not emit the job's webhook event; the recovery pass retries it")
        }
    }
}

// The partition of unsent-event markers (`table_keys::UNSENT_PK`): jobs that ended and whose
// webhook event is not yet known to be queued. Operational, not tenant data: only the recovery
// pass (`domain::videos::events::recover_unsent`) reads it, and each marker names its
// organization.

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

async fn emit_to<F, Fut>(
    cx: Context<'_>,
    queue: &dyn MessageQueue,
    org: &str,
    make: F,
) -> Result<(), String>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<Option<Event>, String>>,
{
    let endpoints = list(cx, org).await.map_err(|e| e.message)?;
    if endpoints.is_empty() {
        return Ok(());
    }
    let Some(event) = make().await? else {
        return Ok(());
    };
    for endpoint in endpoints {
        if endpoint.status != STATUS_ENABLED
            || !endpoint.events.iter().any(|e| e == event.event_type)
        {
            continue;
        }
        let delivery = Delivery {
            org: org.to_owned(),
            endpoint_id: endpoint.id.clone(),
            event_id: event.id.clone(),
            event_type: event.event_type.to_owned(),
            payload: event.payload.clone(),
            attempt: 1,
            due_at: 0,
        };
        let body = serde_json::to_string(&delivery).map_err(|e| e.to_string())?;
        queue
            .send(&body, Duration::ZERO)
            .await
            .map_err(|e| e.to_string())?;
        tracing::info!(event = %event.id, webhook = %endpoint.id, "webhook event queued");
    }
    Ok(())
}
