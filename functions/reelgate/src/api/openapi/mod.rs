//! `GET /openapi.json`: the OpenAPI 3.1 document of the whole HTTP surface, built from the code.
//! Every operation the router serves is declared once, beside its handler, as an
//! [`Operation`] that its module's router is built from; [`OPERATIONS`] lists them in the
//! document's order (the tests check them against `API_ROUTES`, the console's routes and the
//! router itself), with the statuses each handler can answer; bodies and answers are named by
//! the domain's own types (`Video`, `FileObject`, `AgreementStatus` derive `utoipa::ToSchema`).
//! Every error is the one envelope of `domain/error.rs`.
//!
//! The committed copy is `docs/openapi.json`; `functions/reelgate/tests/openapi.rs` fails when
//! it differs from [`document_json`] and says how to refresh it.

use crate::api::operation::{
    schema, Answer, Auth, Body, Declared, In, Kind, Link, Operation, SchemaName, DEFAULT,
};
use crate::app::App;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use axum::Router;
use std::collections::BTreeMap;
use utoipa::openapi::content::ContentBuilder;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::link::LinkBuilder;
use utoipa::openapi::path::{
    HttpMethod, OperationBuilder, ParameterBuilder, ParameterIn, PathItemBuilder,
};
use utoipa::openapi::request_body::RequestBodyBuilder;
use utoipa::openapi::response::{ResponseBuilder, ResponsesBuilder};
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::openapi::security::{
    ApiKey, ApiKeyValue, Http, HttpAuthScheme, SecurityRequirement, SecurityScheme,
};
use utoipa::openapi::tag::TagBuilder;
use utoipa::openapi::{InfoBuilder, OpenApi, PathsBuilder, Ref, RefOr, Required, ServerBuilder};
use utoipa::OpenApi as _;

/// The route serving the document (outside `/v1`, whose every endpoint needs an API key).
pub const PATH: &str = OPEN_API_DOCUMENT.path;

pub const OPEN_API_DOCUMENT: Operation = Operation {
    path: "/openapi.json",
    id: "OpenApiDocument",
    tag: "service",
    summary: "This document",
    auth: Auth::None,
    ok: &[(200, Answer::OpenApiDocument)],
    errors: &[],
    ..DEFAULT
};

pub fn routes() -> Router<App> {
    Router::new().declared(&OPEN_API_DOCUMENT, serve)
}

