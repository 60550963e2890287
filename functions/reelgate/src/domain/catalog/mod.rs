//! The catalog: plans, video models (pricing, engines), chat models (capabilities, reasoning
//! efforts, upstreams, token prices), the terms version. Configuration (TOML) from
//! `REELGATE_CATALOG` or the built-in `catalog.default.toml` (docs/configuration.md).//!
//! The catalog's document and its checks are here; video models (`video_models`), their engines
//! (`engine_config`) and chat models with their upstreams (`chat_models`) have files of their own.

mod chat_models;
mod engine_config;
pub mod hosted_models;
pub mod native_renders;
pub mod providers;
mod video_models;

pub use chat_models::{ChatModel, Deployment, UpstreamConfig};
pub use engine_config::{DurationRange, EngineConfig, ENGINE_KINDS};
pub use video_models::{
    kind_inputs, Capabilities, OperationSupport, PricingRow, VideoModel, VideoOperations,
    ASPECT_RATIOS, INPUTS,
};

use native_renders::NativeRenders;
use serde::{Deserialize, Serialize};

pub const DEFAULT_CATALOG: &str = include_str!("catalog.default.toml");

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Catalog {
    /// The current Video Service Terms version; agreement applies to it.
    pub terms_version: String,
    #[serde(default)]
    pub plans: Vec<Plan>,
    #[serde(default)]
    pub video_models: Vec<VideoModel>,
    #[serde(default)]
    pub engines: Vec<EngineConfig>,
    #[serde(default)]
    pub chat_models: Vec<ChatModel>,
    #[serde(default)]
    pub upstreams: Vec<UpstreamConfig>,
    /// The terms text per version, in English and Japanese (the console shows it).
    #[serde(default)]
    pub terms: Vec<TermsText>,
    /// How requests move between a chat model's deployments.
    #[serde(default)]
    pub routing: RoutingPolicy,
}

/// When a deployment is skipped and for how long (docs/traffic-control.md).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RoutingPolicy {
    /// Failures in a row (5xx, timeouts, unreachable) that take a deployment out.
    pub failures_before_cooldown: u32,
    /// How long a deployment stays out after that (a 429 takes it out at once, for its
    /// `Retry-After` when it gives one, else for this long).
    pub cooldown_secs: u64,
    /// Longest wait for a stream's first chunk before the next deployment is tried.
    pub first_byte_timeout_secs: u64,
}

impl Default for RoutingPolicy {
    fn default() -> Self {
        RoutingPolicy {
            failures_before_cooldown: 3,
            cooldown_secs: 30,
            first_byte_timeout_secs: 60,
        }
    }
}

/// One version of the Video Service Terms, in the console's two languages.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TermsText {
    pub version: String,
    pub en: String,
    pub ja: String,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    pub id: String,
    /// Renders admitted and not yet finished, at most.
    pub max_concurrent_renders: u32,
    /// Rate limits of each API key of an organization on this plan (a key's own overrides win).
    #[serde(default)]
    pub key_limits: RateLimits,
    /// Rate limits of the whole organization, all keys and the console together.
    #[serde(default)]
    pub org_limits: RateLimits,
}

/// Per-minute limits (docs/traffic-control.md); an absent one is unlimited.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RateLimits {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_per_minute: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_minute: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub video_creates_per_minute: Option<u64>,
}

#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("the catalog is not valid TOML: {0}")]
    Parse(String),
    #[error("the catalog is inconsistent: {0}")]
    Inconsistent(String),
    #[error("cannot read the catalog {path}: {error}")]
    Read { path: String, error: String },
}

impl Catalog {
    pub fn parse(text: &str) -> Result<Self, CatalogError> {
        let catalog: Catalog =
            toml::from_str(text).map_err(|e| CatalogError::Parse(e.to_string()))?;
        catalog.check()?;
        Ok(catalog)
    }

