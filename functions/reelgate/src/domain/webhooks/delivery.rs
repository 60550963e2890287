//! Delivery: the webhook queue's consumer. Each attempt holds its endpoint's and its
//! organization's slots, POSTs the signed payload through the guarded fetcher, records the
//! attempt on the endpoint, and queues the next attempt (backing off) or disables the endpoint.

use super::endpoints::{
    attempts_of, endpoint_key, Attempt, ATTEMPTS_KEPT, MAX_ENDPOINTS, STATUS_DISABLED,
    STATUS_ENABLED,
};
use super::events::Delivery;
use super::signing::signed_headers;
use crate::domain::dates::rfc3339;
use crate::domain::ids::new_id;
use crate::domain::Context;
use crate::ports::fetch::FetchError;
use crate::ports::queue::MessageQueue;
use crate::ports::store::{
    item, now_secs, Attr, Condition, Item, ItemExt, Key, Query, TransactOp, Update,
};
use std::time::Duration;

/// The longest delay of one queue hop (SQS `DelaySeconds` stops at 900 s): a longer wait is
/// several hops.
pub const MAX_HOP: Duration = Duration::from_secs(900);
/// Deliveries to one endpoint in flight at once, across every worker and host.
pub const ENDPOINT_IN_FLIGHT: usize = 2;
/// Deliveries to one organization's endpoints in flight at once: a tenant with many slow
/// endpoints holds at most this many workers.
pub const ORG_IN_FLIGHT: usize = 4;
/// How long a delivery slot is held at most: longer than one POST may take (the guarded
/// fetcher's `POST_ANSWER_TIMEOUT`, 10 s) with room for the store writes around it; a worker
/// that dies mid-delivery frees its slots when the lease lapses.
pub const SLOT_LEASE_SECS: i64 = 30;
/// When the endpoint's or the organization's slots are all taken, the delivery waits this long
/// in the queue (not an attempt) and tries again.
pub const BUSY_WAIT: Duration = Duration::from_secs(5);
/// After `n` failed attempts in a row an endpoint gets no delivery for
/// `BACKOFF_BASE_SECS * 2^(n-1)` seconds, at most [`BACKOFF_MAX_SECS`]; a success ends it.
pub const BACKOFF_BASE_SECS: i64 = 1;
pub const BACKOFF_MAX_SECS: i64 = 900;

/// What one attempt got.
enum Outcome {
    Delivered(u16),
    Answered(u16),
    NoAnswer(FetchError),
}

/// Handles one webhook-queue message: attempts the delivery, records it on the endpoint, and
/// queues the next attempt or disables the endpoint. `Err` leaves the message to be received
/// again (the store or the queue failed).
pub async fn deliver(cx: Context<'_>, queue: &dyn MessageQueue, body: &str) -> Result<(), String> {
    let delivery: Delivery = match serde_json::from_str(body) {
        Ok(d) => d,
        Err(e) => {
            tracing::error!(error = %e, "webhook message is not understood; dropping it");
            return Ok(());
        }
    };
    let now = now_secs();
    if delivery.due_at > now {
        // A wait longer than one hop: another hop.
        let wait = Duration::from_secs((delivery.due_at - now) as u64).min(MAX_HOP);
        let body = serde_json::to_string(&delivery).map_err(|e| e.to_string())?;
        queue.send(&body, wait).await.map_err(|e| e.to_string())?;
        return Ok(());
    }
    let key = endpoint_key(&delivery.org, &delivery.endpoint_id);
    let Some(endpoint) = cx.store.get(&key).await.map_err(|e| e.to_string())? else {
        return Ok(()); // deleted since
    };
    if endpoint.str_attr("status") != Some(STATUS_ENABLED) {
        return Ok(());
    }
    // A failing endpoint backs off: its deliveries wait in the queue, unattempted.
    if let Some(until) = endpoint.i64_attr("backoff_until").filter(|t| *t > now) {
        return wait_in_queue(queue, delivery, until - now, until).await;
    }
    let Some(slots) = claim_slots(cx, &delivery.org, &delivery.endpoint_id, now).await? else {
        let wait = BUSY_WAIT.as_secs() as i64;
        return wait_in_queue(queue, delivery, wait, 0).await;
    };
    let result = attempt_delivery(cx, queue, delivery, &endpoint, now).await;
    release_slots(cx, &slots).await;
    result
}

