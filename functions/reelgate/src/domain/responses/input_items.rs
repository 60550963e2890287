//! `GET /v1/responses/{id}/input_items`: a page of a stored response's input items (its own
//! request's, not the history's). The items are kept whole with the response, so a page is a
//! window over them, its cursors item ids of this response.

use crate::domain::accounts::Caller;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::params::{ListQuery, Page};
use crate::domain::responses::items::ConversationItem;
use crate::domain::responses::{persist, MAX_ITEMS_PAGE};
use crate::domain::Context;
use serde::Deserialize;

/// The query of an input-item page: `limit`, `order`, `after`, and `before`.
#[derive(Deserialize)]
pub struct ItemsQuery {
    #[serde(flatten)]
    pub page: ListQuery,
    pub before: Option<String>,
    /// Accepted for OpenAI compatibility; items are always returned whole.
    #[allow(dead_code)]
    include: Option<Vec<String>>,
}

/// The input items of the caller's stored response `id`, newest first unless `order=asc`, paged
/// with `after`/`before` item ids.
pub async fn page(
    cx: Context<'_>,
    caller: &Caller,
    id: &str,
    query: &ItemsQuery,
) -> ApiResult<Page<ConversationItem>> {
    // The limit is checked before the response is read: a bad page is refused as such even for
    // a response that is not there.
    let limit = query.page.limit(MAX_ITEMS_PAGE)?;
    let mut items = match persist::load(cx, caller, id).await? {
        Some(stored) => stored.input_items,
        None => return Err(persist::not_found(id)),
    };
    if query.page.descending()? {
        items.reverse();
    }
    let position = |cursor: &str, param: &str| {
        items.iter().position(|i| i.id() == cursor).ok_or_else(|| {
            ApiError::invalid(
                param,
                format!("{param} must be an item id of this response."),
            )
        })
    };
    let start = match &query.page.after {
        Some(after) => position(after, "after")? + 1,
        None => 0,
    };
    let end = match &query.before {
        Some(before) => position(before, "before")?,
        None => items.len(),
    };
    let window: Vec<ConversationItem> = items
        .get(start..end.max(start))
        .unwrap_or_default()
        .iter()
        .take(limit)
        .cloned()
        .collect();
    let has_more = start + window.len() < end;
    Ok(Page::new(window, has_more))
}
