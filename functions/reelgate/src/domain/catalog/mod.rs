//! The catalog: plans, video models (pricing, engines), chat models (capabilities, reasoning
//! efforts, upstreams, token prices), the terms version. Configuration (TOML) from
//! `REELGATE_CATALOG` or the built-in `catalog.default.toml` (docs/configuration.md).

pub mod hosted_models;
pub mod native_renders;
pub mod providers;

use native_renders::{Durations, NativeOperations, NativeRenders, Size, CONTRACT_SECONDS};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct VideoModel {
    pub id: String,
    pub name: String,
    pub description: String,
    /// The engine id that renders it; absent or unknown → 503 `provider_unavailable`.
    #[serde(default)]
    pub engine: Option<String>,
    /// Plans entitled to the model.
    pub plans: Vec<String>,
    pub pricing: Vec<PricingRow>,
    /// Inputs the model's engine honours ([`INPUTS`]); absent means every input its engine kind
    /// can honour ([`kind_inputs`]). A create sending any other input is refused before anything
    /// is reserved, so no job is charged for an input an engine would ignore.
    #[serde(default)]
    pub inputs: Option<Vec<String>>,
    /// Aspect ratios the engine renders at 768p (`Auto` included when it may follow the first
    /// frame); absent means all of them.
    #[serde(default)]
    pub aspect_ratios: Option<Vec<String>>,
}

/// The inputs a video model may honour, by the create parameter that carries each.
pub const INPUTS: &[(&str, &str)] = &[
    ("first_frame", "image_reference"),
    ("last_frame", "image_reference"),
    ("reference_images", "references.images"),
    ("reference_videos", "references.videos"),
    ("reference_audio", "references.audio"),
];

/// Every aspect ratio the API accepts.
pub const ASPECT_RATIOS: &[&str] = &["Auto", "21:9", "16:9", "4:3", "1:1", "3:4", "9:16"];

/// The inputs an engine can pass on at most: the reference engine and the engine protocol
/// carry all five; Bedrock's asynchronous invoke (Nova Reel) and a target in OpenAI's Videos
/// shape (`input_reference`) take one image as the first frame; a reelgate target in its own
/// shape gets the prompt alone (its files are not ours to name).
pub fn kind_inputs(kind: &str, request_shape: Option<&str>) -> &'static [&'static str] {
    match (kind, request_shape) {
        ("reference" | "http", _) => &[
            "first_frame",
            "last_frame",
            "reference_images",
            "reference_videos",
            "reference_audio",
        ],
        ("bedrock", _) => &["first_frame"],
        ("openai_videos", Some("reelgate")) => &[],
        ("openai_videos", _) => &["first_frame"],
        // The hosted kinds: what their default models take (docs/engines.md).
        ("veo", _) => &["first_frame", "last_frame", "reference_images"],
        ("runway", _) => &["first_frame"],
        ("luma" | "fal" | "replicate", _) => &["first_frame", "last_frame"],
        ("xai", _) => &["first_frame", "reference_images"],
        _ => &[],
    }
}

/// The input, aspect-ratio and duration capabilities of a video model, as the catalog resolves
/// them, with what its engine renders natively.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Capabilities {
    pub inputs: Vec<String>,
    pub aspect_ratios: Vec<String>,
    /// The `seconds` a create may ask for (`None`: the engine renders no clip the API allows).
    pub seconds: Option<(u32, u32)>,
    pub native: NativeRenders,
}

impl Capabilities {
    pub fn honours(&self, input: &str) -> bool {
        self.inputs.iter().any(|i| i == input)
    }
    pub fn renders(&self, aspect_ratio: &str) -> bool {
        self.aspect_ratios.iter().any(|a| a == aspect_ratio)
    }

    /// How the model does the operations made from an earlier video
    /// (`GET /v1/videos/models`, and each operation's use case).
    pub fn operations(&self) -> VideoOperations {
        // Without the engine's own operation, a remix re-renders from the source's first frame
        // with the new prompt and an extension's segment opens with the source's last frame
        // (the stitch step joins them), where the engine takes a first frame. An edit keeps the
        // source's picture, which no frame stands in for: native or nothing.
        let chained = if self.honours("first_frame") {
            OperationSupport::Chained
        } else {
            OperationSupport::Unavailable
        };
        let native = &self.native.operations;
        let either = |native: bool| {
            if native {
                OperationSupport::Native
            } else {
                chained
            }
        };
        VideoOperations {
            remix: either(native.video_to_video),
            extension: either(native.extension),
            edit: if native.video_to_video {
                OperationSupport::Native
            } else {
                OperationSupport::Unavailable
            },
        }
    }
}

