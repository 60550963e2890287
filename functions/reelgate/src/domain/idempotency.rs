//! `Idempotency-Key` on the creating requests (`POST /v1/videos`, `/v1/files`, `/v1/uploads`).
//!
//! The first request with a key claims it: a record `ORG#<org>` / `IDEMPOTENCY#<route>#<sha-256
//! of the key>` put with `NotExists`, holding a fingerprint of the request. A retry with the same
//! key and the same request gets the first request's result back and admits nothing; a retry
//! while the first is still running waits for it (so two racing requests admit once); the same
//! key with a different request is refused (`idempotency_key_reused`). Keys belong to the
//! caller that sent them ([`scope_of`]: the API key, or for a console session its person): a
//! teammate who sends the same key string with another API key makes an independent request and
//! never sees the first caller's answer. The record lives in the organization's partition (so
//! erasing the organization erases it); its sort key digests the scope with the key. Keys expire
//! after `Settings::idempotency_ttl`, and a request that failed releases its key so that it can
//! be retried.
//!
//! A video admission binds the claim in its own transaction (`bind_op`), so even when the
//! process dies before it could record its answer, a retry finds the job it admitted instead of
//! admitting another.

use crate::domain::error::{ApiError, ApiResult};
use crate::domain::Context;
use crate::ports::store::{
    item, now_secs, Attr, Condition, ItemExt, Key, StoreError, TransactOp, Update,
};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::time::Duration;

pub const HEADER: &str = "idempotency-key";
pub const MAX_KEY_CHARS: usize = 255;
/// A claim still pending after this long belongs to a request whose process died; a retry may
/// take it over.
pub const LEASE_SECS: i64 = 120;
/// How long a retry waits for the first request with its key to finish.
const WAIT: Duration = Duration::from_secs(60);
const POLL: Duration = Duration::from_millis(50);

const PENDING: &str = "pending";
const DONE: &str = "done";

/// The request's key (the value of its [`HEADER`], if it sent one); refuses an empty,
/// over-long or non-ASCII key.
pub fn key_from(header: Option<&[u8]>) -> ApiResult<Option<String>> {
    let Some(value) = header else {
        return Ok(None);
    };
    let text = std::str::from_utf8(value)
        .ok()
        .map(str::trim)
        .filter(|k| {
            !k.is_empty() && k.len() <= MAX_KEY_CHARS && k.chars().all(|c| c.is_ascii_graphic())
        })
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "The Idempotency-Key header must be 1 to {MAX_KEY_CHARS} visible ASCII characters."
            ))
        })?;
    Ok(Some(text.to_owned()))
}

/// A digest of what makes two requests "the same": each part length-prefixed, so parts cannot
/// run into each other.
#[derive(Clone, Default)]
pub struct Fingerprint(Sha256);

impl Fingerprint {
    pub fn new(route: &str) -> Self {
        let mut f = Fingerprint(Sha256::new());
        f.part(route.as_bytes());
        f
    }
    pub fn part(&mut self, bytes: &[u8]) -> &mut Self {
        self.0.update((bytes.len() as u64).to_be_bytes());
        self.0.update(bytes);
        self
    }
    /// Bytes fed in pieces (a streamed file); call [`Fingerprint::end_stream`] after the last.
    pub fn stream(&mut self, chunk: &[u8]) {
        self.0.update(chunk);
    }
    pub fn end_stream(&mut self, total: u64) {
        self.0.update(total.to_be_bytes());
    }
    /// A typed body, as its canonical JSON (object keys sorted), so that two requests that
    /// read the same are the same whatever order their keys were sent in.
    pub fn json<T: serde::Serialize>(&mut self, body: &T) -> ApiResult<&mut Self> {
        let value = serde_json::to_value(body)
            .map_err(|e| ApiError::internal("fingerprinting a request", e))?;
        let text = canonical(&value).to_string();
        Ok(self.part(text.as_bytes()))
    }
    pub fn finish(self) -> String {
        hex::encode(self.0.finalize())
    }
}

fn canonical(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), canonical(&m[k])))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// A key this request holds until it [`finish`]es or [`release`]s it.
#[derive(Debug, Clone)]
pub struct Claim {
    key: Key,
    started_at: i64,
}

impl Claim {
    /// The op a video admission adds to its transaction: records the admitted job on the claim
    /// (only while this request still holds it).
    pub fn bind_op(&self, resource_id: &str) -> TransactOp {
        TransactOp::Update {
            key: self.key.clone(),
            update: Update::new().set("resource", resource_id),
            condition: Some(
                Condition::Eq("state".into(), PENDING.into()).and(Condition::Eq(
                    "started_at".into(),
                    Attr::from(self.started_at),
                )),
            ),
        }
    }
}

/// What a request with a key does.
#[derive(Debug)]
/// The answer of a request that may carry an Idempotency-Key: made by this request, or the first
/// request's answer, replayed as it was recorded (the recorded JSON, not reread as a type: a
/// retry answers what the first request answered, byte for byte in meaning, even across a
/// release that added fields).
pub enum Answered<T> {
    Now(T),
    Replayed(Value),
}

pub enum Begin {
    /// Go ahead (holding the claim, if a key was sent).
    Proceed(Option<Claim>),
    /// Answer the first request's result, recorded as it was sent.
    Replay(Value),
    /// The first request admitted this resource but died before recording its answer: answer
    /// the resource as it is now.
    Resource(String),
}

/// Whose keys a request's key is among: its API key, or the person of a console session (the
/// console is one person's client, whichever browser session they use).
pub fn scope_of(caller: &crate::domain::accounts::Caller) -> String {
    match &caller.credential {
        crate::domain::accounts::Credential::ApiKey { key_id } => format!("key:{key_id}"),
        crate::domain::accounts::Credential::ConsoleSession { .. } => {
            format!("person:{}", caller.person)
        }
    }
}

