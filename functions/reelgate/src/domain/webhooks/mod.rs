//! Webhooks: an organization's endpoints for `video.completed`, `video.failed` and
//! `video.canceled`, their events, and delivery (docs/webhooks.md).
//!
//! - **Endpoints** (`ORG#<org>` / `WEBHOOK#<id>`) hold the URL, the events, a secret
//!   (`whsec_` and base64, shown once; after a rotation the previous one keeps signing for a
//!   day), the status (`enabled`, or `disabled` with its reason) and the last delivery attempts.
//! - **Events** are emitted by the terminal transition of a job ([`emit`], called after the
//!   settlement that ended it): one queue message per subscribed endpoint, carrying the payload
//!   (`type`, `timestamp`, `data` = the video object as `GET` returns it) and the event's
//!   `webhook-id`, derived from the job and its terminal status so it is the same on every
//!   attempt. Emitting never fails the caller: a queue that cannot take the message is logged.
//! - **Nothing lost in a crash.** The settlement that ends a job writes an unsent-event marker
//!   (`UNSENT_EVENTS` / `VIDEO#<id>`, [`unsent_event_op`]) in its own transaction; [`emit`]
//!   deletes it once every message is queued. A process that dies in between leaves the marker,
//!   and the recovery pass ([`recover_unsent`], at start-up and on a schedule on both hosts)
//!   emits the event again: at least once, with the same `webhook-id`.
//! - **Delivery** ([`deliver`], the webhook queue's consumer) signs per Standard Webhooks and
//!   POSTs through the guarded fetcher (private addresses refused). A failed attempt is retried
//!   through the queue after the next wait of `Settings::webhook_retry_schedule` (hops of at most
//!   [`MAX_HOP`], SQS's longest delay); when the last attempt of an event fails the endpoint is
//!   disabled with the reason.
//! - **The cap** ([`MAX_ENDPOINTS`]) is a count (`WEBHOOK_COUNT`) changed in the transaction that
//!   writes or deletes an endpoint, so concurrent creates cannot pass it.
//! - **Fairness** (docs/security.md §12): an attempt holds one of its endpoint's
//!   [`ENDPOINT_IN_FLIGHT`] slots and one of its organization's [`ORG_IN_FLIGHT`] (leases in the
//!   store, so they hold across workers and hosts), the POST waits at most 10 s for its answer,
//!   and a failing endpoint backs off ([`backoff_secs`]); a delivery that must wait goes back to
//!   the queue without counting as an attempt.
//! - **Test events** ([`test_event`]): one signed `webhook.test` POSTed at once to one endpoint
//!   (the console's "Send test event"), answered with what the receiver did; not a delivery,
//!   nothing is recorded on the endpoint.

use crate::domain::error::{ApiError, ApiResult};
use crate::domain::ids::{is_valid, new_id};
use crate::domain::videos::object::Video;
use crate::domain::videos::record::{STATUS_CANCELED, STATUS_COMPLETED, STATUS_FAILED};
use crate::domain::Context;
use crate::ports::fetch::FetchError;
use crate::ports::queue::MessageQueue;
use crate::ports::store::{
    item, now_secs, Attr, Condition, Item, ItemExt, Key, Query, TransactOp, Update,
};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration;

pub mod test_event;

pub const EVENT_COMPLETED: &str = "video.completed";
pub const EVENT_FAILED: &str = "video.failed";
pub const EVENT_CANCELED: &str = "video.canceled";
pub const EVENTS: &[&str] = &[EVENT_COMPLETED, EVENT_FAILED, EVENT_CANCELED];

/// Endpoints one organization may register.
pub const MAX_ENDPOINTS: usize = 16;
/// Delivery attempts kept on an endpoint (newest first).
pub const ATTEMPTS_KEPT: usize = 10;
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
/// How long a rotated-out secret still signs deliveries beside the new one.
pub const ROTATION_GRACE_SECS: i64 = 24 * 3600;
pub const SECRET_PREFIX: &str = "whsec_";
const MAX_URL_CHARS: usize = 2048;
const MAX_DESCRIPTION_CHARS: usize = 256;
pub const STATUS_ENABLED: &str = "enabled";
pub const STATUS_DISABLED: &str = "disabled";

pub fn endpoint_key(org: &str, id: &str) -> Key {
    crate::domain::table_keys::webhook(org, id)
}

