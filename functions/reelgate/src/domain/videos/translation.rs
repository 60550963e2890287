//! Japanese → English translation of prompts before rendering.
//!
//! Dialogue inside `<d>…</d>` and text depicted in the scene (marked with 「…」, 『…』 or double
//! quotes) must reach the engine exactly as written, whatever the translator does. So those spans
//! are replaced by numbered placeholders before the call, restored after it, and the result is
//! verified: every placeholder exactly once, no Japanese left outside protected spans. Anything
//! else fails closed (`translation_unavailable`).

use crate::ports::translator::{TranslationError, Translator};

/// True for hiragana, katakana (incl. half-width) and CJK ideographs.
pub fn is_japanese_char(c: char) -> bool {
    matches!(c,
        '\u{3040}'..='\u{309F}' | '\u{30A0}'..='\u{30FF}' | '\u{31F0}'..='\u{31FF}' |
        '\u{FF66}'..='\u{FF9F}' | '\u{4E00}'..='\u{9FFF}' | '\u{3400}'..='\u{4DBF}')
}

/// A prompt with its protected spans lifted out.
#[derive(Debug, PartialEq)]
pub struct Protected {
    pub text: String,
    pub spans: Vec<String>,
}

fn placeholder(i: usize) -> String {
    format!("⟦{i}⟧")
}

/// Pairs of span openers and closers, tried in order at each position.
const SPANS: &[(&str, &str)] = &[
    ("<d>", "</d>"),
    ("「", "」"),
    ("『", "』"),
    ("\"", "\""),
    ("“", "”"),
];

/// Lifts `<d>…</d>` and quoted scene text out of `prompt`. An opener without its closer is left
/// as ordinary text.
pub fn protect(prompt: &str) -> Protected {
    let mut text = String::with_capacity(prompt.len());
    let mut spans = Vec::new();
    let mut rest = prompt;
    'outer: while !rest.is_empty() {
        for (open, close) in SPANS {
            if let Some(after) = rest.strip_prefix(open) {
                if let Some(end) = after.find(close) {
                    let whole = &rest[..open.len() + end + close.len()];
                    text.push_str(&placeholder(spans.len()));
                    spans.push(whole.to_owned());
                    rest = &rest[whole.len()..];
                    continue 'outer;
                }
            }
        }
        let c = rest.chars().next().unwrap_or_default();
        text.push(c);
        rest = &rest[c.len_utf8()..];
    }
    Protected { text, spans }
}

/// Puts the spans back, verifying each placeholder appears exactly once.
pub fn restore(translated: &str, spans: &[String]) -> Result<String, TranslationError> {
    let mut out = translated.to_owned();
    for (i, span) in spans.iter().enumerate() {
        let p = placeholder(i);
        let count = out.matches(&p).count();
        if count != 1 {
            return Err(TranslationError::Unfaithful(format!(
                "placeholder {p} appears {count} times"
            )));
        }
        out = out.replacen(&p, span, 1);
    }
    if out.contains('⟦') {
        return Err(TranslationError::Unfaithful(
            "the translation invented a placeholder".into(),
        ));
    }
    Ok(out)
}

/// True when the prompt has Japanese outside its protected spans (so it needs translating).
pub fn needs_translation(prompt: &str) -> bool {
    protect(prompt).text.chars().any(is_japanese_char)
}

/// Translates a prompt for the engine: unchanged when nothing outside protected spans is
/// Japanese; otherwise translated with the spans kept byte for byte.
pub async fn translate_prompt(
    translator: Option<&dyn Translator>,
    prompt: &str,
) -> Result<String, TranslationError> {
    if !needs_translation(prompt) {
        return Ok(prompt.to_owned());
    }
    let translator = translator.ok_or(TranslationError::NotConfigured)?;
    let protected = protect(prompt);
    let translated = translator.translate(&protected.text).await?;
    if translated.chars().any(is_japanese_char) {
        return Err(TranslationError::Unfaithful(
            "Japanese text remains outside protected spans".into(),
        ));
    }
    let restored = restore(&translated, &protected.spans)?;
    for span in &protected.spans {
        if !restored.contains(span.as_str()) {
            return Err(TranslationError::Unfaithful(format!(
                "span {span} was altered"
            )));
        }
    }
    Ok(restored)
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;

    struct EchoUpper;
    #[async_trait]
    impl Translator for EchoUpper {
        async fn translate(&self, text: &str) -> Result<String, TranslationError> {
            Ok(text
                .replace("猫が言う", "The cat says")
                .replace("看板に", "on a sign reading"))
        }
    }

    #[test]
    fn protect_and_restore_roundtrip() {
        let p = protect("猫が言う<d>こんにちは</d>、看板に「営業中」");
        assert_eq!(p.spans, vec!["<d>こんにちは</d>", "「営業中」"]);
        assert_eq!(p.text, "猫が言う⟦0⟧、看板に⟦1⟧");
        assert_eq!(
            restore(&p.text, &p.spans).expect("restore"),
            "猫が言う<d>こんにちは</d>、看板に「営業中」"
        );
        assert!(restore("⟦0⟧ ⟦0⟧ ⟦1⟧", &p.spans).is_err());
        assert!(restore("nothing", &p.spans).is_err());
        assert_eq!(protect("unclosed <d>hi").spans.len(), 0);
    }

    #[test]
    fn only_japanese_outside_spans_needs_translation() {
        assert!(!needs_translation("a cat says <d>こんにちは</d>"));
        assert!(needs_translation("猫 <d>hello</d>"));
        assert!(!needs_translation("plain English"));
    }

    #[tokio::test]
    async fn spans_survive_byte_for_byte() {
        let out = translate_prompt(Some(&EchoUpper), "猫が言う<d>こんにちは</d>")
            .await
            .expect("translated");
        assert_eq!(out, "The cat says<d>こんにちは</d>");
        let err = translate_prompt(None, "猫")
            .await
            .expect_err("no translator");
        assert!(matches!(err, TranslationError::NotConfigured));
        let english = translate_prompt(None, "a dog")
            .await
            .expect("no translation needed");
        assert_eq!(english, "a dog");
    }
}
