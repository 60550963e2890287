//! OpenAI's response envelopes shared by the list routes.

/// OpenAI's list envelope: `{object: "list", data, first_id, last_id, has_more}`.
pub fn list_envelope<T: serde::Serialize>(
    data: &[T],
    id_of: impl Fn(&T) -> String,
    has_more: bool,
) -> serde_json::Value {
    serde_json::json!({
        "object": "list",
        "data": data,
        "first_id": data.first().map(&id_of),
        "last_id": data.last().map(&id_of),
        "has_more": has_more,
    })
}
