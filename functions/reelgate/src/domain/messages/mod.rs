//! The Messages API (Anthropic's `/v1/messages` shape) as a dialect of chat completions: a
//! request becomes the chat request every upstream port speaks (`request`), and the chat answer
//! becomes a `message` object or Anthropic's stream events (`reply`); the bodies are read at the
//! edge as typed requests (`body`). The chat use case in
//! between is the same one `/v1/chat/completions` runs (admission, limits, routing, fallback,
//! billing). The mapping both ways is documented in docs/messages.md.

pub mod body;
pub mod create;
pub mod media;
pub mod reply;
pub mod request;
pub mod translated;

/// A new message id, `msg_` and a suffix that sorts by time (also the ledger's reference).
pub fn new_message_id() -> String {
    let id = crate::domain::ids::new_id("c");
    format!("msg_{}", &id[2..])
}