/// One delivery attempt as the endpoint records it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[schema(as = WebhookAttempt)]
pub struct Attempt {
    /// The event's `webhook-id`.
    pub event_id: String,
    #[serde(rename = "type")]
    pub event_type: String,
    /// 1 for the first attempt of this event.
    pub attempt: u32,
    pub attempted_at: i64,
    pub succeeded: bool,
    /// The endpoint's HTTP status, when it answered.
    pub status_code: Option<u16>,
    /// Why no status came back (refused, unreachable, timed out).
    pub error: Option<String>,
}

/// An endpoint as the API returns it. `secret` is present only in the answer that created or
/// rotated it.
#[derive(Clone, Debug, Serialize, PartialEq, utoipa::ToSchema)]
#[schema(as = WebhookEndpoint)]
pub struct Endpoint {
    pub id: String,
    #[schema(value_type = String, pattern = "^webhook_endpoint$")]
    pub object: &'static str,
    pub url: String,
    pub events: Vec<String>,
    pub description: Option<String>,
    pub status: String,
    pub disabled_reason: Option<String>,
    pub created_at: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    pub delivery: DeliveryRecord,
}

#[derive(Clone, Debug, Serialize, PartialEq, utoipa::ToSchema)]
#[schema(as = WebhookDeliveryRecord)]
pub struct DeliveryRecord {
    /// Failed attempts since the last success.
    pub consecutive_failures: u32,
    pub last_success_at: Option<i64>,
    /// The latest attempts, newest first.
    pub last_attempts: Vec<Attempt>,
}

fn attempts_of(it: &Item) -> Vec<Attempt> {
    it.str_attr("attempts_json")
        .and_then(|t| serde_json::from_str(t).ok())
        .unwrap_or_default()
}

impl Endpoint {
    fn from_item(it: &Item) -> Option<Endpoint> {
        let events = match it.get("events") {
            Some(Attr::L(v)) => v
                .iter()
                .filter_map(|a| a.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        };
        Some(Endpoint {
            id: it.str_attr("id")?.to_owned(),
            object: "webhook_endpoint",
            url: it.str_attr("url")?.to_owned(),
            events,
            description: it.str_attr("description").map(str::to_owned),
            status: it.str_attr("status").unwrap_or(STATUS_ENABLED).to_owned(),
            disabled_reason: it.str_attr("disabled_reason").map(str::to_owned),
            created_at: it.i64_attr("created_at").unwrap_or_default(),
            secret: None,
            delivery: DeliveryRecord {
                consecutive_failures: it.i64_attr("consecutive_failures").unwrap_or(0).max(0)
                    as u32,
                last_success_at: it.i64_attr("last_success_at"),
                last_attempts: attempts_of(it),
            },
        })
    }
}

/// A new secret: `whsec_` and the base64 of 32 random bytes (the Standard Webhooks form).
pub fn new_signing_secret() -> String {
    use rand::RngCore;
    let mut raw = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut raw);
    format!(
        "{SECRET_PREFIX}{}",
        base64::engine::general_purpose::STANDARD.encode(raw)
    )
}

/// The Standard Webhooks signature of one attempt: `v1,` and the base64 HMAC-SHA256, keyed by
/// the secret's decoded bytes, of `<webhook-id>.<webhook-timestamp>.<body>`. None for a
/// malformed secret.
pub fn sign(secret: &str, webhook_id: &str, timestamp: i64, body: &[u8]) -> Option<String> {
    use hmac::{Hmac, Mac};
    let key = base64::engine::general_purpose::STANDARD
        .decode(secret.strip_prefix(SECRET_PREFIX)?)
        .ok()?;
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(&key).ok()?;
    mac.update(format!("{webhook_id}.{timestamp}.").as_bytes());
    mac.update(body);
    Some(format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    ))
}

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

