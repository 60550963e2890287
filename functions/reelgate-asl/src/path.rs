//! The JsonPath subset: `$`, `$.a.b`, `$.a[0]`, `$['a b']`, and the same rooted at `$$`
//! (the context object).

use serde_json::{Map, Value};
use std::fmt;

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// `.name` or `['name']`
    Field(String),
    /// `[n]`
    Index(usize),
}

/// Which document a path reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Root {
    /// `$`: the state's (effective) input.
    Input,
    /// `$$`: the context object.
    Context,
}

/// A parsed reference path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonPath {
    root: Root,
    segments: Vec<Segment>,
    text: String,
}

impl fmt::Display for JsonPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl JsonPath {
    /// Parses a path; the message says what is wrong.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (root, rest) = if let Some(rest) = text.strip_prefix("$$") {
            (Root::Context, rest)
        } else if let Some(rest) = text.strip_prefix('$') {
            (Root::Input, rest)
        } else {
            return Err(format!("path {text:?} must start with '$'"));
        };
        let chars: Vec<char> = rest.chars().collect();
        let mut segments = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            match chars[i] {
                '.' => {
                    i += 1;
                    let start = i;
                    while i < chars.len() && chars[i] != '.' && chars[i] != '[' {
                        i += 1;
                    }
                    let name: String = chars[start..i].iter().collect();
                    if name.is_empty() {
                        return Err(format!("path {text:?} has an empty field name"));
                    }
                    if name.contains(['*', '?', '@', ' ', ']', '\'', '"', '(', ')']) {
                        return Err(format!(
                            "path {text:?}: field {name:?} uses syntax outside the supported subset"
                        ));
                    }
                    segments.push(Segment::Field(name));
                }
                '[' => {
                    let close = chars[i..]
                        .iter()
                        .position(|c| *c == ']')
                        .map(|p| p + i)
                        .ok_or_else(|| format!("path {text:?} has an unclosed '['"))?;
                    let inner: String = chars[i + 1..close].iter().collect();
                    if let Some(quoted) =
                        inner.strip_prefix('\'').and_then(|s| s.strip_suffix('\''))
                    {
                        if quoted.is_empty() {
                            return Err(format!("path {text:?} has an empty field name"));
                        }
                        segments.push(Segment::Field(quoted.to_string()));
                    } else {
                        let index: usize = inner.parse().map_err(|_| {
                            format!(
                                "path {text:?}: [{inner}] is outside the supported subset \
                                 (only [n] and ['name'])"
                            )
                        })?;
                        segments.push(Segment::Index(index));
                    }
                    i = close + 1;
                }
                other => {
                    return Err(format!("path {text:?}: unexpected character {other:?}"));
                }
            }
        }
        Ok(Self {
            root,
            segments,
            text: text.to_string(),
        })
    }

    /// The document this path reads.
    pub fn root(&self) -> Root {
        self.root
    }

    /// The steps after the root.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// The path as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Reads the value at this path in `input` (or `context` for `$$` paths); `None` when absent.
    pub fn get<'a>(&self, input: &'a Value, context: &'a Value) -> Option<&'a Value> {
        let mut current = match self.root {
            Root::Input => input,
            Root::Context => context,
        };
        for segment in &self.segments {
            current = match (segment, current) {
                (Segment::Field(name), Value::Object(map)) => map.get(name)?,
                (Segment::Index(index), Value::Array(items)) => items.get(*index)?,
                _ => return None,
            };
        }
        Some(current)
    }

    /// Writes `value` at this path inside `target`, creating missing objects on the way, as
    /// `ResultPath` does. Fails when the path crosses a value that is not an object (or an array
    /// with that index), or when it is a `$$` path.
    pub fn set(&self, target: Value, value: Value) -> Result<Value, String> {
        if self.root == Root::Context {
            return Err(format!(
                "{} cannot be written: it refers to the context object",
                self.text
            ));
        }
        if self.segments.is_empty() {
            return Ok(value);
        }
        let mut target = target;
        set_in(&mut target, &self.segments, value).map_err(|at| {
            format!(
                "unable to apply ResultPath {}: the value at step {at} is not an object",
                self.text
            )
        })?;
        Ok(target)
    }
}

fn set_in(current: &mut Value, segments: &[Segment], value: Value) -> Result<(), usize> {
    let Some((first, rest)) = segments.split_first() else {
        *current = value;
        return Ok(());
    };
    let slot = match (first, current) {
        (Segment::Field(name), Value::Object(map)) => {
            if rest.is_empty() {
                map.insert(name.clone(), value);
                return Ok(());
            }
            map.entry(name.clone())
                .or_insert_with(|| Value::Object(Map::new()))
        }
        (Segment::Index(index), Value::Array(items)) => match items.get_mut(*index) {
            Some(slot) => slot,
            None => return Err(0),
        },
        _ => return Err(0),
    };
    set_in(slot, rest, value).map_err(|depth| depth + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_and_reads_the_subset() {
        let doc = json!({"a": {"b": [10, {"c": "x"}]}, "odd key": 1});
        let ctx = json!({"Execution": {"Id": "e"}});
        let get = |p: &str| JsonPath::parse(p).unwrap().get(&doc, &ctx).cloned();
        assert_eq!(get("$"), Some(doc.clone()));
        assert_eq!(get("$.a.b[0]"), Some(json!(10)));
        assert_eq!(get("$.a.b[1].c"), Some(json!("x")));
        assert_eq!(get("$['odd key']"), Some(json!(1)));
        assert_eq!(get("$.missing"), None);
        assert_eq!(get("$.a.b[7]"), None);
        assert_eq!(get("$$.Execution.Id"), Some(json!("e")));
    }

    #[test]
    fn rejects_what_is_outside_the_subset() {
        for bad in ["a.b", "$.", "$..a", "$.a[*]", "$.a[?(@.x)]", "$[", "$.a b"] {
            assert!(JsonPath::parse(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn set_creates_objects_and_refuses_scalars() {
        let p = JsonPath::parse("$.x.y").unwrap();
        assert_eq!(
            p.set(json!({"k": 1}), json!(2)).unwrap(),
            json!({"k": 1, "x": {"y": 2}})
        );
        assert!(p.set(json!({"x": "scalar"}), json!(2)).is_err());
        assert!(p.set(json!("top"), json!(2)).is_err());
        assert_eq!(
            JsonPath::parse("$")
                .unwrap()
                .set(json!(1), json!(2))
                .unwrap(),
            json!(2)
        );
    }
}
