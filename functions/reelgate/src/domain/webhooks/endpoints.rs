//! An organization's webhook endpoints: the record (URL, events, secret, status, the last
//! attempts), the create rules, the cap, listing, deletion and secret rotation.

use super::signing::{new_signing_secret, ROTATION_GRACE_SECS};
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::ids::{is_valid, new_id};
use crate::domain::Context;
use crate::ports::fetch::FetchError;
use crate::ports::store::{
    item, now_secs, Attr, Condition, Item, ItemExt, Key, Query, TransactOp, Update,
};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The events an endpoint subscribes to (emitted by [`super::events::emit`]).
pub const EVENT_COMPLETED: &str = "video.completed";
pub const EVENT_FAILED: &str = "video.failed";
pub const EVENT_CANCELED: &str = "video.canceled";
pub const EVENTS: &[&str] = &[EVENT_COMPLETED, EVENT_FAILED, EVENT_CANCELED];

/// Endpoints one organization may register.
pub const MAX_ENDPOINTS: usize = 16;
/// Delivery attempts kept on an endpoint (newest first).
pub const ATTEMPTS_KEPT: usize = 10;
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

pub(super) fn attempts_of(it: &Item) -> Vec<Attempt> {
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

pub(super) fn not_found(id: &str) -> ApiError {
    ApiError::not_found(
        "webhook_not_found",
        format!("No webhook endpoint found with id '{id}'."),
    )
    .with_param("webhook_id")
}

// Typed at the edge: read by `domain::params::read_body` through its `RequestBody` impl.
/// `POST /v1/webhooks` (and the console's webhook create).
#[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"url": "https://example.com/hooks/reelgate", "events": ["video.completed"]}))]
pub struct WebhookCreateRequest {
    /// An https (or http) URL on a public address; private, loopback and link-local addresses
    /// are refused (`url_refused`).
    #[schema(min_length = 1)]
    pub url: String,
    /// Any of `video.completed`, `video.failed`, `video.canceled` (default: all three).
    #[serde(default)]
    pub events: Option<Vec<String>>,
    #[serde(default)]
    pub description: Option<String>,
}

impl crate::domain::params::RequestBody for WebhookCreateRequest {
    fn expected(param: &str, path: &str) -> Option<String> {
        Some(match param {
            "url" => url_expected(),
            "events" if path == "events" => events_expected(),
            "events" => events_named(),
            "description" => description_expected(),
            _ => return None,
        })
    }

    /// Duplicated event names count once; no `events` means all three.
    fn check(self) -> ApiResult<Self> {
        if self.url.is_empty() || self.url.chars().count() > MAX_URL_CHARS {
            return Err(ApiError::invalid("url", url_expected()));
        }
        let events = match self.events {
            None => EVENTS.iter().map(|e| (*e).to_owned()).collect(),
            Some(list) if list.is_empty() => {
                return Err(ApiError::invalid("events", events_expected()))
            }
            Some(list) => {
                let mut events: Vec<String> = Vec::new();
                for name in list {
                    if !EVENTS.contains(&name.as_str()) {
                        return Err(ApiError::invalid("events", events_named()));
                    }
                    if !events.contains(&name) {
                        events.push(name);
                    }
                }
                events
            }
        };
        if self
            .description
            .as_ref()
            .is_some_and(|d| d.chars().count() > MAX_DESCRIPTION_CHARS)
        {
            return Err(ApiError::invalid("description", description_expected()));
        }
        Ok(Self {
            events: Some(events),
            ..self
        })
    }
}

fn url_expected() -> String {
    format!("url must be an http or https URL of at most {MAX_URL_CHARS} characters.")
}

fn events_expected() -> String {
    format!("events must be a non-empty array of {}.", EVENTS.join(", "))
}

fn events_named() -> String {
    format!("events must name some of {}.", EVENTS.join(", "))
}

fn description_expected() -> String {
    format!("description must be a string of at most {MAX_DESCRIPTION_CHARS} characters.")
}

/// Registers an endpoint for `org`. The URL must be reachable under the guarded fetcher's
/// rules now (no private, loopback, link-local or metadata address unless the operator allows
/// it); every delivery checks it again.
pub async fn create(cx: Context<'_>, org: &str, new: WebhookCreateRequest) -> ApiResult<Endpoint> {
    let events = new
        .events
        .unwrap_or_else(|| EVENTS.iter().map(|e| (*e).to_owned()).collect());
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
        Attr::L(events.into_iter().map(Attr::S).collect()),
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

pub(super) async fn load(cx: Context<'_>, org: &str, id: &str) -> ApiResult<Item> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::params::read_body;

    fn refusal(body: &str) -> (Option<String>, String) {
        let e = read_body::<WebhookCreateRequest>(body.as_bytes()).expect_err(body);
        (e.param.clone(), e.message.clone())
    }

    #[test]
    fn a_create_body_is_refused_in_its_own_words_naming_the_parameter() {
        let url = "url must be an http or https URL of at most 2048 characters.";
        let events = "events must be a non-empty array of video.completed, video.failed, \
                      video.canceled.";
        let named = "events must name some of video.completed, video.failed, video.canceled.";
        let long_url = format!(r#"{{"url": "https://e.com/{}"}}"#, "a".repeat(2048));
        let long_text = format!(
            r#"{{"url": "https://e.com", "description": "{}"}}"#,
            "d".repeat(257)
        );
        for (body, param, message) in [
            (
                r#"["url"]"#,
                None,
                "The request body must be a JSON object.",
            ),
            (r#"{}"#, Some("url"), url),
            (r#"{"url": null}"#, Some("url"), url),
            (r#"{"url": 7}"#, Some("url"), url),
            (r#"{"url": ""}"#, Some("url"), url),
            (long_url.as_str(), Some("url"), url),
            (
                r#"{"url": "https://e.com", "colour": "red"}"#,
                Some("colour"),
                "Unknown parameter: colour.",
            ),
            (
                r#"{"url": "https://e.com", "events": "video.failed"}"#,
                Some("events"),
                events,
            ),
            (
                r#"{"url": "https://e.com", "events": []}"#,
                Some("events"),
                events,
            ),
            (
                r#"{"url": "https://e.com", "events": [3]}"#,
                Some("events"),
                named,
            ),
            (
                r#"{"url": "https://e.com", "events": ["video.started"]}"#,
                Some("events"),
                named,
            ),
            (
                r#"{"url": "https://e.com", "description": 5}"#,
                Some("description"),
                "description must be a string of at most 256 characters.",
            ),
            (
                long_text.as_str(),
                Some("description"),
                "description must be a string of at most 256 characters.",
            ),
        ] {
            assert_eq!(
                refusal(body),
                (param.map(str::to_owned), message.to_owned()),
                "{body}"
            );
        }
        let (param, message) = refusal(r#"{"url": "#);
        assert!(param.is_none() && message.starts_with("The request body is not valid JSON"));
    }

    #[test]
    fn a_create_body_defaults_to_every_event_and_counts_a_name_once() {
        let all = read_body::<WebhookCreateRequest>(br#"{"url": "https://e.com", "events": null}"#)
            .expect("read");
        assert_eq!(all.events.expect("events"), EVENTS);
        let one = read_body::<WebhookCreateRequest>(
            br#"{"url": "https://e.com", "events": ["video.failed", "video.failed"]}"#,
        )
        .expect("read");
        assert_eq!(one.events.expect("events"), ["video.failed"]);
    }
}