/// How a model does an operation on an earlier video.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OperationSupport {
    /// The engine takes the source video itself.
    Native,
    /// reelgate chains it onto what the engine takes (a remix: the source's first frame).
    Chained,
    /// Refused at create, before anything is reserved.
    Unavailable,
}

/// The operations on an earlier video a model offers, and how.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
pub struct VideoOperations {
    /// `POST /v1/videos/{video_id}/remix`.
    pub remix: OperationSupport,
    /// `POST /v1/videos/extensions`.
    pub extension: OperationSupport,
    /// `POST /v1/videos/edits`.
    pub edit: OperationSupport,
}

/// A video model's price per second of output at one resolution.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PricingRow {
    pub resolution: String,
    /// An exact decimal string.
    #[serde(with = "rust_decimal::serde::str")]
    #[schema(value_type = String)]
    pub per_second: Decimal,
    pub currency: String,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EngineConfig {
    pub id: String,
    /// `http` (reelgate's engine protocol, docs/engine-protocol.md), `reference` (the built-in
    /// reference engine, served in-process by the local server), or `bedrock` (asynchronous invoke).
    pub kind: String,
    /// For `http`: the engine's base URL. Environment variables `${NAME}` are expanded.
    #[serde(default)]
    pub base_url: Option<String>,
    /// Name of the environment variable holding the engine's bearer key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// For `bedrock`: the model id, e.g. `amazon.nova-reel-v1:1`.
    #[serde(default)]
    pub model_id: Option<String>,
    /// For `bedrock`: where the engine writes its output, `s3://bucket/prefix`.
    #[serde(default)]
    pub output_s3_uri: Option<String>,
    /// For `openai_videos`: the target's model name for each catalog video model id
    /// (a model not listed is sent under its own id).
    #[serde(default)]
    pub models: BTreeMap<String, String>,
    /// For `openai_videos`: how the create request is shaped, `openai` (`seconds` as a string,
    /// `size` as `WIDTHxHEIGHT`) or `reelgate` (`seconds` as a number and `aspect_ratio`).
    #[serde(default)]
    pub request_shape: Option<String>,
    /// For `openai_videos`: how a render is canceled at the target, `cancel`
    /// (`POST /v1/videos/{id}/cancel`) or `delete` (`DELETE /v1/videos/{id}`).
    #[serde(default)]
    pub cancel: Option<String>,
    /// Whether the engine's progress moves while it renders. When it does (the default for
    /// `reference`, `http`, `openai_videos` and `runway`, whose statuses carry a figure), a render whose progress stops is failed once it misses the workflow's
    /// heartbeat; when it does not, the worker heartbeats on every poll that finds the render
    /// running, and only the render's overall timeout bounds it.
    #[serde(default)]
    pub progress_observable: Option<bool>,
    /// The durations the engine renders, in seconds (a set), overriding its kind's default
    /// (docs/engines.md). At most one of `durations` and `duration_range`.
    #[serde(default)]
    pub durations: Option<Vec<u32>>,
    /// The durations the engine renders as a range with a step, e.g.
    /// `{ min = 6, max = 120, step = 6 }`.
    #[serde(default)]
    pub duration_range: Option<DurationRange>,
    /// The frame sizes the engine renders (`WIDTHxHEIGHT`), its default orientation first.
    #[serde(default)]
    pub sizes: Option<Vec<String>>,
    /// Whether the engine renders a soundtrack.
    #[serde(default)]
    pub audio: Option<bool>,
    /// The largest image the engine takes as a frame or reference, in bytes.
    #[serde(default)]
    pub max_image_bytes: Option<u64>,
    /// For `fal` and `replicate`: the model's input field for each thing reelgate sends
    /// (`prompt`, `first_frame`, `last_frame`, `reference_images`, `video` (the source of a
    /// remix, edit or extension the engine does itself), `duration`, `aspect_ratio`,
    /// `resolution`, `audio`), overriding the documented defaults of its `model_id`
    /// (docs/engines.md); a thing with no field is not sent.
    #[serde(default)]
    pub input_fields: BTreeMap<String, String>,
    /// For the hosted kinds: the hosts the provider serves outputs from (`.example.com` takes
    /// every subdomain), overriding the kind's default. Outputs anywhere else are refused.
    #[serde(default)]
    pub output_hosts: Option<Vec<String>>,
    /// The operations on a source video the engine does itself (`video_to_video`, which remix
    /// and edit use, and `extension`), overriding its kind's default (the reference engine:
    /// both; every other kind: none, so remix and extension are chained and edit refused).
    #[serde(default)]
    pub operations: Option<Vec<String>>,
}

