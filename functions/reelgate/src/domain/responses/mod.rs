//! The Responses API's rules and its use case (`create`), bridged onto the chat-completions port every upstream implements:
//! the request is parsed (`request`), its instructions, stored history, input items and files
//! become a chat request (`normalize` checks the input items into their stored form, the types
//! in `items`; `convert`, with `fetch` for URLs and `pdf` for documents, `token_budget` to fit
//! the context), the reply becomes a Response object or typed events (`output`), and the response with its items is
//! kept per person (`persist`). Documented in docs/responses.md.

/// The largest page of a stored response's input items.
pub const MAX_ITEMS_PAGE: usize = 100;

pub mod convert;
pub mod create;
pub mod fetch;
pub mod input_items;
pub mod items;
pub mod normalize;
pub mod output;
pub mod pdf;
pub mod persist;
pub mod request;
pub mod token_budget;
