//! Intrinsic functions: `States.Format`, `States.StringToJson`, `States.JsonToString`,
//! `States.Array`.

use crate::error::StatesError;
use crate::path::JsonPath;
use serde_json::Value;

/// A parsed intrinsic function call.
#[derive(Debug, Clone, PartialEq)]
pub struct Intrinsic {
    function: Function,
    args: Vec<Arg>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Function {
    Format,
    StringToJson,
    JsonToString,
    Array,
}

#[derive(Debug, Clone, PartialEq)]
enum Arg {
    /// A quoted string; `placeholders` are the byte offsets of unescaped `{}` in `value`.
    Str {
        value: String,
        placeholders: Vec<usize>,
    },
    Literal(Value),
    Path(JsonPath),
    Call(Box<Intrinsic>),
}

impl Intrinsic {
    /// Whether a `.$` value is an intrinsic call rather than a path.
    pub fn looks_like_call(text: &str) -> bool {
        text.trim_start().starts_with("States.")
    }

    /// Parses `States.Name(args…)`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let chars: Vec<char> = text.trim().chars().collect();
        let mut parser = Parser { chars, pos: 0 };
        let call = parser.call()?;
        parser.skip_ws();
        if parser.pos != parser.chars.len() {
            return Err(format!("unexpected text after the call in {text:?}"));
        }
        Ok(call)
    }

    /// Evaluates against the state's input and the context object.
    pub fn eval(&self, input: &Value, context: &Value) -> Result<Value, StatesError> {
        let mut values = Vec::with_capacity(self.args.len());
        for arg in &self.args {
            values.push(match arg {
                Arg::Str { value, .. } => Value::String(value.clone()),
                Arg::Literal(v) => v.clone(),
                Arg::Path(p) => p.get(input, context).cloned().ok_or_else(|| {
                    StatesError::runtime(format!(
                        "the JsonPath {p} in an intrinsic function could not be found in the input"
                    ))
                })?,
                Arg::Call(call) => call.eval(input, context)?,
            });
        }
        match self.function {
            Function::Array => Ok(Value::Array(values)),
            Function::JsonToString => {
                let value = single(values, "States.JsonToString")?;
                serde_json::to_string(&value)
                    .map(Value::String)
                    .map_err(|e| StatesError::intrinsic(e.to_string()))
            }
            Function::StringToJson => match single(values, "States.StringToJson")? {
                Value::String(s) => serde_json::from_str(&s).map_err(|e| {
                    StatesError::intrinsic(format!("States.StringToJson: not JSON: {e}"))
                }),
                other => Err(StatesError::intrinsic(format!(
                    "States.StringToJson needs a string, got {other}"
                ))),
            },
            Function::Format => {
                let Some(Arg::Str {
                    value: template,
                    placeholders,
                }) = self.args.first()
                else {
                    return Err(StatesError::intrinsic(
                        "States.Format needs a string literal template",
                    ));
                };
                let rest = &values[1..];
                if rest.len() != placeholders.len() {
                    return Err(StatesError::intrinsic(format!(
                        "States.Format template has {} placeholders but {} arguments were given",
                        placeholders.len(),
                        rest.len()
                    )));
                }
                let mut out = String::new();
                let mut last = 0;
                for (offset, value) in placeholders.iter().zip(rest) {
                    out.push_str(&template[last..*offset]);
                    match value {
                        Value::String(s) => out.push_str(s),
                        Value::Number(_) | Value::Bool(_) | Value::Null => {
                            out.push_str(&value.to_string())
                        }
                        other => {
                            return Err(StatesError::intrinsic(format!(
                                "States.Format arguments must be strings, numbers, booleans or \
                                 null, got {other}"
                            )))
                        }
                    }
                    last = offset + 2;
                }
                out.push_str(&template[last..]);
                Ok(Value::String(out))
            }
        }
    }
}