async fn serve() -> Response {
    let mut response = document_json().into_response();
    let h = response.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// Every operation the service serves, in the document's order: each declared once, beside
/// its handler, where its module's router is built from it.
pub const OPERATIONS: &[Operation] = &[
    crate::api::HEALTH,
    crate::api::metrics::METRICS,
    OPEN_API_DOCUMENT,
    // ---- files
    crate::api::files::CREATE_FILE,
    crate::api::files::LIST_FILES,
    crate::api::files::RETRIEVE_FILE,
    crate::api::files::DELETE_FILE,
    crate::api::files::DOWNLOAD_FILE_CONTENT,
    // ---- direct uploads
    crate::api::uploads::CREATE_UPLOAD,
    crate::api::uploads::COMPLETE_UPLOAD,
    // ---- videos
    crate::api::videos::CREATE_VIDEO,
    crate::api::videos::LIST_VIDEOS,
    crate::api::videos::LIST_VIDEO_MODELS,
    crate::api::agreement::RETRIEVE_VIDEO_TERMS_ACCEPTANCE,
    crate::api::agreement::ACCEPT_VIDEO_TERMS,
    crate::api::videos::RETRIEVE_VIDEO,
    crate::api::videos::DELETE_VIDEO,
    crate::api::videos::DOWNLOAD_VIDEO_CONTENT,
    crate::api::videos::DOWNLOAD_VIDEO_THUMBNAIL,
    crate::api::videos::CANCEL_VIDEO,
    crate::api::videos::REMIX_VIDEO,
    crate::api::videos::EXTEND_VIDEO,
    crate::api::videos::EDIT_VIDEO,
    crate::api::characters::CREATE_VIDEO_CHARACTER,
    crate::api::characters::LIST_VIDEO_CHARACTERS,
    crate::api::characters::RETRIEVE_VIDEO_CHARACTER,
    crate::api::characters::DELETE_VIDEO_CHARACTER,
    // ---- webhooks
    crate::api::webhooks::CREATE_WEBHOOK,
    crate::api::webhooks::LIST_WEBHOOKS,
    crate::api::webhooks::RETRIEVE_WEBHOOK,
    crate::api::webhooks::DELETE_WEBHOOK,
    crate::api::webhooks::ROTATE_WEBHOOK_SECRET,
    // ---- usage
    crate::api::usage::GET_USAGE,
    // ---- text models
    crate::api::models::LIST_MODELS,
    crate::api::models::RETRIEVE_MODEL,
    crate::api::chat::CREATE_CHAT_COMPLETION,
    crate::api::messages::CREATE_MESSAGE,
    crate::api::messages::COUNT_MESSAGE_TOKENS,
    crate::api::responses::CREATE_RESPONSE,
    crate::api::responses::RETRIEVE_RESPONSE,
    crate::api::responses::DELETE_RESPONSE,
    crate::api::responses::LIST_RESPONSE_INPUT_ITEMS,
    // ---- the console (a browser application; its JSON routes take the session cookie)
    crate::api::console::CONSOLE_PAGE,
    crate::api::console::CONSOLE_PAGE_SLASH,
    crate::api::console::CONSOLE_VIDEO_PAGE,
    crate::api::console::CONSOLE_SIGN_IN,
    crate::api::console::oidc::CONSOLE_OIDC_START,
    crate::api::console::oidc::CONSOLE_OIDC_CALLBACK,
    crate::api::console::oidc::CONSOLE_OIDC_CHOOSE,
    crate::api::console::CONSOLE_STYLESHEET,
    crate::api::console::CONSOLE_SCRIPT,
    crate::api::console::api::CONSOLE_SESSION,
    crate::api::console::api::CONSOLE_SIGN_OUT,
    crate::api::console::api::CONSOLE_TERMS,
    crate::api::console::api::CONSOLE_AGREE_TO_TERMS,
    crate::api::console::api::CONSOLE_VIDEO_MODELS,
    crate::api::console::api::CONSOLE_CHAT_MODELS,
    crate::api::console::videos::CONSOLE_QUOTE_VIDEO,
    crate::api::console::videos::CONSOLE_LIST_VIDEOS,
    crate::api::console::videos::CONSOLE_CREATE_VIDEO,
    crate::api::console::videos::CONSOLE_RETRIEVE_VIDEO,
    crate::api::console::videos::CONSOLE_DELETE_VIDEO,
    crate::api::console::videos::CONSOLE_VIDEO_MEDIA,
    crate::api::console::videos::CONSOLE_CANCEL_VIDEO,
    crate::api::console::videos::CONSOLE_REMIX_VIDEO,
    crate::api::console::videos::CONSOLE_EXTEND_VIDEO,
    crate::api::console::videos::CONSOLE_EDIT_VIDEO,
    crate::api::console::api::CONSOLE_CHAT_COMPLETION,
    crate::api::console::api::CONSOLE_LIST_KEYS,
    crate::api::console::api::CONSOLE_CREATE_KEY,
    crate::api::console::api::CONSOLE_REVOKE_KEY,
    crate::api::console::api::CONSOLE_KEY_LIMITS,
    crate::api::console::api::CONSOLE_SET_KEY_LIMITS,
    crate::api::console::api::CONSOLE_USAGE,
    crate::api::console::api::CONSOLE_CREATE_UPLOAD,
    crate::api::console::api::CONSOLE_COMPLETE_UPLOAD,
    crate::api::console::api::CONSOLE_LIST_WEBHOOKS,
    crate::api::console::api::CONSOLE_CREATE_WEBHOOK,
    crate::api::console::api::CONSOLE_DELETE_WEBHOOK,
    crate::api::console::api::CONSOLE_ROTATE_WEBHOOK_SECRET,
    crate::api::console::api::CONSOLE_SEND_WEBHOOK_TEST_EVENT,
];

/// The component schemas no declaration names: the document's components are collected from
/// the operations ([`declared_schemas`]), and these are referred to only from schemas built by
/// hand (the create request's arrays, sized by the rules' limits), which utoipa cannot follow.
#[derive(utoipa::OpenApi)]
#[openapi(components(schemas(
    crate::domain::videos::create_request::FrameReference,
    crate::domain::videos::create_request::FrameRole,
    crate::domain::videos::create_request::FileRef,
)))]
struct Components;

