//! The declaration of a route's operation: its request body and its answers, named by the Rust
//! types the service reads and writes, from which the OpenAPI document is built.

use crate::app::App;
use axum::handler::Handler;
use axum::routing::{on, MethodFilter};
use axum::Router;
use std::borrow::Cow;
use utoipa::openapi::schema::Schema;
use utoipa::openapi::RefOr;
use utoipa::{PartialSchema, ToSchema};

/// A component schema named by the Rust type the service reads or writes, so that a renamed or
/// missing type fails to compile instead of leaving a dangling `$ref`; the document registers
/// it, and every schema it refers to, from the declarations.
pub type SchemaName = fn() -> Component;

/// A type's component: its name, and how to collect its schemas (its own first, then those it
/// refers to), which only the document's components need; a `$ref` needs only the name.
pub struct Component {
    pub name: Cow<'static, str>,
    pub collect: fn(&mut Vec<(String, RefOr<Schema>)>),
    /// The Rust type's path (`reelgate::domain::files::FileObject`), which the architecture
    /// test checks is a type the service reads or writes, not one that only describes.
    pub rust_type: &'static str,
}

/// `T`'s component (named by its `#[schema(as = …)]` name where it has one).
pub fn schema<T: ToSchema>() -> Component {
    Component {
        name: T::name(),
        collect: collect::<T>,
        rust_type: std::any::type_name::<T>(),
    }
}

/// The list envelope `List<T>`'s component: utoipa composes a generic's name from its
/// arguments' (`List_FileObject`), and a generic type's own `name()` is only `List`.
pub fn list_of<T: ToSchema>() -> Component {
    Component {
        name: list_name::<T>().into(),
        collect: collect_list::<T>,
        rust_type: std::any::type_name::<crate::api::envelope::List<T>>(),
    }
}

fn list_name<T: ToSchema>() -> String {
    format!("{}_{}", crate::api::envelope::List::<T>::name(), T::name())
}

fn collect<T: ToSchema>(out: &mut Vec<(String, RefOr<Schema>)>) {
    out.push((T::name().into_owned(), T::schema()));
    T::schemas(out);
}

/// The envelope's schema, and `T`'s own component, which its items refer to.
fn collect_list<T: ToSchema>(out: &mut Vec<(String, RefOr<Schema>)>) {
    use crate::api::envelope::List;
    out.push((list_name::<T>(), List::<T>::schema()));
    List::<T>::schemas(out);
    collect::<T>(out);
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

/// Who may call an operation.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Auth {
    None,
    /// `Authorization: Bearer <API key>`.
    ApiKey,
    /// The console's session cookie (reads).
    Console,
    /// The console's session cookie and its `X-CSRF-Token` (state changes).
    ConsoleCsrf,
}

/// A parameter's schema.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    Str,
    Int(i64, i64),
    OneOf(&'static [&'static str]),
}

/// Where a parameter is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum In {
    Path,
    Query,
    Header,
}

#[derive(Clone, Copy, Debug)]
pub struct Param {
    pub name: &'static str,
    pub at: In,
    pub kind: Kind,
    pub required: bool,
    pub about: &'static str,
}

pub const fn path_param(name: &'static str, about: &'static str) -> Param {
    Param {
        name,
        at: In::Path,
        kind: Kind::Str,
        required: true,
        about,
    }
}

pub const fn query_param(name: &'static str, kind: Kind, about: &'static str) -> Param {
    Param {
        name,
        at: In::Query,
        kind,
        required: false,
        about,
    }
}

pub const fn header_param(name: &'static str, about: &'static str) -> Param {
    Param {
        name,
        at: In::Header,
        kind: Kind::Str,
        required: false,
        about,
    }
}

pub const IDEMPOTENCY_KEY: Param = header_param(
    "Idempotency-Key",
    "Retrying with the same key and body answers the first answer again instead of acting twice.",
);
pub const RANGE: Param = header_param("Range", "One byte range, e.g. `bytes=0-1023`.");
pub const ORDER: Param = query_param(
    "order",
    Kind::OneOf(&["asc", "desc"]),
    "Sort by creation time (default `desc`).",
);

/// The path parameters that name one kind of object, each described once for every operation
/// that takes it.
pub const VIDEO_ID: Param = path_param("video_id", "A video id (`video_…`).");
pub const WEBHOOK_ID: Param = path_param("webhook_id", "A webhook endpoint id (`wh_…`).");
pub const RESPONSE_ID: Param = path_param("response_id", "A response id (`resp_…`).");
pub const KEY_ID: Param = path_param("key_id", "An API key id.");
pub const FILE_ID: Param = path_param("file_id", "A file id (`file-…`).");
pub const UPLOAD_ID: Param = path_param("upload_id", "An upload id (`upload_…`).");
pub const CHARACTER_ID: Param = path_param("character_id", "A character id (`char_…`).");

/// An OpenAPI link: after this operation, `param` of operation `op` is `expr`. The operation and
/// its parameter are the declarations themselves, so a link cannot name one that is not there.
#[derive(Clone, Copy, Debug)]
pub struct Link {
    pub name: &'static str,
    pub op: &'static Operation,
    pub param: &'static Param,
    pub expr: &'static str,
}

pub const fn link(name: &'static str, op: &'static Operation, param: &'static Param) -> Link {
    Link {
        name,
        op,
        param,
        expr: "$response.body#/id",
    }
}

/// One operation of the router.
#[derive(Clone, Copy, Debug)]
pub struct Operation {
    pub method: &'static str,
    pub path: &'static str,
    pub id: &'static str,
    pub tag: &'static str,
    pub summary: &'static str,
    pub auth: Auth,
    pub params: &'static [Param],
    pub body: Body,
    pub ok: &'static [(u16, Answer)],
    /// Every error status the handler (with its extractors) can answer.
    pub errors: &'static [u16],
    pub links: &'static [Link],
}

pub const DEFAULT: Operation = Operation {
    method: "GET",
    path: "",
    id: "",
    tag: "",
    summary: "",
    auth: Auth::ApiKey,
    params: &[],
    body: Body::None,
    ok: &[],
    errors: &[401],
    links: &[],
};

impl Operation {
    /// The router's filter for this operation's method.
    pub fn method_filter(&self) -> MethodFilter {
        match self.method {
            "GET" => MethodFilter::GET,
            "POST" => MethodFilter::POST,
            "PUT" => MethodFilter::PUT,
            "PATCH" => MethodFilter::PATCH,
            "DELETE" => MethodFilter::DELETE,
            other => panic!("{}: {other} is not a method the router serves", self.id),
        }
    }
}

/// A router built from declarations: a route's path and method are its [`Operation`]'s, so a
/// handler module states neither of its own.
pub trait Declared {
    /// Serves `op`'s method at `op`'s path with `handler`.
    fn declared<H, T>(self, op: &Operation, handler: H) -> Self
    where
        H: Handler<T, App>,
        T: 'static;
}

impl Declared for Router<App> {
    fn declared<H, T>(self, op: &Operation, handler: H) -> Self
    where
        H: Handler<T, App>,
        T: 'static,
    {
        self.route(op.path, on(op.method_filter(), handler))
    }
}
