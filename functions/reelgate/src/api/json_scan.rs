//! A bounded pre-scan of every JSON request body, run over the raw bytes before they are
//! parsed. A parsed `serde_json::Value` costs about 80 bytes per value however short the value
//! is written, so `[0,0,0,…]` costs forty times its size once parsed (a 24 MiB array of zeros
//! took the server to 925 MiB). The scan counts values and nesting in one pass without
//! allocating; a body over the bounds is refused before anything is built from it, and so a
//! parsed body costs at most its own bytes plus [`VALUE_COST_BOUND`] per allowed value
//! (docs/security.md §9).

use crate::domain::error::ApiError;

/// Values any body may hold, however short it is: a long conversation or a large tool list.
pub const BASE_VALUES: usize = 10_000;

/// One more value is allowed per this many bytes of body.
pub const BYTES_PER_EXTRA_VALUE: usize = 64;

/// Deepest nesting of arrays and objects (serde_json's own recursion limit is 128).
pub const MAX_DEPTH: usize = 64;

/// What one parsed value costs at most: the `Value` itself plus, in an object, its key's
/// `String` and the map's entry and index (the bound stated in docs/security.md).
pub const VALUE_COST_BOUND: usize = 128;

/// The values a body of `len` bytes may hold.
pub fn allowed_values(len: usize) -> usize {
    BASE_VALUES + len / BYTES_PER_EXTRA_VALUE
}

/// Refuses a body holding more values than [`allowed_values`] or nested deeper than
/// [`MAX_DEPTH`]. Everything else (including malformed JSON, which the parser reports better)
/// passes.
pub fn check(body: &[u8]) -> Result<(), ApiError> {
    let allowed = allowed_values(body.len());
    match count_values(body, allowed) {
        Ok(_) => Ok(()),
        Err(Refusal::TooDeep) => Err(too_complex(format!(
            "The JSON body nests arrays and objects deeper than {MAX_DEPTH} levels."
        ))),
        Err(Refusal::TooMany) => Err(too_complex(format!(
            "The JSON body holds more than {allowed} values (at most {BASE_VALUES}, plus one per \
             {BYTES_PER_EXTRA_VALUE} bytes of body)."
        ))),
    }
}

enum Refusal {
    TooDeep,
    TooMany,
}

/// Counts the values (keys included: each becomes a `String`) up to `allowed`.
fn count_values(body: &[u8], allowed: usize) -> Result<usize, Refusal> {
    let mut values = 0usize;
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    // True where a value may start: at the beginning, after `[`, `{`, `,` or `:`.
    let mut expecting_value = true;
    for &byte in body {
        if in_string {
            if escaped {
                escaped = false;
            } else if byte == b'\\' {
                escaped = true;
            } else if byte == b'"' {
                in_string = false;
            }
            continue;
        }
        match byte {
            b' ' | b'\t' | b'\n' | b'\r' => continue,
            b'"' => {
                in_string = true;
                values += 1;
            }
            b'[' | b'{' => {
                depth += 1;
                values += 1;
                if depth > MAX_DEPTH {
                    return Err(Refusal::TooDeep);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ if expecting_value => values += 1,
            _ => {}
        }
        expecting_value = matches!(byte, b'[' | b'{' | b',' | b':');
        if values > allowed {
            return Err(Refusal::TooMany);
        }
    }
    Ok(values)
}

fn too_complex(message: String) -> ApiError {
    ApiError::new(
        crate::domain::error::ErrorKind::InvalidRequest,
        "json_too_complex",
        message,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dense_array_of_zeros_is_refused() {
        let body = format!("[{}0]", "0,".repeat(200_000));
        let err = check(body.as_bytes()).unwrap_err();
        assert_eq!(err.code, "json_too_complex");
    }

    #[test]
    fn ordinary_bodies_pass() {
        let messages: Vec<_> = (0..2_000)
            .map(|i| serde_json::json!({"role": "user", "content": format!("message {i}")}))
            .collect();
        let body = serde_json::to_vec(&serde_json::json!({"model": "m", "messages": messages}))
            .expect("json");
        check(&body).expect("a 2,000-message conversation passes");
        let image = format!(
            "{{\"content\":[{{\"type\":\"image_url\",\"image_url\":{{\"url\":\"data:image/png;base64,{}\"}}}}]}}",
            "QUJD".repeat(2_000_000)
        );
        check(image.as_bytes()).expect("one long string is one value");
    }

    #[test]
    fn strings_hide_their_brackets_and_escapes() {
        let body = format!(r#"{{"a":"{}\"[[[[","b":1}}"#, "[{,:".repeat(100_000));
        check(body.as_bytes()).expect("brackets inside strings are not values");
    }

    #[test]
    fn deep_nesting_is_refused() {
        let body = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert_eq!(check(body.as_bytes()).unwrap_err().code, "json_too_complex");
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        check(ok.as_bytes()).expect("at the limit");
    }

    #[test]
    fn every_value_and_key_is_counted() {
        // The object, two keys, the array, four scalars.
        let body = br#"{"a": [1, true, null], "b": -2.5e3}"#;
        assert!(matches!(count_values(body, 100), Ok(8)));
        assert!(matches!(count_values(body, 7), Err(Refusal::TooMany)));
        assert!(matches!(count_values(b"\"x\\\"]\"", 100), Ok(1)));
    }
}