/// Every engine kind the catalog may name.
pub const ENGINE_KINDS: &[&str] = &[
    "reference",
    "http",
    "bedrock",
    "openai_videos",
    "veo",
    "runway",
    "luma",
    "fal",
    "replicate",
    "xai",
];

/// `duration_range` of an engine.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct DurationRange {
    pub min: u32,
    pub max: u32,
    #[serde(default = "one")]
    pub step: u32,
}

fn one() -> u32 {
    1
}

impl EngineConfig {
    /// See [`EngineConfig::progress_observable`].
    pub fn progress_is_observable(&self) -> bool {
        // Providers whose status carries a progress figure; the others only say "running".
        self.progress_observable.unwrap_or(matches!(
            self.kind.as_str(),
            "reference" | "http" | "openai_videos" | "runway"
        ))
    }

    /// What the engine renders: its kind's documented defaults with this entry's overrides.
    /// (The catalog check has refused overrides that do not parse.)
    pub fn native_renders(&self) -> NativeRenders {
        let mut native = match hosted_models::find(&self.kind, self.model_id.as_deref()) {
            Some(model) => (model.renders)(),
            None => NativeRenders::kind_default(&self.kind, self.request_shape.as_deref()),
        };
        if let Some(values) = &self.durations {
            native.durations = Durations::Set {
                values: values.clone(),
            };
        }
        if let Some(r) = self.duration_range {
            native.durations = Durations::Range {
                min: r.min,
                max: r.max,
                step: r.step,
            };
        }
        if let Some(sizes) = &self.sizes {
            native.sizes = sizes.iter().filter_map(|s| Size::parse(s)).collect();
        }
        if let Some(audio) = self.audio {
            native.audio = audio;
        }
        if self.max_image_bytes.is_some() {
            native.max_image_bytes = self.max_image_bytes;
        }
        if let Some(names) = &self.operations {
            // The listed operations, with the kind's documented bounds on them.
            let listed = NativeOperations::from_names(names);
            native.operations.video_to_video = listed.video_to_video;
            native.operations.extension = listed.extension;
        }
        native
    }

