//! `${Name}` definition substitutions, as CloudFormation's `DefinitionSubstitutions` applies them.

use crate::error::DefinitionError;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// Every `${Name}` placeholder that occurs anywhere in the definition text.
pub fn placeholders(definition_text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = definition_text;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        match after.find('}') {
            Some(end) if is_name(&after[..end]) => {
                found.insert(after[..end].to_string());
                rest = &after[end + 1..];
            }
            _ => rest = after,
        }
    }
    found
}

fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'))
}

/// Parses the definition text and replaces `${Name}` placeholders inside its string values (and
/// object keys) with `values[Name]`. A placeholder without a value is an error naming it.
pub fn substitute(
    definition_text: &str,
    values: &BTreeMap<String, String>,
) -> Result<Value, DefinitionError> {
    let parsed: Value =
        serde_json::from_str(definition_text).map_err(|e| DefinitionError::Json(e.to_string()))?;
    walk(parsed, values)
}

fn walk(value: Value, values: &BTreeMap<String, String>) -> Result<Value, DefinitionError> {
    Ok(match value {
        Value::String(s) => Value::String(replace(&s, values)?),
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|v| walk(v, values))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => {
            let mut out = serde_json::Map::new();
            for (k, v) in map {
                out.insert(replace(&k, values)?, walk(v, values)?);
            }
            Value::Object(out)
        }
        other => other,
    })
}

fn replace(text: &str, values: &BTreeMap<String, String>) -> Result<String, DefinitionError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find('}') {
            Some(end) if is_name(&after[..end]) => {
                let name = &after[..end];
                let value = values
                    .get(name)
                    .ok_or_else(|| DefinitionError::MissingSubstitution(name.to_string()))?;
                out.push_str(value);
                rest = &after[end + 1..];
            }
            _ => {
                out.push_str("${");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lists_placeholders() {
        let text = r#"{"a": "${QueueUrl}", "b": "x-${Stage}-${QueueUrl}", "c": "${not closed", "d": "${}"}"#;
        let names: Vec<_> = placeholders(text).into_iter().collect();
        assert_eq!(names, vec!["QueueUrl".to_string(), "Stage".to_string()]);
    }

    #[test]
    fn replaces_inside_strings_only_and_keeps_json_valid() {
        let values = BTreeMap::from([
            ("Q".to_string(), "https://q/\"quoted\"".to_string()),
            ("S".to_string(), "dev".to_string()),
        ]);
        let out = substitute(r#"{"a": "${Q}", "b": ["pre-${S}-post", 3]}"#, &values).unwrap();
        assert_eq!(
            out,
            json!({"a": "https://q/\"quoted\"", "b": ["pre-dev-post", 3]})
        );
    }

    #[test]
    fn missing_value_names_the_placeholder() {
        let err = substitute(r#"{"a": "${Missing}"}"#, &BTreeMap::new()).unwrap_err();
        assert_eq!(err, DefinitionError::MissingSubstitution("Missing".into()));
        assert!(err.to_string().contains("${Missing}"));
    }
}