fn schema_ref(name: &str) -> RefOr<Schema> {
    RefOr::Ref(Ref::from_schema_name(name))
}

fn string_schema() -> Schema {
    ObjectBuilder::new().schema_type(Type::String).into()
}

fn param_schema(kind: Kind) -> Schema {
    match kind {
        Kind::Str => string_schema(),
        Kind::Int(min, max) => ObjectBuilder::new()
            .schema_type(Type::Integer)
            .minimum(Some(min))
            .maximum(Some(max))
            .into(),
        Kind::OneOf(values) => ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(values.iter().copied()))
            .into(),
    }
}

/// The error envelope of a route: the Messages API's routes answer Anthropic's.
fn error_envelope(path: &str) -> SchemaName {
    if path.starts_with(crate::api::messages::CREATE_MESSAGE.path) {
        schema::<crate::api::messages::AnthropicErrorResponse>
    } else {
        schema::<crate::api::envelope::ErrorResponse>
    }
}

/// Every schema the declarations name (bodies, answers, error envelopes) with the schemas they
/// refer to: the document's components come from the operations, not from a list beside them.
fn declared_schemas() -> BTreeMap<String, RefOr<Schema>> {
    let mut schemas = Vec::new();
    for component in declared_components() {
        (component.collect)(&mut schemas);
    }
    schemas.into_iter().collect()
}

/// The component of every type the declarations name.
fn declared_components() -> Vec<crate::api::operation::Component> {
    let mut named: Vec<SchemaName> = Vec::new();
    for op in OPERATIONS {
        match op.body {
            Body::None => {}
            Body::Json(n) | Body::Multipart(n) | Body::JsonOrForm(n) | Body::Form(n) => {
                named.push(n)
            }
        }
        for (_, answer) in op.ok {
            match answer {
                Answer::Json(n) => named.push(*n),
                Answer::JsonOrStream(n) => {
                    named.extend([*n, schema::<crate::api::chat_answers::EventStream>])
                }
                Answer::PolledVideo => named.push(schema::<crate::domain::videos::Video>),
                Answer::Bytes(_)
                | Answer::Html
                | Answer::Text(_)
                | Answer::OpenApiDocument
                | Answer::Redirect => {}
            }
        }
        if !op.errors.is_empty() {
            named.push(error_envelope(op.path));
        }
    }
    named.into_iter().map(|n| n()).collect()
}

/// The Rust types the declarations name, as paths (`reelgate::api::envelope::List<…>`).
pub fn declared_types() -> Vec<&'static str> {
    let mut types: Vec<&'static str> = declared_components().iter().map(|c| c.rust_type).collect();
    types.sort_unstable();
    types.dedup();
    types
}

/// An error answer in the route's envelope ([`error_envelope`]).
fn error_response(status: u16, path: &str) -> utoipa::openapi::Response {
    let envelope = error_envelope(path)();
    let about = match status {
        400 => "The request is invalid; `param` names the offending parameter.",
        401 => "No valid credential (API key, or console session on console routes).",
        402 => "The organization's balance, or the API key's monthly budget, does not cover the request.",
        403 => "Not permitted (agreement missing, console-only action, CSRF token missing).",
        404 => "No such resource in the caller's organization (or no such model).",
        409 => "Conflicts with the resource's state or with an earlier Idempotency-Key.",
        413 => "The body is larger than this endpoint accepts.",
        416 => "The Range is outside the content.",
        429 => "A rate limit of the key or the organization is reached (`rate_limit_exceeded`, with `Retry-After`), or the plan's concurrent renders are all in use.",
        502 => "The model provider refused the request or broke the protocol.",
        503 => "A provider (video engine or model upstream) is unavailable.",
        504 => "The model provider did not answer in time.",
        529 => "The model provider is unreachable or overloaded (Anthropic's `overloaded_error`).",
        _ => "An error.",
    };
    ResponseBuilder::new()
        .description(about)
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(schema_ref(&envelope.name)))
                .build(),
        )
        .build()
}