    /// The inputs this engine can pass on at most.
    pub fn inputs(&self) -> &'static [&'static str] {
        match hosted_models::find(&self.kind, self.model_id.as_deref()) {
            Some(model) => model.inputs,
            None => kind_inputs(&self.kind, self.request_shape.as_deref()),
        }
    }

    /// Why the entry's native-render overrides are unusable, if they are.
    fn native_problem(&self) -> Option<String> {
        if self.durations.is_some() && self.duration_range.is_some() {
            return Some("give durations or duration_range, not both".into());
        }
        if let Some(values) = &self.durations {
            if values.is_empty() || values.contains(&0) {
                return Some("durations must list whole seconds above 0".into());
            }
        }
        if let Some(r) = self.duration_range {
            if r.min == 0 || r.max < r.min || r.step == 0 {
                return Some("duration_range needs 0 < min <= max and a step of at least 1".into());
            }
        }
        if let Some(sizes) = &self.sizes {
            if sizes.is_empty() {
                return Some("sizes must list at least one size".into());
            }
            if let Some(bad) = sizes.iter().find(|s| Size::parse(s).is_none()) {
                return Some(format!(
                    "size {bad:?} is not WIDTHxHEIGHT with even sides from 16 to 4096"
                ));
            }
        }
        if let Some(names) = &self.operations {
            let known = NativeOperations::NAMES;
            if let Some(bad) = names.iter().find(|n| !known.contains(&n.as_str())) {
                return Some(format!(
                    "operation {bad:?} is not one of {}",
                    known.join(", ")
                ));
            }
        }
        if self.native_renders().seconds_range().is_none() {
            return Some(format!(
                "it renders at most {} s, shorter than the API's shortest video ({} s)",
                self.native_renders().durations.longest(),
                CONTRACT_SECONDS.0
            ));
        }
        None
    }
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatModel {
    pub id: String,
    /// The upstream id serving it (one deployment); a model with several deployments lists
    /// them in `deployments` instead and leaves this empty.
    #[serde(default)]
    pub upstream: String,
    /// The model name the upstream knows it by (defaults to `id`).
    #[serde(default)]
    pub upstream_model: Option<String>,
    /// Several deployments serving the model, spread by weight with fallback
    /// (docs/traffic-control.md).
    #[serde(default)]
    pub deployments: Vec<Deployment>,
    /// `text`, `vision`, `audio`, `video`, `tools`, `json_schema`, `file`.
    #[serde(default = "default_capabilities")]
    pub capabilities: Vec<String>,
    /// Accepted `reasoning_effort` values; empty means the parameter is refused.
    #[serde(default)]
    pub reasoning_efforts: Vec<String>,
    /// Prompt tokens the model accepts (for `truncation: auto`).
    #[serde(default = "default_context")]
    pub context_window: u32,
    /// Price per million input tokens.
    #[serde(default, with = "rust_decimal::serde::str")]
    pub input_per_million: Decimal,
    /// Price per million output tokens.
    #[serde(default, with = "rust_decimal::serde::str")]
    pub output_per_million: Decimal,
    /// Price per million input tokens the upstream reports as read from its prompt cache; unset,
    /// cached tokens cost the input price.
    #[serde(default, with = "rust_decimal::serde::str_option")]
    pub cached_input_per_million: Option<Decimal>,
    /// Price per million input tokens the upstream reports as written to its prompt cache;
    /// unset, written tokens cost the input price.
    #[serde(default, with = "rust_decimal::serde::str_option")]
    pub cache_write_per_million: Option<Decimal>,
    /// Whether the gateway places cache points itself in chat completions and Responses
    /// requests (after the system prompt, after the tools, at the end of the conversation) for
    /// upstreams that take explicit ones (Bedrock Converse, Anthropic).
    #[serde(default)]
    pub auto_cache: bool,
    /// The fewest prompt tokens the model caches (Anthropic's per-model minimum; 1,024 when
    /// unset): the gateway places no cache point before a prefix this long.
    #[serde(default)]
    pub cache_min_tokens: Option<u32>,
    #[serde(default = "default_currency")]
    pub currency: String,
    #[serde(default)]
    pub owned_by: Option<String>,
}

/// One place a chat model is served: an upstream and the name it knows the model by.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Deployment {
    pub upstream: String,
    /// The model name the upstream knows it by (defaults to the chat model's id).
    #[serde(default)]
    pub upstream_model: Option<String>,
    /// Relative share of requests; 0 means a fallback only, tried after every weighted one.
    #[serde(default = "default_weight")]
    pub weight: u32,
    /// What this deployment offers, when narrower than "everything the model declares" (a
    /// provider without vision, say); start-up refuses a deployment that lacks any of the
    /// model's capabilities or reasoning efforts.
    #[serde(default)]
    pub capabilities: Option<Vec<String>>,
    #[serde(default)]
    pub reasoning_efforts: Option<Vec<String>>,
}

impl Deployment {
    /// The upstream-model pair that identifies it in logs and in the health table.
    pub fn label(&self, model_id: &str) -> String {
        format!(
            "{}/{}",
            self.upstream,
            self.upstream_model.as_deref().unwrap_or(model_id)
        )
    }
}

fn default_weight() -> u32 {
    1
}

impl ChatModel {
    /// The model's deployments: its `deployments`, or the one its `upstream` names.
    pub fn deployments(&self) -> Vec<Deployment> {
        if !self.deployments.is_empty() {
            return self.deployments.clone();
        }
        vec![Deployment {
            upstream: self.upstream.clone(),
            upstream_model: self.upstream_model.clone(),
            weight: 1,
            capabilities: None,
            reasoning_efforts: None,
        }]
    }

    /// The upstream and model name of its first deployment (the translator's upstream).
    pub fn primary(&self) -> Deployment {
        self.deployments().swap_remove(0)
    }
}

fn default_capabilities() -> Vec<String> {
    vec!["text".into(), "tools".into()]
}
fn default_context() -> u32 {
    32_768
}
fn default_currency() -> String {
    "usd".into()
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamConfig {
    pub id: String,
    /// `openai` (any OpenAI-compatible HTTP server), `anthropic` (Anthropic's Messages API) or
    /// `bedrock` (Converse / ConverseStream).
    pub kind: String,
    #[serde(default)]
    pub base_url: Option<String>,
    /// Name of the environment variable holding the upstream's key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    #[serde(default)]
    pub region: Option<String>,
    #[serde(default)]
    pub extra_headers: BTreeMap<String, String>,
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