fn record_key(org: &str, route: &str, scope: &str, key: &str) -> Key {
    // Length-prefixed parts, so no (scope, key) pair can collide with another.
    let mut h = Sha256::new();
    for part in [scope, key] {
        h.update((part.len() as u64).to_be_bytes());
        h.update(part.as_bytes());
    }
    crate::domain::table_keys::idempotency(org, route, &hex::encode(h.finalize()))
}

fn reused() -> ApiError {
    ApiError::new(
        crate::domain::error::ErrorKind::InvalidRequest,
        "idempotency_key_reused",
        "This Idempotency-Key was already used with a different request. Use a new key for a new request.",
    )
}

/// Claims `key` for this caller's request, or finds the result of the caller's first request
/// that used it.
pub async fn begin(
    cx: Context<'_>,
    caller: &crate::domain::accounts::Caller,
    route: &str,
    key: Option<&str>,
    fingerprint: &str,
) -> ApiResult<Begin> {
    let Some(key) = key else {
        return Ok(Begin::Proceed(None));
    };
    let record = record_key(&caller.org, route, &scope_of(caller), key);
    let ttl = cx.settings.idempotency_ttl.as_secs() as i64;
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let now = now_secs();
        let mut fresh = item(&record);
        fresh.insert("kind".into(), "idempotency_key".into());
        fresh.insert("route".into(), route.into());
        fresh.insert("fingerprint".into(), fingerprint.into());
        fresh.insert("state".into(), PENDING.into());
        fresh.insert("started_at".into(), now.into());
        fresh.insert(crate::ports::store::EXPIRES_AT.into(), (now + ttl).into());
        match cx.store.put(fresh, Some(Condition::NotExists)).await {
            Ok(()) => {
                return Ok(Begin::Proceed(Some(Claim {
                    key: record,
                    started_at: now,
                })))
            }
            Err(StoreError::ConditionFailed) => {}
            Err(e) => return Err(e.into()),
        }
        let Some(existing) = cx.store.get(&record).await? else {
            continue; // expired or released meanwhile: claim it afresh
        };
        if existing.str_attr("fingerprint") != Some(fingerprint) {
            return Err(reused());
        }
        if existing.str_attr("state") == Some(DONE) {
            let body = existing.str_attr("response").unwrap_or("null");
            let value = serde_json::from_str(body)
                .map_err(|e| ApiError::internal("reading an idempotency record", e))?;
            return Ok(Begin::Replay(value));
        }
        let started = existing.i64_attr("started_at").unwrap_or(0);
        if started + LEASE_SECS < now {
            // Its request died holding the claim.
            if let Some(resource) = existing.str_attr("resource") {
                return Ok(Begin::Resource(resource.to_owned()));
            }
            let take = Update::new()
                .set("started_at", now)
                .set(crate::ports::store::EXPIRES_AT, now + ttl);
            match cx
                .store
                .update(
                    &record,
                    take,
                    Some(
                        Condition::Eq("state".into(), PENDING.into())
                            .and(Condition::Eq("started_at".into(), Attr::from(started))),
                    ),
                )
                .await
            {
                Ok(_) => {
                    return Ok(Begin::Proceed(Some(Claim {
                        key: record,
                        started_at: now,
                    })))
                }
                Err(StoreError::ConditionFailed) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(ApiError::new(
                crate::domain::error::ErrorKind::Conflict,
                "idempotency_key_in_use",
                "A request with this Idempotency-Key is still being processed. Retry it later.",
            ));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Records the answer of the request holding `claim`, for its retries.
pub async fn finish<T: serde::Serialize>(
    cx: Context<'_>,
    claim: Option<Claim>,
    response: &T,
) -> ApiResult<()> {
    let Some(claim) = claim else {
        return Ok(());
    };
    let recorded = serde_json::to_string(response)
        .map_err(|e| ApiError::internal("recording an idempotent answer", e))?;
    let update = Update::new().set("state", DONE).set("response", recorded);
    match cx
        .store
        .update(
            &claim.key,
            update,
            Some(Condition::Eq(
                "started_at".into(),
                Attr::from(claim.started_at),
            )),
        )
        .await
    {
        Ok(_) | Err(StoreError::ConditionFailed) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Gives the key back after the request failed, so that a retry runs it again.
pub async fn release(cx: Context<'_>, claim: Option<Claim>) {
    let Some(claim) = claim else {
        return;
    };
    let still_ours = Condition::Eq("state".into(), PENDING.into())
        .and(Condition::Eq(
            "started_at".into(),
            Attr::from(claim.started_at),
        ))
        .and(Condition::AttrNotExists("resource".into()));
    if let Err(e) = cx.store.delete(&claim.key, Some(still_ours)).await {
        if !matches!(e, StoreError::ConditionFailed) {
            tracing::warn!(error = %e, "could not release an idempotency key");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_key_string_of_two_callers_is_two_records() {
        let a = record_key("org_1", "uploads", "key:key_a", "k-1");
        let b = record_key("org_1", "uploads", "key:key_b", "k-1");
        let c = record_key("org_1", "uploads", "person:user_a", "k-1");
        assert_ne!(a, b);
        assert_ne!(a, c);
        assert_eq!(a, record_key("org_1", "uploads", "key:key_a", "k-1"));
        // The parts are length-prefixed: moving a character between scope and key changes it.
        assert_ne!(
            record_key("org_1", "uploads", "key:ab", "c"),
            record_key("org_1", "uploads", "key:a", "bc")
        );
    }
}