fn single(mut values: Vec<Value>, name: &str) -> Result<Value, StatesError> {
    if values.len() != 1 {
        return Err(StatesError::intrinsic(format!(
            "{name} takes exactly one argument, got {}",
            values.len()
        )));
    }
    Ok(values.remove(0))
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += 1;
        }
    }

    fn expect(&mut self, c: char) -> Result<(), String> {
        self.skip_ws();
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(format!(
                "expected {c:?} at character {} of the intrinsic call",
                self.pos
            ))
        }
    }

    fn call(&mut self) -> Result<Intrinsic, String> {
        self.skip_ws();
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '.')
        {
            self.pos += 1;
        }
        let name: String = self.chars[start..self.pos].iter().collect();
        let function = match name.as_str() {
            "States.Format" => Function::Format,
            "States.StringToJson" => Function::StringToJson,
            "States.JsonToString" => Function::JsonToString,
            "States.Array" => Function::Array,
            other => return Err(format!("intrinsic function {other:?} is not supported")),
        };
        self.expect('(')?;
        let mut args = Vec::new();
        self.skip_ws();
        if self.peek() == Some(')') {
            self.pos += 1;
        } else {
            loop {
                args.push(self.arg()?);
                self.skip_ws();
                match self.peek() {
                    Some(',') => self.pos += 1,
                    Some(')') => {
                        self.pos += 1;
                        break;
                    }
                    _ => return Err(format!("expected ',' or ')' in a call to {name}")),
                }
            }
        }
        match function {
            Function::Format => match args.first() {
                Some(Arg::Str { placeholders, .. }) if placeholders.len() + 1 == args.len() => {}
                Some(Arg::Str { placeholders, .. }) => {
                    return Err(format!(
                        "States.Format template has {} placeholders but {} arguments follow it",
                        placeholders.len(),
                        args.len() - 1
                    ))
                }
                _ => return Err("States.Format needs a string literal template first".into()),
            },
            Function::StringToJson | Function::JsonToString if args.len() != 1 => {
                return Err(format!("{name} takes exactly one argument"));
            }
            Function::JsonToString if !matches!(args.first(), Some(Arg::Path(_))) => {
                return Err("States.JsonToString takes a path".into());
            }
            _ => {}
        }
        Ok(Intrinsic { function, args })
    }

    fn arg(&mut self) -> Result<Arg, String> {
        self.skip_ws();
        match self.peek() {
            Some('\'') => self.string(),
            Some('$') => {
                let start = self.pos;
                let mut in_quote = false;
                while let Some(c) = self.peek() {
                    if c == '\'' {
                        in_quote = !in_quote;
                    } else if !in_quote && (c == ',' || c == ')' || c.is_whitespace()) {
                        break;
                    }
                    self.pos += 1;
                }
                let text: String = self.chars[start..self.pos].iter().collect();
                JsonPath::parse(&text).map(Arg::Path)
            }
            Some('S') => self.call().map(|c| Arg::Call(Box::new(c))),
            Some(_) => {
                let start = self.pos;
                while self
                    .peek()
                    .is_some_and(|c| c != ',' && c != ')' && !c.is_whitespace())
                {
                    self.pos += 1;
                }
                let text: String = self.chars[start..self.pos].iter().collect();
                match serde_json::from_str::<Value>(&text) {
                    Ok(v @ (Value::Number(_) | Value::Bool(_) | Value::Null)) => {
                        Ok(Arg::Literal(v))
                    }
                    _ => Err(format!("argument {text:?} is not a literal, path or call")),
                }
            }
            None => Err("unexpected end of the intrinsic call".into()),
        }
    }

    fn string(&mut self) -> Result<Arg, String> {
        self.pos += 1; // opening quote
        let mut value = String::new();
        let mut placeholders = Vec::new();
        loop {
            match self.peek() {
                None => return Err("unterminated string literal".into()),
                Some('\'') => {
                    self.pos += 1;
                    break;
                }
                Some('\\') => {
                    let escaped = self
                        .chars
                        .get(self.pos + 1)
                        .copied()
                        .ok_or("unterminated escape")?;
                    if !matches!(escaped, '\'' | '{' | '}' | '\\') {
                        return Err(format!(
                            "unsupported escape \\{escaped} in a string literal"
                        ));
                    }
                    value.push(escaped);
                    self.pos += 2;
                }
                Some('{') if self.chars.get(self.pos + 1) == Some(&'}') => {
                    placeholders.push(value.len());
                    value.push_str("{}");
                    self.pos += 2;
                }
                Some(c) => {
                    value.push(c);
                    self.pos += 1;
                }
            }
        }
        Ok(Arg::Str {
            value,
            placeholders,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn eval(text: &str, input: Value) -> Result<Value, StatesError> {
        Intrinsic::parse(text)
            .unwrap()
            .eval(&input, &json!({"Execution": {"Id": "exec-1"}}))
    }

    #[test]
    fn format_substitutes_in_order_and_keeps_escaped_braces() {
        let out = eval(
            r"States.Format('Hello {}, you are {} \{literal\} \'q\'', $.name, $.age)",
            json!({"name": "Ada", "age": 36}),
        )
        .unwrap();
        assert_eq!(out, json!("Hello Ada, you are 36 {literal} 'q'"));
        assert_eq!(
            eval("States.Format('id={}', $$.Execution.Id)", json!({})).unwrap(),
            json!("id=exec-1")
        );
    }

    #[test]
    fn format_arity_is_checked_when_parsing() {
        assert!(Intrinsic::parse("States.Format('{} {}', $.a)").is_err());
        assert!(Intrinsic::parse("States.Format($.a)").is_err());
    }

    #[test]
    fn json_round_trip_and_array() {
        let input = json!({"o": {"a": [1, 2]}, "s": "{\"k\":true}"});
        assert_eq!(
            eval("States.JsonToString($.o)", input.clone()).unwrap(),
            json!("{\"a\":[1,2]}")
        );
        assert_eq!(
            eval("States.StringToJson($.s)", input.clone()).unwrap(),
            json!({"k": true})
        );
        assert_eq!(
            eval(
                "States.Array('x', 1, true, null, $.o.a, States.Array())",
                input
            )
            .unwrap(),
            json!(["x", 1, true, null, [1, 2], []])
        );
    }

    #[test]
    fn failures_have_the_right_names() {
        let err = eval("States.StringToJson($.s)", json!({"s": "{nope"})).unwrap_err();
        assert_eq!(err.error, "States.IntrinsicFailure");
        let err = eval("States.StringToJson($.missing)", json!({})).unwrap_err();
        assert_eq!(err.error, "States.Runtime");
        assert!(Intrinsic::parse("States.MathRandom(1, 2)").is_err());
        assert!(Intrinsic::parse("States.Array('unterminated)").is_err());
    }
}
