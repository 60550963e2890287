//! The one reading of a request body's shape and of a list's page: a body typed at the edge
//! ([`RequestBody`]) is read by serde, and serde's errors are read once into a [`ShapeFault`]
//! that each body words in its own style; the shared sentences of that style are "`<name>` must
//! be `<what>`." ([`wrong_type`]) and "`<name>` is required." ([`required`]). JSON `null` counts
//! as not given wherever a field is optional (clients send null for "not given", as OpenAI's
//! SDKs do).

use crate::domain::error::{ApiError, ApiResult};

/// The query parameters every list route reads (`limit`, `order`, `after`), as sent: the one
/// parser of them, so that each list refuses a bad page the same way.
#[derive(serde::Deserialize, Default, Clone)]
pub struct ListQuery {
    pub limit: Option<String>,
    pub order: Option<String>,
    pub after: Option<String>,
}

/// The page size lists use when `limit` is not given.
pub const DEFAULT_PAGE: usize = 20;

impl ListQuery {
    /// `limit`, from 1 to `max` ([`DEFAULT_PAGE`] when not given).
    pub fn limit(&self, max: usize) -> ApiResult<usize> {
        match self.limit.as_deref() {
            None | Some("") => Ok(DEFAULT_PAGE.min(max)),
            Some(raw) => match raw.parse::<usize>() {
                Ok(n) if (1..=max).contains(&n) => Ok(n),
                _ => Err(ApiError::invalid(
                    "limit",
                    format!("limit must be an integer from 1 to {max}."),
                )),
            },
        }
    }

    /// Newest first unless `order=asc`.
    pub fn descending(&self) -> ApiResult<bool> {
        match self.order.as_deref() {
            None | Some("") | Some("desc") => Ok(true),
            Some("asc") => Ok(false),
            Some(_) => Err(ApiError::invalid("order", "order must be asc or desc.")),
        }
    }

    /// The `after` cursor: an id of `kind` (`video`, `file`), or none.
    pub fn after(&self, kind: &str) -> ApiResult<Option<&str>> {
        match self.after.as_deref() {
            None | Some("") => Ok(None),
            Some(id) if crate::domain::ids::is_valid(id, kind) => Ok(Some(id)),
            Some(_) => Err(ApiError::invalid(
                "after",
                format!("after must be a {kind} id."),
            )),
        }
    }
}

/// One page of a list: its items, and whether more follow.
pub struct Page<T> {
    pub data: Vec<T>,
    pub has_more: bool,
    /// The id the next page starts after when it is not the last item's: a filtered list that
    /// stopped reading at its scan budget resumes where the scan stopped, past items that did not
    /// match (the list envelope's `last_id`). None for every other page.
    pub resume_after: Option<String>,
}

impl<T> Page<T> {
    /// A page that continues after its last item.
    pub fn new(data: Vec<T>, has_more: bool) -> Page<T> {
        Page {
            data,
            has_more,
            resume_after: None,
        }
    }
}

/// "`name` must be `what`." naming the parameter.
pub fn wrong_type(name: &str, what: &str) -> ApiError {
    ApiError::invalid(name, format!("{name} must be {what}."))
}

/// "`name` is required." naming the parameter.
pub fn required(name: &str) -> ApiError {
    ApiError::invalid(name, format!("{name} is required."))
}

/// A JSON request body typed at the edge: serde reads its shape (an unknown parameter is
/// refused), [`RequestBody::check`] the rules a shape cannot state, and a value of the wrong
/// shape is refused in the body's own words for the parameter at fault. [`read_body`] is the
/// one mapping of serde's errors to that style.
pub trait RequestBody: serde::de::DeserializeOwned {
    /// The sentence for the top-level parameter `param` when its value is missing or has the
    /// wrong shape; `path` is where in it serde stopped (`events[0]` inside `events`).
    fn expected(param: &str, path: &str) -> Option<String>;
    /// The refusal of a value serde could not read, for a body whose nested values are named
    /// by their own path (`image_reference[0].role`) rather than by the top-level parameter;
    /// None leaves it to [`RequestBody::expected`].
    fn refusal(_fault: &ShapeFault) -> Option<ApiError> {
        None
    }
    /// The body after the rules its shape cannot state (lengths, names from a list, defaults).
    fn check(self) -> ApiResult<Self>;
}

/// A value of a body that must be a JSON object: serde's derive also reads a struct from an
/// array of its fields in order, which no caller means (`{"references": []}` is not an empty
/// set of references). For fields: [`optional_object`] and [`optional_objects`].
struct Object<T>(T);

impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for Object<T> {
    fn deserialize<D: serde::Deserializer<'de>>(value: D) -> Result<Self, D::Error> {
        struct Fields<T>(std::marker::PhantomData<T>);
        impl<'de, T: serde::Deserialize<'de>> serde::de::Visitor<'de> for Fields<T> {
            type Value = T;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        value
            .deserialize_map(Fields(std::marker::PhantomData))
            .map(Object)
    }
}

/// `#[serde(default, deserialize_with = "optional_object")]`: an object or null.
pub fn optional_object<'de, D, T>(value: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    let object: Option<Object<T>> = serde::Deserialize::deserialize(value)?;
    Ok(object.map(|o| o.0))
}

/// `#[serde(default, deserialize_with = "optional_objects")]`: an array of objects, or null.
pub fn optional_objects<'de, D, T>(value: D) -> Result<Option<Vec<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    let objects: Option<Vec<Object<T>>> = serde::Deserialize::deserialize(value)?;
    Ok(objects.map(|list| list.into_iter().map(|o| o.0).collect()))
}

/// `#[serde(default, deserialize_with = "sent")]`: a value that was sent, null included (a
/// field whose mere presence is refused by a rule, as a model beside a video by id is).
pub fn sent<'de, D, T>(value: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    T::deserialize(value).map(Some)
}

/// `#[serde(default, deserialize_with = "sent_object")]`: an object that was sent; null, like
/// any other value, is refused as not an object.
pub fn sent_object<'de, D, T>(value: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    <Object<T> as serde::Deserialize>::deserialize(value).map(|o| Some(o.0))
}

/// Where and how serde could not read a body: `path` names the value at fault, the field
/// itself for an unknown or missing one (`references.clips`, `image_reference[0].file_id`).
#[derive(Debug, PartialEq)]
pub struct ShapeFault {
    pub path: String,
    pub kind: FaultKind,
    /// The unknown or missing field's own name, as serde gives it; empty for a value of the
    /// wrong shape.
    pub field: String,
}

#[derive(Debug, PartialEq)]
pub enum FaultKind {
    Unknown,
    Missing,
    WrongShape,
}

impl ShapeFault {
    /// For an unknown field: its refusal, named by the field, in the body's own `sentence` about
    /// it (what the body takes instead); None for any other fault.
    pub fn refuse_unknown(&self, sentence: impl FnOnce(&str) -> String) -> Option<ApiError> {
        (self.kind == FaultKind::Unknown)
            .then(|| ApiError::invalid(&self.field, sentence(&self.field)))
    }

    /// The top-level parameter the path is in.
    pub fn param(&self) -> &str {
        self.path.split(['.', '[']).next().unwrap_or_default()
    }

    /// serde's error at `path` (serde_path_to_error's, `.` for the body itself) as a fault.
    /// The one reading of serde's messages: every typed body's refusals start here.
    fn of(path: &str, message: &str) -> ShapeFault {
        let named = |prefix: &str| {
            let rest = message.split_once(prefix)?.1;
            Some(rest.split('`').next()?.to_owned())
        };
        let within = |name: &str| match path {
            "" | "." => name.to_owned(),
            _ => format!("{path}.{name}"),
        };
        match (named("unknown field `"), named("missing field `")) {
            // serde_path_to_error has already stepped into an unknown field's key.
            (Some(name), _) => ShapeFault {
                // (A key may hold dots itself: `{"a.b": 1}`'s path is `a.b`.)
                path: if path == name || path.ends_with(&format!(".{name}")) {
                    path.to_owned()
                } else {
                    within(&name)
                },
                kind: FaultKind::Unknown,
                field: name,
            },
            (None, Some(name)) => ShapeFault {
                path: within(&name),
                kind: FaultKind::Missing,
                field: name,
            },
            (None, None) => ShapeFault {
                path: path.trim_start_matches('.').to_owned(),
                kind: FaultKind::WrongShape,
                field: String::new(),
            },
        }
    }
}

/// Why a body's bytes did not read as its type.
#[derive(Debug)]
pub enum Unparsed {
    /// Not JSON at all; the refusal quotes serde's reason.
    Syntax(ApiError),
    /// JSON, but not an object.
    NotAnObject,
    /// An object with a value serde could not read.
    Shape(ShapeFault),
}

/// The refusal of a body that is not a JSON object.
pub fn not_an_object() -> ApiError {
    ApiError::bad_request("The request body must be a JSON object.")
}