fn ok_response(answer: Answer, links: &[Link]) -> utoipa::openapi::Response {
    let json = |name: SchemaName| {
        ContentBuilder::new()
            .schema(Some(schema_ref(&name().name)))
            .build()
    };
    let bytes = || {
        ContentBuilder::new()
            .schema(Some(
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(
                        utoipa::openapi::KnownFormat::Binary,
                    )))
                    .build(),
            ))
            .build()
    };
    let mut r = ResponseBuilder::new();
    r = match answer {
        Answer::Json(name) => r.description("OK").content("application/json", json(name)),
        Answer::JsonOrStream(name) => r
            .description("The object, or with `stream: true` server-sent events")
            .content("application/json", json(name))
            .content("text/event-stream", json(schema::<crate::api::chat_answers::EventStream>)),
        Answer::PolledVideo => r
            .description("The video job")
            .content("application/json", json(schema::<crate::domain::videos::Video>))
            .header(
                "openai-poll-after-ms",
                HeaderBuilder::new()
                    .schema(param_schema(Kind::Int(10_000, 30_000)))
                    .description(Some(
                        "While the job is not finished: milliseconds to wait before reading it again.",
                    ))
                    .build(),
            ),
        Answer::Bytes(types) => {
            let mut r = r.description("The content").header(
                "accept-ranges",
                HeaderBuilder::new().schema(string_schema()).build(),
            );
            for t in types {
                r = r.content(*t, bytes());
            }
            r
        }
        Answer::Html => r
            .description("An HTML page")
            .content("text/html; charset=utf-8", ContentBuilder::new().schema(Some(string_schema())).build()),
        Answer::OpenApiDocument => r.description("An OpenAPI 3.1 document").content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(
                    ObjectBuilder::new()
                        .schema_type(Type::Object)
                        .required("openapi")
                        .required("info")
                        .required("paths"),
                ))
                .build(),
        ),
        Answer::Text(t) => r
            .description("The file")
            .content(t, ContentBuilder::new().schema(Some(string_schema())).build()),
        Answer::Redirect => r.description("Redirect to the content").header(
            "location",
            HeaderBuilder::new().schema(string_schema()).build(),
        ),
    };
    for l in links {
        r = r.link(
            l.name,
            LinkBuilder::new()
                .operation_id(l.op.id)
                .parameter(l.param.name, l.expr)
                .build(),
        );
    }
    r.build()
}

fn method_of(m: &str) -> HttpMethod {
    match m {
        "POST" => HttpMethod::Post,
        "DELETE" => HttpMethod::Delete,
        "PUT" => HttpMethod::Put,
        "PATCH" => HttpMethod::Patch,
        _ => HttpMethod::Get,
    }
}

fn operation(op: &Operation) -> utoipa::openapi::path::Operation {
    let mut b = OperationBuilder::new()
        .operation_id(Some(op.id))
        .summary(Some(op.summary))
        .tag(op.tag);
    for p in op.params {
        b = b.parameter(
            ParameterBuilder::new()
                .name(p.name)
                .parameter_in(match p.at {
                    In::Path => ParameterIn::Path,
                    In::Query => ParameterIn::Query,
                    In::Header => ParameterIn::Header,
                })
                .required(if p.required {
                    Required::True
                } else {
                    Required::False
                })
                .description(Some(p.about))
                .schema(Some(param_schema(p.kind))),
        );
    }
    let body: Option<(&[&str], SchemaName)> = match op.body {
        Body::None => None,
        Body::Json(name) => Some((&["application/json"], name)),
        Body::JsonOrForm(name) => Some((&["application/json", "multipart/form-data"], name)),
        Body::Form(name) => Some((&["application/x-www-form-urlencoded"], name)),
        Body::Multipart(name) => Some((&["multipart/form-data"], name)),
    };
    if let Some((media_types, name)) = body {
        let mut request = RequestBodyBuilder::new().required(Some(Required::True));
        for media_type in media_types {
            request = request.content(
                *media_type,
                ContentBuilder::new()
                    .schema(Some(schema_ref(&name().name)))
                    .build(),
            );
        }
        b = b.request_body(Some(request.build()));
    }
    let mut responses = ResponsesBuilder::new();
    for (status, answer) in op.ok {
        responses = responses.response(status.to_string(), ok_response(*answer, op.links));
    }
    for status in op.errors {
        responses = responses.response(status.to_string(), error_response(*status, op.path));
    }
    b = b.responses(responses.build());
    let none: [&str; 0] = [];
    b = match op.auth {
        Auth::None => b.securities(Some(Vec::<SecurityRequirement>::new())),
        Auth::ApiKey => b.security(SecurityRequirement::new("api_key", none)),
        Auth::Console => b.security(SecurityRequirement::new("console_session", none)),
        Auth::ConsoleCsrf => {
            b.security(SecurityRequirement::new("console_session", none).add("csrf_token", none))
        }
    };
    b.build()
}

