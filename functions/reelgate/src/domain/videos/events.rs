//! A job's terminal webhook event (`video.completed`, `video.failed`, `video.canceled`): its
//! payload is the video object as `GET` returns it, its `webhook-id` derived from the job and
//! its outcome. Queued through `domain::webhooks::events`, which owns endpoints and delivery.

use crate::domain::dates::rfc3339;
use crate::domain::error::ApiResult;
use crate::domain::table_keys::UNSENT_PK;
use crate::domain::videos::object::Video;
use crate::domain::videos::record::{STATUS_CANCELED, STATUS_COMPLETED, STATUS_FAILED};
use crate::domain::webhooks::endpoints::{EVENT_CANCELED, EVENT_COMPLETED, EVENT_FAILED};
use crate::domain::webhooks::events::{self as webhook_events, Event};
use crate::domain::Context;
use crate::ports::store::now_secs;
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

/// Emits the terminal event of job `video_id` (call after the settlement that ended it): one
/// delivery per enabled endpoint of `org` subscribed to it. Never fails: without a webhook
/// queue nothing is sent, and a failure to read or enqueue is logged.
pub async fn emit(cx: Context<'_>, org: &str, video_id: &str) {
    webhook_events::emit(cx, org, video_id, || async move {
        let job = crate::domain::videos::record::load(cx.store, org, video_id)
            .await
            .map_err(|e| e.to_string())?;
        let Some(video) = job.as_ref().map(Video::of) else {
            return Ok(None);
        };
        let Some(event_type) = event_type(&video.status) else {
            return Ok(None);
        };
        let payload = serde_json::json!({
            "type": event_type,
            "timestamp": rfc3339(video.completed_at.unwrap_or_else(now_secs)),
            "data": video,
        })
        .to_string();
        Ok(Some(Event {
            id: event_id(video_id, event_type),
            event_type,
            payload,
        }))
    })
    .await;
}

/// The recovery pass of webhook events: emits the event of every job whose marker is at least
/// `grace` old (its settling process died before queueing it, or the queue refused). Returns how
/// many it emitted again. A host without a webhook queue does nothing.
pub async fn recover_unsent(cx: Context<'_>, grace: Duration) -> ApiResult<usize> {
    if !webhook_events::sending(cx) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_events_id_is_the_jobs_and_its_outcome() {
        assert_eq!(
            event_id("video_01ABC", EVENT_COMPLETED),
            "evt_01ABC_completed"
        );
        assert_eq!(event_type(STATUS_FAILED), Some(EVENT_FAILED));
        assert_eq!(event_type("in_progress"), None);
    }
}
