//! Stored responses and their items, private to one person within one organization.
//!
//! Layout (partition `ORG#<org>#PERSON#<person>`, so no query by another person or organization
//! can reach them):
//! - `RESPONSE#<id>`: the response object, the input items of its request (already resolved, with
//!   ids), the ids of the items it created, and `previous_response_id` (the conversation is a chain
//!   walked back from the newest response).
//! - `ITEM#<id>`: every input and output item it created, so `item_reference` can resolve them.
//!
//! Every record carries `expires_at` ([`RETENTION_SECS`], 30 days). A record's JSON above
//! [`INLINE_LIMIT`] bytes (inline images, file data) is kept in the blob store instead, because a
//! DynamoDB item holds at most 400 KB.

use super::items::ConversationItem;
use crate::domain::accounts::Caller;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::Context;
use crate::ports::store::{item, now_secs, Item, ItemExt, Key, EXPIRES_AT};
use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Stored responses and items expire 30 days after creation, like OpenAI's stored responses.
pub const RETENTION_SECS: i64 = crate::domain::retention::RETENTION_SECS;
/// JSON bodies up to this size are kept in the item itself.
const INLINE_LIMIT: usize = 300 * 1024;
/// How many responses back a conversation is followed; older turns are dropped.
pub const MAX_CHAIN: usize = 1000;

fn response_key(caller: &Caller, id: &str) -> Key {
    crate::domain::table_keys::response(&caller.org, &caller.person, id)
}

fn item_key(caller: &Caller, id: &str) -> Key {
    crate::domain::table_keys::response_item(&caller.org, &caller.person, id)
}

fn blob_key(caller: &Caller, kind: &str, id: &str) -> String {
    format!(
        "{}/responses/{}/{kind}/{id}.json",
        caller.org, caller.person
    )
}

/// A stored response as the handlers use it, and as its record's body is written.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Stored {
    /// The response object as it was answered (`GET /v1/responses/{id}` shows it again).
    #[serde(default)]
    pub response: Value,
    /// The request's input items, resolved and with ids.
    #[serde(default)]
    pub input_items: Vec<ConversationItem>,
    /// Items this response created (its own inputs and outputs; not referenced ones).
    #[serde(default)]
    pub own_item_ids: Vec<String>,
    #[serde(default)]
    pub previous_response_id: Option<String>,
}

impl Stored {
    /// The response's output items as conversation items: the assistant's messages and its
    /// function calls.
    pub fn output_items(&self) -> ApiResult<Vec<ConversationItem>> {
        match self.response.get("output") {
            Some(output) => Vec::<ConversationItem>::deserialize(output)
                .map_err(|e| ApiError::internal("reading a stored response's output", e)),
            None => Ok(Vec::new()),
        }
    }

    /// The conversation items this response contributes: its inputs, then its outputs.
    pub fn turn_items(&self) -> ApiResult<Vec<ConversationItem>> {
        let mut items = self.input_items.clone();
        items.extend(self.output_items()?);
        Ok(items)
    }
}

async fn put_json(
    cx: Context<'_>,
    key: Key,
    blob: String,
    body: &impl Serialize,
    extra: Item,
) -> ApiResult<()> {
    let text =
        serde_json::to_string(body).map_err(|e| ApiError::internal("encoding a response", e))?;
    let mut it = item(&key);
    it.extend(extra);
    it.insert(EXPIRES_AT.into(), (now_secs() + RETENTION_SECS).into());
    if text.len() > INLINE_LIMIT {
        cx.blobs
            .put_bytes(&blob, "application/json", Bytes::from(text))
            .await?;
        it.insert("body_blob".into(), blob.into());
    } else {
        it.insert("body".into(), text.into());
    }
    cx.store.put(it, None).await?;
    Ok(())
}

/// Largest stored response body read back (a request is at most 32 MiB of JSON; its output and
/// stored items stay well inside this).
pub const MAX_STORED_BYTES: u64 = 64 * 1024 * 1024;

async fn read_json<T: DeserializeOwned>(cx: Context<'_>, it: &Item) -> ApiResult<Option<T>> {
    let text = if let Some(text) = it.str_attr("body") {
        text.to_owned()
    } else if let Some(blob) = it.str_attr("body_blob") {
        match crate::ports::blobs::read_limited(cx.blobs, blob, MAX_STORED_BYTES).await {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            // The blob expired or was removed with its record: the record is gone too.
            Err(crate::ports::blobs::BlobError::NotFound) => return Ok(None),
            Err(e) => return Err(e.into()),
        }
    } else {
        return Ok(None);
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| ApiError::internal("reading a stored response", e))
}

