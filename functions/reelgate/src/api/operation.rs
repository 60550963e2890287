//! The declaration of a route's operation: its request body and its answers, named by the Rust
//! types the service reads and writes, from which the OpenAPI document is built.

use std::borrow::Cow;
use utoipa::ToSchema;

/// A component schema's name, taken from the Rust type the service reads or writes, so that a
/// renamed or missing type fails to compile instead of leaving a dangling `$ref`.
pub type SchemaName = fn() -> Cow<'static, str>;

/// The component name of `T` (its `#[schema(as = …)]` name where it has one).
pub fn schema<T: ToSchema>() -> Cow<'static, str> {
    T::name()
}

/// The component name of the list envelope `List<T>`: utoipa composes a generic's name from its
/// arguments' (`List_FileObject`), and a generic type's own `name()` is only `List`.
pub fn list_of<T: ToSchema>() -> Cow<'static, str> {
    format!("{}_{}", crate::api::envelope::List::<T>::name(), T::name()).into()
}

/// A request body.
#[derive(Clone, Copy, Debug)]
pub enum Body {
    None,
    Json(SchemaName),
    Multipart(SchemaName),
    /// JSON, or the same object as `multipart/form-data` fields (as OpenAI's Python SDK sends).
    JsonOrForm(SchemaName),
    /// An HTML form (`application/x-www-form-urlencoded`).
    Form(SchemaName),
}

/// One successful answer.
#[derive(Clone, Copy, Debug)]
pub enum Answer {
    /// `application/json` with a component schema.
    Json(SchemaName),
    /// A component schema as JSON, or `text/event-stream` when the body asks `stream: true`.
    JsonOrStream(SchemaName),
    /// `application/json` video object with the polling hint header.
    PolledVideo,
    /// Bytes of the given media types (ranges answer 206).
    Bytes(&'static [&'static str]),
    /// An HTML page.
    Html,
    /// Static text of the given media type.
    Text(&'static str),
    /// This document: an OpenAPI 3.1 object (its schema is OpenAPI's own, not restated here).
    OpenApiDocument,
    /// A redirect (`Location`).
    Redirect,
}