/// Reads a body's shape from its JSON bytes (already through the bounded pre-scan), leaving
/// the words of a refusal to the caller: [`read_body`] for a [`RequestBody`], and the chat
/// body, which refuses in its rules' order.
pub fn parse_body<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, Unparsed> {
    // serde also reads a struct from an array of its fields in order; a body is an object.
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first.is_some_and(|b| *b != b'{')
        && serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok()
    {
        return Err(Unparsed::NotAnObject);
    }
    let mut json = serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(&mut json).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if inner.is_syntax() || inner.is_eof() {
            Unparsed::Syntax(ApiError::bad_request(format!(
                "The request body is not valid JSON: {inner}"
            )))
        } else {
            Unparsed::Shape(ShapeFault::of(&path, &inner.to_string()))
        }
    })
}

/// Reads a value's shape from any serde source of its fields; the caller has made sure it is
/// an object.
pub fn parse_from<'de, T: serde::Deserialize<'de>, D: serde::Deserializer<'de>>(
    fields: D,
) -> Result<T, ShapeFault> {
    serde_path_to_error::deserialize(fields)
        .map_err(|e| ShapeFault::of(&e.path().to_string(), &e.into_inner().to_string()))
}

/// Reads a typed body from any serde source of its fields (a JSON object already parsed, or a
/// form's fields made into one, as `api::extract::JsonOrForm` does), with [`read_body`]'s
/// refusals. The caller has made sure it is an object.
pub fn read_from<'de, T: RequestBody, D: serde::Deserializer<'de>>(fields: D) -> ApiResult<T> {
    match parse_from(fields) {
        Ok(body) => T::check(body),
        Err(fault) => Err(shape_error::<T>(fault)),
    }
}

/// Reads a typed body from its JSON bytes (already through the bounded pre-scan).
pub fn read_body<T: RequestBody>(bytes: &[u8]) -> ApiResult<T> {
    match parse_body::<T>(bytes) {
        Ok(body) => body.check(),
        Err(Unparsed::Syntax(refusal)) => Err(refusal),
        Err(Unparsed::NotAnObject) => Err(not_an_object()),
        Err(Unparsed::Shape(fault)) => Err(shape_error::<T>(fault)),
    }
}

fn shape_error<T: RequestBody>(fault: ShapeFault) -> ApiError {
    if let Some(refusal) = T::refusal(&fault) {
        return refusal;
    }
    if fault.kind == FaultKind::Unknown {
        let name = &fault.field;
        return ApiError::invalid(name, format!("Unknown parameter: {name}."));
    }
    // A missing field is named by itself (a struct's field name), a wrong value by its path.
    let (param, path) = match fault.kind {
        FaultKind::Missing => (fault.field.as_str(), fault.field.as_str()),
        _ => (fault.param(), fault.path.as_str()),
    };
    if param.is_empty() {
        return not_an_object();
    }
    let sentence = T::expected(param, path).unwrap_or_else(|| format!("{param} is not valid."));
    ApiError::invalid(param, sentence)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        #[allow(dead_code)]
        kind: String,
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Body {
        #[allow(dead_code)]
        inner: Option<Inner>,
    }

    fn fault(bytes: &str) -> ShapeFault {
        match parse_body::<Body>(bytes.as_bytes()) {
            Err(Unparsed::Shape(fault)) => fault,
            other => panic!("{bytes}: {other:?}"),
        }
    }

    /// Every typed body's refusals start from this reading of serde's errors.
    #[test]
    fn a_fault_names_the_value_and_the_field() {
        let at = |path: &str, kind, field: &str| ShapeFault {
            path: path.into(),
            kind,
            field: field.into(),
        };
        assert_eq!(fault(r#"{"x": 1}"#), at("x", FaultKind::Unknown, "x"));
        // A key that holds a dot is one name, not a path.
        assert_eq!(fault(r#"{"a.b": 1}"#), at("a.b", FaultKind::Unknown, "a.b"));
        assert_eq!(
            fault(r#"{"inner": {"kind": "k", "y": 2}}"#),
            at("inner.y", FaultKind::Unknown, "y")
        );
        assert_eq!(
            fault(r#"{"inner": {}}"#),
            at("inner.kind", FaultKind::Missing, "kind")
        );
        assert_eq!(
            fault(r#"{"inner": {"kind": 3}}"#),
            at("inner.kind", FaultKind::WrongShape, "")
        );
        assert!(matches!(
            parse_body::<Body>(b"[1]"),
            Err(Unparsed::NotAnObject)
        ));
        assert!(matches!(
            parse_body::<Body>(b"{\"inner\":"),
            Err(Unparsed::Syntax(_))
        ));
    }
}