    /// The catalog file at `path` (`REELGATE_CATALOG`), else the built-in default.
    pub fn load(path: Option<&std::path::Path>) -> Result<Self, CatalogError> {
        match path {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| CatalogError::Read {
                    path: path.display().to_string(),
                    error: e.to_string(),
                })?;
                Self::parse(&text)
            }
            None => Self::parse(DEFAULT_CATALOG),
        }
    }

    fn check(&self) -> Result<(), CatalogError> {
        let bad = |m: String| Err(CatalogError::Inconsistent(m));
        match self.terms_text(&self.terms_version) {
            Some(t) if !t.en.trim().is_empty() && !t.ja.trim().is_empty() => {}
            _ => {
                return bad(format!(
                    "the terms version {v} has no text: add a [[terms]] entry with \
                     version = \"{v}\" and its text in en and ja",
                    v = self.terms_version
                ))
            }
        }
        for m in &self.video_models {
            if m.pricing.is_empty() {
                return bad(format!("video model {} has no pricing row", m.id));
            }
            if let Some(inputs) = &m.inputs {
                for i in inputs {
                    if !INPUTS.iter().any(|(name, _)| name == i) {
                        return bad(format!(
                            "video model {} names unknown input {i} (known: first_frame, \
                             last_frame, reference_images, reference_videos, reference_audio)",
                            m.id
                        ));
                    }
                    if let Some(engine) = m.engine.as_deref().and_then(|e| self.engine(e)) {
                        if !engine.inputs().contains(&i.as_str()) {
                            return bad(format!(
                                "video model {} claims input {i}, which a {} engine cannot pass on",
                                m.id, engine.kind
                            ));
                        }
                    }
                }
            }
            if let Some(ratios) = &m.aspect_ratios {
                if ratios.is_empty() {
                    return bad(format!("video model {} renders no aspect ratio", m.id));
                }
                if let Some(r) = ratios.iter().find(|r| !ASPECT_RATIOS.contains(&r.as_str())) {
                    return bad(format!(
                        "video model {} names unknown aspect ratio {r} (known: {})",
                        m.id,
                        ASPECT_RATIOS.join(", ")
                    ));
                }
            }
            for p in &m.plans {
                if self.plan(p).is_none() {
                    return bad(format!("video model {} names unknown plan {p}", m.id));
                }
            }
            for row in &m.pricing {
                if row.per_second.is_sign_negative()
                    || row.currency != row.currency.to_ascii_lowercase()
                {
                    return bad(format!(
                        "video model {}: prices are non-negative, currencies lower case",
                        m.id
                    ));
                }
            }
        }
        for e in &self.engines {
            if !ENGINE_KINDS.contains(&e.kind.as_str()) {
                return bad(format!(
                    "engine {} has unknown kind {} (expected one of {})",
                    e.id,
                    e.kind,
                    ENGINE_KINDS.join(", ")
                ));
            }
            if let Some(shape) = e.request_shape.as_deref() {
                if !["openai", "reelgate"].contains(&shape) {
                    return bad(format!(
                        "engine {}: request_shape is openai or reelgate, not {shape}",
                        e.id
                    ));
                }
            }
            if let Some(cancel) = e.cancel.as_deref() {
                if !["cancel", "delete"].contains(&cancel) {
                    return bad(format!(
                        "engine {}: cancel is cancel or delete, not {cancel}",
                        e.id
                    ));
                }
            }
            if let Some(problem) = e.native_problem() {
                return bad(format!("engine {}: {problem}", e.id));
            }
        }
        for c in &self.chat_models {
            if self.video_models.iter().any(|v| v.id == c.id) {
                return bad(format!("{} is both a chat and a video model", c.id));
            }
            match (c.upstream.is_empty(), c.deployments.is_empty()) {
                (true, true) => {
                    return bad(format!(
                        "chat model {} has neither an upstream nor deployments",
                        c.id
                    ))
                }
                (false, false) => {
                    return bad(format!(
                        "chat model {} has both an upstream and deployments: list the upstream \
                         as one of its deployments",
                        c.id
                    ))
                }
                _ => {}
            }
            let deployments = c.deployments();
            if deployments.iter().all(|d| d.weight == 0) {
                return bad(format!(
                    "chat model {}: at least one deployment needs a weight above 0",
                    c.id
                ));
            }
            for d in &deployments {
                if !self.upstreams.iter().any(|u| u.id == d.upstream) {
                    return bad(format!(
                        "chat model {} names unknown upstream {}",
                        c.id, d.upstream
                    ));
                }
                let lacking = |offered: &Option<Vec<String>>, declared: &[String]| {
                    offered
                        .as_ref()
                        .and_then(|offered| declared.iter().find(|x| !offered.contains(x)).cloned())
                };
                if let Some(missing) = lacking(&d.capabilities, &c.capabilities)
                    .or_else(|| lacking(&d.reasoning_efforts, &c.reasoning_efforts))
                {
                    return bad(format!(
                        "chat model {}: deployment {} does not offer {missing}, which the model \
                         declares; every deployment must offer all of the model's capabilities \
                         and reasoning efforts",
                        c.id,
                        d.label(&c.id)
                    ));
                }
            }
        }
        Ok(())
    }

    /// The text of a terms version.
    pub fn terms_text(&self, version: &str) -> Option<&TermsText> {
        self.terms.iter().find(|t| t.version == version)
    }
    pub fn plan(&self, id: &str) -> Option<&Plan> {
        self.plans.iter().find(|p| p.id == id)
    }
    pub fn video_model(&self, id: &str) -> Option<&VideoModel> {
        self.video_models.iter().find(|m| m.id == id)
    }
    pub fn engine(&self, id: &str) -> Option<&EngineConfig> {
        self.engines.iter().find(|e| e.id == id)
    }
    /// What a video model's engine honours: the model's own lists, else every input its engine
    /// kind can pass on and every aspect ratio.
    pub fn capabilities(&self, model: &VideoModel) -> Capabilities {
        let engine = model.engine.as_deref().and_then(|e| self.engine(e));
        let native = engine
            .map(EngineConfig::native_renders)
            .unwrap_or_else(|| NativeRenders::kind_default("reference", None));
        let engine_inputs = engine.map(EngineConfig::inputs).unwrap_or_default();
        let inputs = match &model.inputs {
            Some(list) => INPUTS
                .iter()
                .map(|(name, _)| *name)
                .filter(|name| list.iter().any(|i| i == name))
                .map(str::to_owned)
                .collect(),
            None => engine_inputs.iter().map(|s| (*s).to_owned()).collect(),
        };
        let aspect_ratios = match &model.aspect_ratios {
            Some(list) => ASPECT_RATIOS
                .iter()
                .filter(|a| list.iter().any(|r| r == *a))
                .map(|a| (*a).to_owned())
                .collect(),
            None => ASPECT_RATIOS.iter().map(|a| (*a).to_owned()).collect(),
        };
        Capabilities {
            inputs,
            aspect_ratios,
            seconds: native.seconds_range(),
            native,
        }
    }
    pub fn chat_model(&self, id: &str) -> Option<&ChatModel> {
        self.chat_models.iter().find(|m| m.id == id)
    }
    pub fn upstream(&self, id: &str) -> Option<&UpstreamConfig> {
        self.upstreams.iter().find(|u| u.id == id)
    }
    /// Video models the plan is entitled to.
    pub fn video_models_for_plan<'a>(
        &'a self,
        plan: &'a str,
    ) -> impl Iterator<Item = &'a VideoModel> {
        self.video_models
            .iter()
            .filter(move |m| m.plans.iter().any(|p| p == plan))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_catalog_parses() {
        let c = Catalog::parse(DEFAULT_CATALOG).expect("default catalog");
        assert!(!c.video_models.is_empty());
        assert!(c.plan("starter").is_some());
    }

    #[test]
    fn a_terms_version_without_text_is_refused() {
        let text = DEFAULT_CATALOG.replace(
            "terms_version = \"2026-11-01\"",
            "terms_version = \"2030-01-01\"",
        );
        let err = Catalog::parse(&text).expect_err("no text for 2030-01-01");
        assert!(err.to_string().contains("2030-01-01 has no text"), "{err}");
        let c = Catalog::parse(DEFAULT_CATALOG).expect("default catalog");
        let t = c.terms_text(&c.terms_version).expect("current text");
        assert!(!t.en.is_empty() && !t.ja.is_empty());
    }

    const TWO_UPSTREAMS: &str = r#"