/// `2026-11-23T18:30:00Z` for unix seconds (UTC, no leap seconds, as RFC 3339 wants).
pub fn rfc3339(secs: i64) -> String {
    let rem = secs.rem_euclid(86_400);
    format!(
        "{}T{:02}:{:02}:{:02}Z",
        crate::domain::billing::usage_report::day_label(secs),
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

fn not_found(id: &str) -> ApiError {
    ApiError::not_found(
        "webhook_not_found",
        format!("No webhook endpoint found with id '{id}'."),
    )
    .with_param("webhook_id")
}

// The create body's one type: what `parse` returns and the OpenAPI document's schema.
/// `POST /v1/webhooks` (and the console's webhook create).
#[derive(utoipa::ToSchema)]
#[schema(example = json!({"url": "https://example.com/hooks/reelgate", "events": ["video.completed"]}))]
pub struct WebhookCreateRequest {
    /// An https (or http) URL on a public address; private, loopback and link-local addresses
    /// are refused (`url_refused`).
    #[schema(min_length = 1)]
    pub url: String,
    /// Any of `video.completed`, `video.failed`, `video.canceled` (default: all three).
    #[schema(value_type = Option<Vec<String>>)]
    pub events: Vec<String>,
    pub description: Option<String>,
}

/// Reads a create body, naming the parameter at fault.
pub fn parse(body: &Value) -> ApiResult<WebhookCreateRequest> {
    let obj = body
        .as_object()
        .ok_or_else(|| ApiError::bad_request("The request body must be a JSON object."))?;
    if let Some(unknown) = obj
        .keys()
        .find(|k| !["url", "events", "description"].contains(&k.as_str()))
    {
        return Err(ApiError::invalid(
            unknown,
            format!("Unknown parameter: {unknown}."),
        ));
    }
    let url = match obj.get("url") {
        Some(Value::String(u)) if !u.is_empty() && u.chars().count() <= MAX_URL_CHARS => u.clone(),
        _ => {
            return Err(ApiError::invalid(
                "url",
                format!("url must be an http or https URL of at most {MAX_URL_CHARS} characters."),
            ))
        }
    };
    let events = match obj.get("events") {
        None | Some(Value::Null) => EVENTS.iter().map(|e| (*e).to_owned()).collect(),
        Some(Value::Array(list)) if !list.is_empty() => {
            let mut events: Vec<String> = Vec::new();
            for e in list {
                match e.as_str() {
                    Some(name) if EVENTS.contains(&name) => {
                        if !events.iter().any(|x| x == name) {
                            events.push(name.to_owned());
                        }
                    }
                    _ => {
                        return Err(ApiError::invalid(
                            "events",
                            format!("events must name some of {}.", EVENTS.join(", ")),
                        ))
                    }
                }
            }
            events
        }
        Some(_) => {
            return Err(ApiError::invalid(
                "events",
                format!("events must be a non-empty array of {}.", EVENTS.join(", ")),
            ))
        }
    };
    let description = match obj.get("description") {
        None | Some(Value::Null) => None,
        Some(Value::String(d)) if d.chars().count() <= MAX_DESCRIPTION_CHARS => Some(d.clone()),
        Some(_) => {
            return Err(ApiError::invalid(
                "description",
                format!(
                    "description must be a string of at most {MAX_DESCRIPTION_CHARS} characters."
                ),
            ))
        }
    };
    Ok(WebhookCreateRequest {
        url,
        events,
        description,
    })
}

/// Registers an endpoint for `org`. The URL must be reachable under the guarded fetcher's
/// rules now (no private, loopback, link-local or metadata address unless the operator allows
/// it); every delivery checks it again.
pub async fn create(cx: Context<'_>, org: &str, body: &Value) -> ApiResult<Endpoint> {
    let new = parse(body)?;
    if let Err(e) = cx.fetcher.check(&new.url).await {
        // The codes of docs/errors.md for a URL the service will not reach.
        let code = match e {
            FetchError::Refused | FetchError::BadUrl => "url_refused",
            _ => "url_unreachable",
        };
        return Err(ApiError::new(
            crate::domain::error::ErrorKind::InvalidRequest,
            code,
            format!("url: {e}."),
        )
        .with_param("url"));
    }
    let id = new_id("wh");
    let secret = new_signing_secret();
    let now = now_secs();
    let mut it = item(&endpoint_key(org, &id));
    it.insert("kind".into(), "webhook_endpoint".into());
    it.insert("id".into(), id.clone().into());
    it.insert("url".into(), new.url.clone().into());
    it.insert(
        "events".into(),
        Attr::L(new.events.iter().map(|e| Attr::S(e.clone())).collect()),
    );
    if let Some(d) = &new.description {
        it.insert("description".into(), d.clone().into());
    }
    it.insert("status".into(), STATUS_ENABLED.into());
    it.insert("secret".into(), secret.clone().into());
    it.insert("created_at".into(), now.into());
    it.insert("consecutive_failures".into(), 0i64.into());
    put_counted(cx, org, it.clone()).await?;
    let mut endpoint = Endpoint::from_item(&it)
        .ok_or_else(|| ApiError::internal("creating a webhook endpoint", "unreadable item"))?;
    endpoint.secret = Some(secret);
    tracing::info!(%org, webhook = %id, "webhook endpoint created");
    Ok(endpoint)
}

/// Tries of a counted create or delete: a transaction that lost a race with another write of
/// the count (DynamoDB's `TransactionConflict`, which the adapter reports as unavailable) is
/// tried again after a short random pause.
const COUNT_TRIES: usize = 25;

fn cap_reached() -> ApiError {
    ApiError::invalid(
        "url",
        format!("An organization can register at most {MAX_ENDPOINTS} webhook endpoints; delete one first."),
    )
}

async fn count_pause() {
    use rand::Rng;
    let ms = rand::thread_rng().gen_range(5..50);
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

/// Writes a new endpoint and raises the organization's count in one transaction whose condition
/// is "the count is below the cap": concurrent creates cannot both take the last place. An
/// organization whose endpoints predate the count gets one first, set to what it has.
async fn put_counted(cx: Context<'_>, org: &str, endpoint: Item) -> ApiResult<()> {
    use crate::ports::store::StoreError;
    let count_key = crate::domain::table_keys::webhook_count(org);
    for _ in 0..COUNT_TRIES {
        if cx.store.get(&count_key).await?.is_none() {
            let existing = cx
                .store
                .query(
                    Query::partition(crate::domain::table_keys::org_pk(org))
                        .prefix(crate::domain::table_keys::WEBHOOK_PREFIX)
                        .limit(MAX_ENDPOINTS * 2),
                )
                .await?;
            let mut count = item(&count_key);
            count.insert("kind".into(), "webhook_endpoint_count".into());
            count.insert("count".into(), (existing.items.len() as i64).into());
            match cx.store.put(count, Some(Condition::NotExists)).await {
                Ok(()) | Err(StoreError::ConditionFailed) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        let ops = vec![
            TransactOp::Update {
                key: count_key.clone(),
                update: Update::new().add("count", rust_decimal::Decimal::ONE),
                condition: Some(Condition::Lt(
                    "count".into(),
                    Attr::from(MAX_ENDPOINTS as i64),
                )),
            },
            TransactOp::Put {
                item: endpoint.clone(),
                condition: Some(Condition::NotExists),
            },
        ];
        match cx.store.transact(ops).await {
            Ok(()) => return Ok(()),
            Err(e) if e.failed_at(0) => return Err(cap_reached()),
            Err(StoreError::TransactionCanceled { .. } | StoreError::Unavailable(_)) => {
                count_pause().await
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(ApiError::internal(
        "creating a webhook endpoint",
        "the endpoint count stayed contended",
    ))
}

/// The organization's endpoints, oldest first.
pub async fn list(cx: Context<'_>, org: &str) -> ApiResult<Vec<Endpoint>> {
    let page = cx
        .store
        .query(
            Query::partition(crate::domain::table_keys::org_pk(org))
                .prefix(crate::domain::table_keys::WEBHOOK_PREFIX)
                .limit(MAX_ENDPOINTS * 2),
        )
        .await?;
    Ok(page.items.iter().filter_map(Endpoint::from_item).collect())
}

async fn load(cx: Context<'_>, org: &str, id: &str) -> ApiResult<Item> {
    if !is_valid(id, "wh") {
        return Err(not_found(id));
    }
    cx.store
        .get(&endpoint_key(org, id))
        .await?
        .ok_or_else(|| not_found(id))
}

pub async fn get(cx: Context<'_>, org: &str, id: &str) -> ApiResult<Endpoint> {
    Endpoint::from_item(&load(cx, org, id).await?).ok_or_else(|| not_found(id))
}

/// Deletes the endpoint and lowers the organization's count in one transaction.
pub async fn delete(cx: Context<'_>, org: &str, id: &str) -> ApiResult<()> {
    use crate::ports::store::StoreError;
    load(cx, org, id).await?;
    let count_key = crate::domain::table_keys::webhook_count(org);
    for _ in 0..COUNT_TRIES {
        // Without a count (endpoints that predate it) the delete requires it still absent: a
        // create that sets it up meanwhile counted this endpoint, so the delete must lower it.
        let count_op = match cx.store.get(&count_key).await? {
            Some(_) => TransactOp::Update {
                key: count_key.clone(),
                update: Update::new().add("count", -rust_decimal::Decimal::ONE),
                condition: Some(Condition::Gt("count".into(), Attr::from(0i64))),
            },
            None => TransactOp::ConditionCheck {
                key: count_key.clone(),
                condition: Condition::NotExists,
            },
        };
        let ops = vec![
            TransactOp::Delete {
                key: endpoint_key(org, id),
                condition: Some(Condition::Exists),
            },
            count_op,
        ];
        match cx.store.transact(ops).await {
            Ok(()) => {
                tracing::info!(%org, webhook = %id, "webhook endpoint deleted");
                return Ok(());
            }
            Err(e) if e.failed_at(0) => return Err(not_found(id)),
            Err(StoreError::TransactionCanceled { .. } | StoreError::Unavailable(_)) => {
                count_pause().await
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(ApiError::internal(
        "deleting a webhook endpoint",
        "the endpoint count stayed contended",
    ))
}

/// A new secret for the endpoint, returned once. The previous one keeps signing (a second
/// `v1,` signature) for [`ROTATION_GRACE_SECS`], so receivers can switch without losing events.
pub async fn rotate_secret(cx: Context<'_>, org: &str, id: &str) -> ApiResult<Endpoint> {
    let current = load(cx, org, id).await?;
    let secret = new_signing_secret();
    let mut update = Update::new()
        .set("secret", secret.clone())
        .set("previous_secret_until", now_secs() + ROTATION_GRACE_SECS);
    if let Some(old) = current.str_attr("secret") {
        update = update.set("previous_secret", old.to_owned());
    }
    let updated = cx
        .store
        .update(&endpoint_key(org, id), update, Some(Condition::Exists))
        .await
        .map_err(|e| match e {
            crate::ports::store::StoreError::ConditionFailed => not_found(id),
            other => other.into(),
        })?;
    let mut endpoint = Endpoint::from_item(&updated).ok_or_else(|| not_found(id))?;
    endpoint.secret = Some(secret);
    tracing::info!(%org, webhook = %id, "webhook secret rotated");
    Ok(endpoint)
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

/// The headers of one POST of `payload` to `endpoint` at `now` (a delivery attempt or a test
/// event): Standard Webhooks' `webhook-id`, `webhook-timestamp` and `webhook-signature`, signed
/// with the current secret and, during a rotation's grace, the previous one too.
fn signed_headers(
    endpoint: &Item,
    event_id: &str,
    now: i64,
    payload: &str,
) -> [(&'static str, String); 5] {
    let mut signatures = Vec::new();
    if let Some(s) = endpoint.str_attr("secret") {
        signatures.extend(sign(s, event_id, now, payload.as_bytes()));
    }
    if let (Some(s), Some(until)) = (
        endpoint.str_attr("previous_secret"),
        endpoint.i64_attr("previous_secret_until"),
    ) {
        if until > now {
            signatures.extend(sign(s, event_id, now, payload.as_bytes()));
        }
    }
    [
        ("content-type", "application/json".to_owned()),
        ("user-agent", "reelgate-webhooks/1".to_owned()),
        ("webhook-id", event_id.to_owned()),
        ("webhook-timestamp", now.to_string()),
        ("webhook-signature", signatures.join(" ")),
    ]
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
    fn signs_like_the_standard_webhooks_reference() {
        // The example of the Standard Webhooks specification.
        let sig = sign(
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1614265330,
            br#"{"test": 2432232314}"#,
        );
        assert_eq!(
            sig.as_deref(),
            Some("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        );
        assert!(sign("not-a-secret", "m", 1, b"x").is_none());
    }

    #[test]
    fn a_failing_endpoint_backs_off_doubling_up_to_fifteen_minutes() {
        let waits: Vec<i64> = (1..=12).map(backoff_secs).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 900, 900]);
        assert_eq!(backoff_secs(10_000), BACKOFF_MAX_SECS);
        assert_eq!(backoff_secs(0), 1);
    }

    #[test]
    fn timestamps_and_ids() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_614_265_330), "2021-02-25T15:02:10Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(
            event_id("video_01ABC", EVENT_COMPLETED),
            "evt_01ABC_completed"
        );
        let secret = new_signing_secret();
        assert!(secret.starts_with(SECRET_PREFIX));
        assert_eq!(
            base64::engine::general_purpose::STANDARD
                .decode(&secret[SECRET_PREFIX.len()..])
                .expect("base64")
                .len(),
            32
        );
    }
}