/// The whole document.
pub fn document() -> OpenApi {
    let mut doc = Components::openapi();
    doc.info = InfoBuilder::new()
        .title("reelgate")
        .version(env!("CARGO_PKG_VERSION"))
        .description(Some(
            "Video generation and an OpenAI-compatible text-model gateway. Every error answers \
             OpenAI's envelope `{\"error\": {message, type, param, code}}`; every answer carries \
             `x-request-id`. Routes under /v1 take `Authorization: Bearer <API key>`; routes under \
             /console/api take the console's session cookie, and the state-changing ones its \
             `X-CSRF-Token`. On AWS, a request that did not come through the service's public \
             base URL is refused before routing with 403 `origin_forbidden`.",
        ))
        .build();
    doc.servers = Some(vec![ServerBuilder::new().url("/").build()]);
    let mut by_path: BTreeMap<usize, (&str, PathItemBuilder)> = BTreeMap::new();
    let mut order: Vec<&str> = Vec::new();
    for op in OPERATIONS {
        if !order.contains(&op.path) {
            order.push(op.path);
        }
        let i = order.iter().position(|p| *p == op.path).unwrap_or_default();
        let (_, item) = by_path
            .remove(&i)
            .unwrap_or((op.path, PathItemBuilder::new()));
        by_path.insert(
            i,
            (op.path, item.operation(method_of(op.method), operation(op))),
        );
    }
    let mut paths = PathsBuilder::new();
    for (_, (p, item)) in by_path {
        paths = paths.path(p, item.build());
    }
    doc.paths = paths.build();
    let mut components = doc.components.take().unwrap_or_default();
    components.schemas.extend(declared_schemas());
    components.add_security_scheme(
        "api_key",
        SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
    );
    components.add_security_scheme(
        "console_session",
        SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::new(
            crate::api::console::COOKIE_NAME,
        ))),
    );
    components.add_security_scheme(
        "csrf_token",
        SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("X-CSRF-Token"))),
    );
    doc.components = Some(components);
    doc.tags = Some(
        [
            "service",
            "files",
            "uploads",
            "videos",
            "models",
            "chat",
            "messages",
            "responses",
            "webhooks",
            "usage",
            "console",
        ]
        .iter()
        .map(|t| TagBuilder::new().name(*t).build())
        .collect(),
    );
    doc
}

/// The document as served and committed: pretty JSON with a final newline.
pub fn document_json() -> String {
    let mut doc = serde_json::to_value(document()).unwrap_or_default();
    spell_links(&mut doc);
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_else(|_| "{}".into());
    s.push('\n');
    s
}

/// utoipa 5 writes a link's `operationId` as `operation_id`; OpenAPI spells it in camel case.
fn spell_links(doc: &mut serde_json::Value) {
    let Some(paths) = doc.get_mut("paths").and_then(|p| p.as_object_mut()) else {
        return;
    };
    for item in paths.values_mut().filter_map(|i| i.as_object_mut()) {
        for op in item.values_mut() {
            let Some(responses) = op.get_mut("responses").and_then(|r| r.as_object_mut()) else {
                continue;
            };
            for response in responses.values_mut() {
                let Some(links) = response.get_mut("links").and_then(|l| l.as_object_mut()) else {
                    continue;
                };
                for link in links.values_mut().filter_map(|l| l.as_object_mut()) {
                    for (snake, camel) in [
                        ("operation_id", "operationId"),
                        ("operation_ref", "operationRef"),
                    ] {
                        if let Some(v) = link.remove(snake) {
                            link.insert(camel.to_owned(), v);
                        }
                    }
                }
            }
        }
    }
}