/// Sends the delivery back to the queue, unattempted, for `wait` seconds (a due time past one
/// hop is kept in `due_at`).
async fn wait_in_queue(
    queue: &dyn MessageQueue,
    delivery: Delivery,
    wait: i64,
    due_at: i64,
) -> Result<(), String> {
    let wait = Duration::from_secs(wait.max(1) as u64).min(MAX_HOP);
    let body =
        serde_json::to_string(&Delivery { due_at, ..delivery }).map_err(|e| e.to_string())?;
    queue
        .send(&body, wait)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// The slot leases one delivery holds: one of its organization's, one of its endpoint's.
struct Slots {
    keys: [Key; 2],
    holder: String,
}

/// Claims a free organization slot and a free endpoint slot in one transaction (each written
/// only if absent or lapsed), or None when either kind is all taken.
async fn claim_slots(
    cx: Context<'_>,
    org: &str,
    endpoint_id: &str,
    now: i64,
) -> Result<Option<Slots>, String> {
    use crate::domain::table_keys::{org_pk, webhook_slot, WEBHOOK_SLOT_PREFIX};
    use crate::ports::store::StoreError;
    let holder = new_id("lease");
    for _ in 0..3 {
        // Lapsed leases read as absent.
        let held: std::collections::HashSet<String> = cx
            .store
            .query(
                Query::partition(org_pk(org))
                    .prefix(WEBHOOK_SLOT_PREFIX)
                    .limit(ORG_IN_FLIGHT + MAX_ENDPOINTS * ENDPOINT_IN_FLIGHT + 8),
            )
            .await
            .map_err(|e| e.to_string())?
            .items
            .iter()
            .filter_map(|it| it.str_attr(crate::ports::store::SK).map(str::to_owned))
            .collect();
        let free = |scope: &str, n: usize| {
            (0..n)
                .map(|i| webhook_slot(org, scope, i))
                .find(|k| !held.contains(&k.sk))
        };
        let (Some(org_slot), Some(endpoint_slot)) = (
            free("org", ORG_IN_FLIGHT),
            free(endpoint_id, ENDPOINT_IN_FLIGHT),
        ) else {
            return Ok(None);
        };
        let lease = |key: &Key| {
            let mut it = item(key);
            it.insert("kind".into(), "webhook_slot".into());
            it.insert("holder".into(), holder.clone().into());
            it.insert(
                crate::ports::store::EXPIRES_AT.into(),
                (now + SLOT_LEASE_SECS).into(),
            );
            TransactOp::Put {
                item: it,
                condition: Some(Condition::NotExists),
            }
        };
        match cx
            .store
            .transact(vec![lease(&org_slot), lease(&endpoint_slot)])
            .await
        {
            Ok(()) => {
                return Ok(Some(Slots {
                    keys: [org_slot, endpoint_slot],
                    holder,
                }))
            }
            // Another delivery took one of them first: look again.
            Err(StoreError::TransactionCanceled { .. } | StoreError::Unavailable(_)) => continue,
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(None)
}

/// Frees the slots, unless their lease lapsed and another delivery holds them now.
async fn release_slots(cx: Context<'_>, slots: &Slots) {
    for key in &slots.keys {
        let still_ours = Condition::Eq("holder".into(), Attr::S(slots.holder.clone()));
        match cx.store.delete(key, Some(still_ours)).await {
            Ok(_) | Err(crate::ports::store::StoreError::ConditionFailed) => {}
            // The lease lapses on its own.
            Err(e) => tracing::warn!(error = %e, "could not free a webhook delivery slot"),
        }
    }
}

/// One attempt of a delivery whose slots are held: POSTs, records the attempt, and queues the
/// next attempt or disables the endpoint.
async fn attempt_delivery(
    cx: Context<'_>,
    queue: &dyn MessageQueue,
    delivery: Delivery,
    endpoint: &Item,
    now: i64,
) -> Result<(), String> {
    let key = endpoint_key(&delivery.org, &delivery.endpoint_id);
    let url = endpoint.str_attr("url").unwrap_or_default().to_owned();
    let headers = signed_headers(endpoint, &delivery.event_id, now, &delivery.payload);
    let outcome = match cx
        .fetcher
        .post(&url, &headers, delivery.payload.clone().into_bytes())
        .await
    {
        Ok(code) if (200..300).contains(&code) => Outcome::Delivered(code),
        Ok(code) => Outcome::Answered(code),
        Err(e) => Outcome::NoAnswer(e),
    };
    let attempt = Attempt {
        event_id: delivery.event_id.clone(),
        event_type: delivery.event_type.clone(),
        attempt: delivery.attempt,
        attempted_at: now,
        succeeded: matches!(outcome, Outcome::Delivered(_)),
        status_code: match outcome {
            Outcome::Delivered(c) | Outcome::Answered(c) => Some(c),
            Outcome::NoAnswer(_) => None,
        },
        error: match &outcome {
            Outcome::NoAnswer(e) => Some(e.to_string()),
            _ => None,
        },
    };
    record(cx, &key, &attempt).await?;
    let what = match &outcome {
        Outcome::Delivered(_) => {
            tracing::info!(webhook = %delivery.endpoint_id, event = %delivery.event_id, attempt = delivery.attempt, "webhook delivered");
            return Ok(());
        }
        Outcome::Answered(code) => format!("HTTP {code}"),
        Outcome::NoAnswer(e) => e.to_string(),
    };
    tracing::warn!(webhook = %delivery.endpoint_id, event = %delivery.event_id, attempt = delivery.attempt, answer = %what, "webhook delivery failed");
    let waits = &cx.settings.webhook_retry_schedule;
    match waits.get((delivery.attempt as usize).saturating_sub(1)) {
        Some(wait) => {
            let next = Delivery {
                attempt: delivery.attempt + 1,
                due_at: now + wait.as_secs() as i64,
                ..delivery
            };
            let body = serde_json::to_string(&next).map_err(|e| e.to_string())?;
            queue
                .send(&body, (*wait).min(MAX_HOP))
                .await
                .map_err(|e| e.to_string())?;
        }
        None => {
            let reason = format!(
                "Disabled at {}: all {} delivery attempts of event {} ({}) failed; the last: {what}.",
                rfc3339(now),
                delivery.attempt,
                delivery.event_id,
                delivery.event_type,
            );
            let update = Update::new()
                .set("status", STATUS_DISABLED)
                .set("disabled_reason", reason)
                .set("disabled_at", now);
            match cx.store.update(&key, update, Some(Condition::Exists)).await {
                Ok(_) | Err(crate::ports::store::StoreError::ConditionFailed) => {}
                Err(e) => return Err(e.to_string()),
            }
            tracing::warn!(webhook = %delivery.endpoint_id, event = %delivery.event_id, "webhook endpoint disabled: it keeps failing");
        }
    }
    Ok(())
}

/// How long an endpoint gets no delivery after `failures` failed attempts in a row.
pub fn backoff_secs(failures: i64) -> i64 {
    let doublings = (failures - 1).clamp(0, 20) as u32;
    (BACKOFF_BASE_SECS << doublings).min(BACKOFF_MAX_SECS)
}

/// Adds `attempt` to the endpoint's record (a conditional read-modify-write, so concurrent
/// deliveries to one endpoint do not drop each other's attempts).
async fn record(cx: Context<'_>, key: &Key, attempt: &Attempt) -> Result<(), String> {
    for _ in 0..5 {
        let Some(current) = cx.store.get(key).await.map_err(|e| e.to_string())? else {
            return Ok(());
        };
        let before = current.str_attr("attempts_json").map(str::to_owned);
        let mut attempts = attempts_of(&current);
        attempts.insert(0, attempt.clone());
        attempts.truncate(ATTEMPTS_KEPT);
        let text = serde_json::to_string(&attempts).map_err(|e| e.to_string())?;
        let mut update = Update::new().set("attempts_json", text);
        update = if attempt.succeeded {
            update
                .set("consecutive_failures", 0i64)
                .set("last_success_at", attempt.attempted_at)
                .remove("backoff_until")
        } else {
            let failures = current.i64_attr("consecutive_failures").unwrap_or(0).max(0) + 1;
            update
                .add("consecutive_failures", rust_decimal::Decimal::ONE)
                .set(
                    "backoff_until",
                    attempt.attempted_at + backoff_secs(failures),
                )
        };
        let condition = match before {
            Some(b) => Condition::Eq("attempts_json".into(), Attr::S(b)),
            None => Condition::Exists.and(Condition::AttrNotExists("attempts_json".into())),
        };
        match cx.store.update(key, update, Some(condition)).await {
            Ok(_) => return Ok(()),
            Err(crate::ports::store::StoreError::ConditionFailed) => continue,
            Err(e) => return Err(e.to_string()),
        }
    }
    tracing::warn!("could not record a webhook attempt after 5 tries (busy endpoint)");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_endpoint_backs_off_doubling_up_to_fifteen_minutes() {
        let waits: Vec<i64> = (1..=12).map(backoff_secs).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 900, 900]);
        assert_eq!(backoff_secs(10_000), BACKOFF_MAX_SECS);
        assert_eq!(backoff_secs(0), 1);
    }
}
