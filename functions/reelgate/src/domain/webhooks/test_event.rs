//! "Send a test event": one `webhook.test` event POSTed now to one of the organization's
//! endpoints, answered with what the receiver did (the console's Webhooks page; docs/webhooks.md
//! "Test events").
//!
//! - **The same rules as a delivery.** Only the caller organization's own endpoint, by id
//!   (another organization's id reads as absent: 404 `webhook_not_found`). The POST goes
//!   through the guarded fetcher with its address rules (private, loopback, link-local and
//!   metadata addresses refused unless the operator allows them, the connection pinned to the
//!   checked address, no redirect followed), 3 s to connect and [`TEST_DEADLINE`] to the
//!   answer's status line; the answer's body is never read. The body is shaped like a video
//!   event's (`type`, `timestamp`, `data`) and signed like every delivery (`signed_headers`:
//!   the current secret, and the previous one during a rotation's grace).
//! - **Not a flood tool.** One test per endpoint every [`TEST_INTERVAL_SECS`]: a lease item in
//!   the store (`table_keys::webhook_test`, written only if absent, expiring with the interval),
//!   so the bound holds across processes and hosts (every Lambda instance, every worker); a
//!   test inside it is 429 `webhook_test_too_soon` with `Retry-After`. An organization has at
//!   most [`super::endpoints::MAX_ENDPOINTS`] endpoints, so it sends at most that many tests per interval.
//! - **Not a delivery.** Sent synchronously, never queued or retried, and nothing is recorded
//!   on the endpoint: its attempts, failures in a row, backoff and status stay as they were. A
//!   disabled endpoint can be tested (to see that its receiver works again).

use super::endpoints::{load, not_found};
use super::signing::signed_headers;
use crate::domain::dates::rfc3339;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::ids::new_id;
use crate::domain::Context;
use crate::ports::fetch::FetchError;
use crate::ports::store::{item, now_secs, Condition, ItemExt, StoreError, EXPIRES_AT};
use serde::Serialize;
use std::time::Duration;

/// The type of a test event.
pub const EVENT_TEST: &str = "webhook.test";
/// One test per endpoint this often at most.
pub const TEST_INTERVAL_SECS: i64 = 5;
/// How long a test waits for the receiver's status line (the guarded fetcher's own bound for a
/// POST, restated: the console's request waits no longer).
pub const TEST_DEADLINE: Duration = Duration::from_secs(10);

/// What the console says on the local server when an endpoint's URL is refused: how to let a
/// receiver on this machine be reached while developing. The rule itself is unchanged.
pub const LOCAL_RECEIVER_HINT: &str = "On this local server, to receive webhooks on this \
     machine while developing: stop `reelgate serve` and start it again with \
     REELGATE_FETCH_ALLOW=localhost,127.0.0.1 in its environment (the host names and addresses \
     to allow, comma-separated). Every other private address stays refused.";