/// Stores a response: its items first, then the response, so a stored response never points at
/// items that are not there yet.
pub async fn save(cx: Context<'_>, caller: &Caller, stored: &Stored) -> ApiResult<()> {
    let id = stored
        .response
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::internal("storing a response", "response without id"))?
        .to_owned();
    for it in stored.turn_items()? {
        let item_id = it.id();
        if !stored.own_item_ids.iter().any(|own| own == item_id) {
            continue;
        }
        let mut extra = Item::new();
        extra.insert("kind".into(), "response_item".into());
        extra.insert("response_id".into(), id.clone().into());
        put_json(
            cx,
            item_key(caller, item_id),
            blob_key(caller, "items", item_id),
            &it,
            extra,
        )
        .await?;
    }
    let mut extra = Item::new();
    extra.insert("kind".into(), "response".into());
    extra.insert("id".into(), id.clone().into());
    put_json(
        cx,
        response_key(caller, &id),
        blob_key(caller, "responses", &id),
        stored,
        extra,
    )
    .await
}

/// The answer for a response id the caller has no stored response under.
pub fn not_found(id: &str) -> ApiError {
    ApiError::not_found(
        "response_not_found",
        format!("No response found with id '{id}'."),
    )
    .with_param("response_id")
}

/// The caller's stored response, or None (also for another person's or organization's).
pub async fn load(cx: Context<'_>, caller: &Caller, id: &str) -> ApiResult<Option<Stored>> {
    if !crate::domain::ids::is_valid(id, "resp") {
        return Ok(None);
    }
    let Some(it) = cx.store.get(&response_key(caller, id)).await? else {
        return Ok(None);
    };
    read_json(cx, &it).await
}

/// Item ids we hand out; anything else cannot name a stored item.
pub const ITEM_PREFIXES: &[&str] = &["msg", "fc", "fco"];

/// The caller's stored item, or None.
pub async fn load_item(
    cx: Context<'_>,
    caller: &Caller,
    id: &str,
) -> ApiResult<Option<ConversationItem>> {
    if !ITEM_PREFIXES
        .iter()
        .any(|p| crate::domain::ids::is_valid(id, p))
    {
        return Ok(None);
    }
    match cx.store.get(&item_key(caller, id)).await? {
        Some(it) => read_json(cx, &it).await,
        None => Ok(None),
    }
}

/// Deletes a response and the items it created. Returns false when there was none.
pub async fn delete(cx: Context<'_>, caller: &Caller, id: &str) -> ApiResult<bool> {
    let Some(stored) = load(cx, caller, id).await? else {
        return Ok(false);
    };
    for item_id in &stored.own_item_ids {
        if let Some(old) = cx.store.delete(&item_key(caller, item_id), None).await? {
            if old.str_attr("body_blob").is_some() {
                cx.blobs.delete(&blob_key(caller, "items", item_id)).await?;
            }
        }
    }
    if let Some(old) = cx.store.delete(&response_key(caller, id), None).await? {
        if old.str_attr("body_blob").is_some() {
            cx.blobs.delete(&blob_key(caller, "responses", id)).await?;
        }
    }
    Ok(true)
}

/// The conversation before a new turn: every item of the chain ending at `previous`, oldest
/// first. The first response must exist (404 otherwise); an ancestor that was deleted or expired
/// ends the walk, as does [`MAX_CHAIN`].
pub async fn history(
    cx: Context<'_>,
    caller: &Caller,
    previous: &str,
) -> ApiResult<Vec<ConversationItem>> {
    let Some(first) = load(cx, caller, previous).await? else {
        return Err(ApiError::not_found(
            "response_not_found",
            format!("No response found with id '{previous}'."),
        )
        .with_param("previous_response_id"));
    };
    let mut turns = vec![first.turn_items()?];
    let mut next = first.previous_response_id.clone();
    while let Some(id) = next {
        if turns.len() >= MAX_CHAIN {
            break;
        }
        match load(cx, caller, &id).await? {
            Some(stored) => {
                turns.push(stored.turn_items()?);
                next = stored.previous_response_id.clone();
            }
            None => break,
        }
    }
    Ok(turns.into_iter().rev().flatten().collect())
}