[[upstreams]]
id = "a"
kind = "openai"
base_url = "http://a.invalid/v1"
[[upstreams]]
id = "b"
kind = "openai"
base_url = "http://b.invalid/v1"
"#;

    fn with_chat(model: &str) -> String {
        format!("{DEFAULT_CATALOG}\n{TWO_UPSTREAMS}\n{model}")
    }

    #[test]
    fn deployments_are_checked_against_the_models_declarations() {
        let ok = with_chat(
            r#"[[chat_models]]
id = "m"
capabilities = ["text", "vision"]
reasoning_efforts = ["low"]
deployments = [
  { upstream = "a", weight = 3 },
  { upstream = "b", upstream_model = "m-b", weight = 0, capabilities = ["text", "vision", "tools"] },
]"#,
        );
        let c = Catalog::parse(&ok).expect("valid deployments");
        let d = c.chat_model("m").expect("m").deployments();
        assert_eq!(d.len(), 2);
        assert_eq!(d[1].label("m"), "b/m-b");

        let lacking = with_chat(
            r#"[[chat_models]]
id = "m"
capabilities = ["text", "vision"]
deployments = [{ upstream = "a" }, { upstream = "b", capabilities = ["text"] }]"#,
        );
        let err = Catalog::parse(&lacking).expect_err("b lacks vision");
        assert!(err.to_string().contains("does not offer vision"), "{err}");

        let effort = with_chat(
            r#"[[chat_models]]
id = "m"
reasoning_efforts = ["high"]
deployments = [{ upstream = "a", reasoning_efforts = ["low"] }]"#,
        );
        assert!(Catalog::parse(&effort).is_err());

        let both = with_chat(
            r#"[[chat_models]]
id = "m"
upstream = "a"
deployments = [{ upstream = "b" }]"#,
        );
        assert!(Catalog::parse(&both).is_err());

        let fallback_only = with_chat(
            r#"[[chat_models]]
id = "m"
deployments = [{ upstream = "a", weight = 0 }]"#,
        );
        assert!(Catalog::parse(&fallback_only).is_err());

        let unknown = with_chat(
            r#"[[chat_models]]
id = "m"
deployments = [{ upstream = "a" }, { upstream = "nope" }]"#,
        );
        assert!(Catalog::parse(&unknown).is_err());
    }

    #[test]
    fn capabilities_default_to_the_engine_kind_and_refuse_more() {
        let c = Catalog::parse(DEFAULT_CATALOG).expect("default catalog");
        let reel = c.video_model("reel-1").expect("reel-1");
        let caps = c.capabilities(reel);
        assert_eq!(caps.inputs.len(), 5, "{caps:?}");
        assert!(caps.renders("Auto") && caps.renders("9:16"));
        let extra = r#"
[[engines]]
id = "far"
kind = "openai_videos"
base_url = "http://127.0.0.1:1"

[[video_models]]
id = "far-1"
name = "Far"
description = "d"
engine = "far"
plans = ["starter"]
pricing = [{ resolution = "768p", per_second = "0.10", currency = "usd" }]
aspect_ratios = ["16:9", "9:16"]
"#;
        let text = format!("{DEFAULT_CATALOG}\n{extra}");
        let c = Catalog::parse(&text).expect("catalog with an openai_videos engine");
        let caps = c.capabilities(c.video_model("far-1").expect("far-1"));
        assert_eq!(caps.inputs, vec!["first_frame"], "{caps:?}");
        assert_eq!(caps.aspect_ratios, vec!["16:9", "9:16"]);
        assert_eq!(caps.seconds, Some((4, 12)));
        let claims = text.replace(
            "aspect_ratios = [\"16:9\", \"9:16\"]",
            "inputs = [\"last_frame\"]",
        );
        let err = Catalog::parse(&claims).expect_err("openai_videos cannot pass a last frame");
        assert!(err.to_string().contains("cannot pass on"), "{err}");
        let unknown = text.replace(
            "aspect_ratios = [\"16:9\", \"9:16\"]",
            "inputs = [\"smell\"]",
        );
        assert!(Catalog::parse(&unknown).is_err());
        let ratio = text.replace("\"9:16\"]", "\"5:4\"]");
        assert!(Catalog::parse(&ratio).is_err());
        let shape = text.replace(
            "kind = \"openai_videos\"",
            "kind = \"openai_videos\"\nrequest_shape = \"sora\"",
        );
        assert!(Catalog::parse(&shape).is_err());
    }

    #[test]
    fn native_renders_take_the_kinds_defaults_and_the_entrys_overrides() {
        let engine = |extra: &str| {
            format!(
                "{DEFAULT_CATALOG}\n[[engines]]\nid = \"far\"\nkind = \"openai_videos\"\n\
                 base_url = \"http://127.0.0.1:1\"\n{extra}\n"
            )
        };
        let c = Catalog::parse(&engine("")).expect("defaults");
        let native = c.engine("far").expect("far").native_renders();
        assert_eq!(native.duration_for(6), Some(8));
        assert_eq!(native.duration_for(13), None);
        let c = Catalog::parse(&engine(
            "durations = [5, 10]\nsizes = [\"1920x1080\", \"1080x1920\"]\naudio = false",
        ))
        .expect("overrides");
        let native = c.engine("far").expect("far").native_renders();
        assert_eq!(native.duration_for(6), Some(10));
        assert_eq!(native.sizes.len(), 2);
        assert!(!native.audio);
        let c = Catalog::parse(&engine("duration_range = { min = 6, max = 120, step = 6 }"))
            .expect("a range");
        assert_eq!(
            c.engine("far")
                .expect("far")
                .native_renders()
                .duration_for(13),
            Some(18)
        );
        for bad in [
            "durations = []",
            "durations = [2, 3]",
            "durations = [4]\nduration_range = { min = 4, max = 8 }",
            "duration_range = { min = 8, max = 4 }",
            "sizes = [\"1280x721\"]",
            "sizes = []",
        ] {
            let err = Catalog::parse(&engine(bad)).expect_err(bad);
            assert!(err.to_string().contains("engine far"), "{bad}: {err}");
        }
    }

    #[test]
    fn operations_are_native_where_the_engine_declares_them_else_chained_or_refused() {
        use OperationSupport::*;
        let with = |extra: &str| {
            let text = format!(
                "{DEFAULT_CATALOG}\n[[engines]]\nid = \"far\"\nkind = \"http\"\n\
                 base_url = \"http://127.0.0.1:1\"\n{extra}\n\
                 [[video_models]]\nid = \"far-1\"\nname = \"Far\"\ndescription = \"d\"\n\
                 engine = \"far\"\nplans = [\"starter\"]\n\
                 pricing = [{{ resolution = \"768p\", per_second = \"0.10\", currency = \"usd\" }}]\n"
            );
            Catalog::parse(&text).map(|c| {
                let ops = |id: &str| {
                    c.capabilities(c.video_model(id).expect("model"))
                        .operations()
                };
                (ops("reel-1"), ops("far-1"))
            })
        };
        let (reference, http) = with("").expect("defaults");
        assert_eq!(
            (reference.remix, reference.extension, reference.edit),
            (Native, Native, Native),
            "the reference engine does every operation"
        );
        assert_eq!(
            (http.remix, http.extension, http.edit),
            (Chained, Chained, Unavailable),
            "an http engine declares its own"
        );
        let (_, http) = with("operations = [\"extension\"]").expect("declared");
        assert_eq!(
            (http.remix, http.extension, http.edit),
            (Chained, Native, Unavailable)
        );
        let (_, http) = with("operations = [\"video_to_video\"]").expect("declared");
        assert_eq!(
            (http.remix, http.extension, http.edit),
            (Native, Chained, Native)
        );
        let err = with("operations = [\"teleport\"]").expect_err("refused");
        assert!(err.to_string().contains("teleport"), "{err}");
    }

    #[test]
    fn unknown_plan_is_refused() {
        let text = DEFAULT_CATALOG.replace("plans = [\"starter\"", "plans = [\"nope\"");
        assert!(Catalog::parse(&text).is_err());
    }
}