/// The answer of a test event: the receiver's status, or why there is none, and how long it
/// took. `error_code` is one of `url_refused` (a refused address), `timeout`, `unreachable`
/// (connection refused, or the host not found or unreachable) and `bad_url`.
#[derive(Clone, Debug, Serialize, PartialEq, utoipa::ToSchema)]
#[schema(as = WebhookTestDelivery)]
pub struct TestDelivery {
    #[schema(value_type = String, pattern = "^webhook_test_delivery$")]
    pub object: &'static str,
    /// The endpoint the event was sent to.
    pub webhook_id: String,
    pub url: String,
    /// The event's `webhook-id` (`evt_…`), as the receiver got it.
    pub event_id: String,
    #[serde(rename = "type")]
    #[schema(value_type = String, pattern = "^webhook\\.test$")]
    pub event_type: &'static str,
    /// When it was sent (unix seconds), the `webhook-timestamp` the receiver got.
    pub sent_at: i64,
    /// The receiver answered 2xx.
    pub delivered: bool,
    /// The receiver's HTTP status, when it answered.
    pub status_code: Option<u16>,
    /// Why no status came back: `url_refused`, `timeout`, `unreachable` or `bad_url`.
    pub error_code: Option<String>,
    /// The same in plain words.
    pub error: Option<String>,
    /// From the start of the POST to the answer's status line (or the failure).
    pub duration_ms: u64,
    /// On the local server, for a refused URL: how to allow a receiver on this machine.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// The body of a test event: shaped like a video event (`type`, `timestamp`, `data`).
pub fn payload(webhook_id: &str, now: i64) -> String {
    serde_json::json!({
        "type": EVENT_TEST,
        "timestamp": rfc3339(now),
        "data": {
            "object": "webhook_test",
            "webhook_id": webhook_id,
            "message": "A test event sent from the reelgate console. It concerns no video.",
        },
    })
    .to_string()
}

/// The `error_code` and plain words of a POST that brought no status back.
pub fn failure(e: &FetchError) -> (&'static str, String) {
    match e {
        FetchError::Refused => (
            "url_refused",
            "Refused: the URL points to a private, loopback, link-local or metadata address, \
             which webhooks may not reach."
                .into(),
        ),
        FetchError::BadUrl => (
            "bad_url",
            "The URL is not an absolute http or https URL.".into(),
        ),
        FetchError::Timeout => (
            "timeout",
            format!(
                "Timed out: the receiver did not answer within {} seconds.",
                TEST_DEADLINE.as_secs()
            ),
        ),
        FetchError::Unreachable => (
            "unreachable",
            "Could not connect: the connection was refused, or the host could not be found or \
             reached."
                .into(),
        ),
        other => ("unreachable", format!("No answer: {other}.")),
    }
}

fn too_soon(wait_secs: i64) -> ApiError {
    ApiError::rate_limited(
        "webhook_test_too_soon",
        format!(
            "A test event was sent to this endpoint less than {TEST_INTERVAL_SECS} seconds ago; \
             send the next one in {wait_secs} s."
        ),
        Some(wait_secs as u64),
    )
}

/// Takes the endpoint's test lease for [`TEST_INTERVAL_SECS`], or answers 429 with the seconds
/// until it lapses.
async fn claim(cx: Context<'_>, org: &str, id: &str, now: i64) -> ApiResult<()> {
    let key = crate::domain::table_keys::webhook_test(org, id);
    let mut lease = item(&key);
    lease.insert("kind".into(), "webhook_test_lease".into());
    lease.insert(EXPIRES_AT.into(), (now + TEST_INTERVAL_SECS).into());
    match cx.store.put(lease, Some(Condition::NotExists)).await {
        Ok(()) => Ok(()),
        Err(StoreError::ConditionFailed) => {
            let until = cx
                .store
                .get(&key)
                .await?
                .and_then(|it| it.i64_attr(EXPIRES_AT))
                .unwrap_or(now + TEST_INTERVAL_SECS);
            Err(too_soon((until - now).clamp(1, TEST_INTERVAL_SECS)))
        }
        Err(e) => Err(e.into()),
    }
}

/// Sends one signed `webhook.test` event to `org`'s endpoint `id` now and answers what the
/// receiver did (see the module's comment for the rules).
pub async fn send(cx: Context<'_>, org: &str, id: &str) -> ApiResult<TestDelivery> {
    let endpoint = load(cx, org, id).await?;
    let url = endpoint
        .str_attr("url")
        .ok_or_else(|| not_found(id))?
        .to_owned();
    let now = now_secs();
    claim(cx, org, id, now).await?;
    let event_id = new_id("evt");
    let body = payload(id, now);
    let headers = signed_headers(&endpoint, &event_id, now, &body);
    let started = std::time::Instant::now();
    let answer = tokio::time::timeout(
        TEST_DEADLINE,
        cx.fetcher.post(&url, &headers, body.into_bytes()),
    )
    .await
    .unwrap_or(Err(FetchError::Timeout));
    let duration_ms = started.elapsed().as_millis() as u64;
    let (status_code, error_code, error) = match &answer {
        Ok(code) => (Some(*code), None, None),
        Err(e) => {
            let (code, words) = failure(e);
            (None, Some(code.to_owned()), Some(words))
        }
    };
    let delivered = status_code.is_some_and(|c| (200..300).contains(&c));
    tracing::info!(%org, webhook = %id, event = %event_id, ?status_code, ?error_code, duration_ms, "webhook test event sent");
    Ok(TestDelivery {
        object: "webhook_test_delivery",
        webhook_id: id.to_owned(),
        url,
        event_id,
        event_type: EVENT_TEST,
        sent_at: now,
        delivered,
        status_code,
        error_code,
        error,
        duration_ms,
        hint: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::store::{Item, Key};
    use base64::Engine as _;

    fn endpoint(secret: &str, previous: Option<(&str, i64)>) -> Item {
        let mut it = item(&Key::new("ORG#org_1", "WEBHOOK#wh_1"));
        it.insert("secret".into(), secret.into());
        if let Some((old, until)) = previous {
            it.insert("previous_secret".into(), old.into());
            it.insert("previous_secret_until".into(), until.into());
        }
        it
    }

    fn header<'a>(headers: &'a [(&'static str, String)], name: &str) -> &'a str {
        headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
            .expect(name)
    }

    #[test]
    fn a_test_event_is_shaped_like_a_video_event() {
        let body: serde_json::Value =
            serde_json::from_str(&payload("wh_1", 1_614_265_330)).expect("json");
        assert_eq!(body["type"], EVENT_TEST);
        assert_eq!(body["timestamp"], "2021-02-25T15:02:10Z");
        assert_eq!(body["data"]["object"], "webhook_test");
        assert_eq!(body["data"]["webhook_id"], "wh_1");
        assert_eq!(
            body.as_object().map(|o| o.len()),
            Some(3),
            "type, timestamp, data"
        );
    }

    #[test]
    fn a_test_event_is_signed_like_a_delivery_with_both_secrets_during_the_grace() {
        let (current, old) = (
            super::super::signing::new_signing_secret(),
            super::super::signing::new_signing_secret(),
        );
        let body = payload("wh_1", 100);
        let headers = signed_headers(&endpoint(&current, Some((&old, 200))), "evt_1", 100, &body);
        assert_eq!(header(&headers, "webhook-id"), "evt_1");
        assert_eq!(header(&headers, "webhook-timestamp"), "100");
        assert_eq!(header(&headers, "content-type"), "application/json");
        let sigs: Vec<&str> = header(&headers, "webhook-signature").split(' ').collect();
        let want =
            |s: &str| super::super::signing::sign(s, "evt_1", 100, body.as_bytes()).expect("sign");
        assert_eq!(sigs, [want(&current), want(&old)]);
        // After the grace only the current secret signs.
        let headers = signed_headers(&endpoint(&current, Some((&old, 100))), "evt_1", 100, &body);
        assert_eq!(header(&headers, "webhook-signature"), want(&current));
        // The signature is the Standard Webhooks one: HMAC-SHA256 of "id.timestamp.body".
        use hmac::{Hmac, Mac};
        let key = base64::engine::general_purpose::STANDARD
            .decode(current.trim_start_matches("whsec_"))
            .expect("key");
        let mut mac = Hmac::<sha2::Sha256>::new_from_slice(&key).expect("mac");
        mac.update(format!("evt_1.100.{body}").as_bytes());
        let expected =
            base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
        assert_eq!(want(&current), format!("v1,{expected}"));
    }

    #[test]
    fn failures_are_said_in_plain_words_with_a_stable_code() {
        let cases = [
            (FetchError::Refused, "url_refused", "private"),
            (FetchError::Timeout, "timeout", "10 seconds"),
            (
                FetchError::Unreachable,
                "unreachable",
                "connection was refused",
            ),
            (FetchError::BadUrl, "bad_url", "http or https"),
        ];
        for (e, code, words) in cases {
            let (c, w) = failure(&e);
            assert_eq!(c, code);
            assert!(w.contains(words), "{w}");
        }
    }

    #[test]
    fn too_soon_is_a_429_with_retry_after() {
        let e = too_soon(3);
        assert_eq!(e.code, "webhook_test_too_soon");
        assert_eq!(
            e.kind,
            crate::domain::error::ErrorKind::RateLimited {
                retry_after_secs: Some(3)
            }
        );
    }

    #[test]
    fn the_local_hint_names_the_setting_and_the_restart() {
        assert!(LOCAL_RECEIVER_HINT.contains("REELGATE_FETCH_ALLOW=localhost,127.0.0.1"));
        assert!(LOCAL_RECEIVER_HINT.contains("start it again"));
    }
}
