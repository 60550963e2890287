//! Video models as the catalog declares them: their engine, plans, pricing rows, the inputs and
//! aspect ratios they honour, and what an engine kind can honour.

use super::native_renders::NativeRenders;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

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
