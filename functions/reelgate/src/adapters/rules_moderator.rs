//! The configurable rule-based moderator, the local default: blocked terms per category matched
//! as whole words (case-insensitive) or, for scripts without spaces, as substrings; images must
//! decode and stay within size bounds. Rules come from `REELGATE_MODERATION_RULES` (a TOML file)
//! or the built-in list.

use crate::ports::moderator::{ModerationError, ModerationInput, Moderator, Verdict};
use async_trait::async_trait;
use serde::Deserialize;
use std::collections::BTreeMap;

pub const DEFAULT_RULES: &str = r#"
# category = [terms]; a prompt containing a term (as a word) is blocked in that category.
[blocked]
# Japanese terms match as substrings (the script has no spaces); prompts are moderated as
# written, before translation.
"violence/graphic" = ["gore", "dismember", "decapitate", "mutilate", "惨殺", "斬首", "バラバラ死体", "四肢切断"]
"sexual/minors" = ["child porn", "csam", "児童ポルノ", "児童性的虐待"]
"self-harm" = ["suicide tutorial", "how to self-harm", "自殺の方法", "自傷のやり方"]
"weapons/mass-harm" = ["build a bomb", "nerve agent", "bioweapon", "爆弾の作り方", "神経ガス", "生物兵器"]
"#;

#[derive(Debug, Deserialize)]
struct RuleFile {
    blocked: BTreeMap<String, Vec<String>>,
    /// Images larger than this many pixels on a side are refused as unmoderatable.
    #[serde(default = "default_max_side")]
    max_image_side: u32,
}

fn default_max_side() -> u32 {
    16_384
}

pub struct RuleModerator {
    blocked: Vec<(String, Vec<String>)>,
    max_image_side: u32,
}

impl Default for RuleModerator {
    /// The built-in rules.
    fn default() -> Self {
        Self::parse(DEFAULT_RULES).unwrap_or(RuleModerator {
            blocked: Vec::new(),
            max_image_side: default_max_side(),
        })
    }
}

impl RuleModerator {
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let file: RuleFile = toml::from_str(text)?;
        Ok(RuleModerator {
            blocked: file
                .blocked
                .into_iter()
                .map(|(cat, terms)| (cat, terms.into_iter().map(|t| t.to_lowercase()).collect()))
                .collect(),
            max_image_side: file.max_image_side,
        })
    }

    /// The rules of `path` (`REELGATE_MODERATION_RULES`), else the built-in ones.
    pub fn from_rules_file(path: Option<&std::path::Path>) -> anyhow::Result<Self> {
        match path {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    anyhow::anyhow!("reading the moderation rules {}: {e}", path.display())
                })?;
                Self::parse(&text)
            }
            None => Self::parse(DEFAULT_RULES),
        }
    }

    fn text_categories(&self, prompt: &str) -> Vec<String> {
        let lower = prompt.to_lowercase();
        let words: Vec<&str> = lower
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect();
        let joined = format!(" {} ", words.join(" "));
        self.blocked
            .iter()
            .filter(|(_, terms)| {
                terms.iter().any(|t| {
                    if t.is_ascii() {
                        joined.contains(&format!(" {t} "))
                    } else {
                        lower.contains(t.as_str())
                    }
                })
            })
            .map(|(cat, _)| cat.clone())
            .collect()
    }
}

#[async_trait]
impl Moderator for RuleModerator {
    async fn check(&self, input: &ModerationInput) -> Result<Verdict, ModerationError> {
        let mut categories = self.text_categories(&input.prompt);
        for image in &input.images {
            match reelgate_media::decode_image(&image.bytes) {
                Ok(img) if img.width().max(img.height()) <= self.max_image_side => {}
                Ok(_) => categories.push("image/oversized".into()),
                // An image the moderator cannot read cannot be cleared: fail closed.
                Err(e) => {
                    return Err(ModerationError::Unavailable(format!(
                        "image {} could not be decoded for moderation: {e}",
                        image.file_id
                    )))
                }
            }
        }
        categories.dedup();
        Ok(Verdict {
            flagged: !categories.is_empty(),
            categories,
            moderator: "rules".into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn built_in_rules_block_japanese_prompts_as_written() {
        let m = RuleModerator::default();
        for prompt in [
            "夜の路地で惨殺される男",
            "爆弾の作り方を説明する動画",
            "児童ポルノ",
        ] {
            let input = ModerationInput {
                prompt: prompt.into(),
                images: vec![],
            };
            assert!(m.check(&input).await.expect("verdict").flagged, "{prompt}");
        }
        let calm = ModerationInput {
            prompt: "川面に浮かぶ紙灯籠".into(),
            images: vec![],
        };
        assert!(!m.check(&calm).await.expect("verdict").flagged);
    }

    #[tokio::test]
    async fn terms_match_as_words_only() {
        let m = RuleModerator::parse(DEFAULT_RULES).expect("rules");
        let check = |p: &str| {
            let input = ModerationInput {
                prompt: p.into(),
                images: vec![],
            };
            let m = &m;
            async move { m.check(&input).await.expect("verdict") }
        };
        assert!(check("Gore everywhere").await.flagged);
        assert_eq!(
            check("a scene full of GORE.").await.categories,
            vec!["violence/graphic"]
        );
        assert!(!check("a gorgeous sunset over the bay").await.flagged);
        assert!(!check("a cat on a sofa").await.flagged);
    }
}
