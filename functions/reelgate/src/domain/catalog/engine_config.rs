//! A video engine as the catalog configures it: its kind, where it is reached, its key, and
//! what it renders natively (durations, sizes, operations, audio).

use super::hosted_models;
use super::native_renders::{Durations, NativeOperations, NativeRenders, Size, CONTRACT_SECONDS};
use super::video_models::kind_inputs;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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
    pub(super) fn native_problem(&self) -> Option<String> {
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
