//! The fal models this adapter knows, each as its endpoints by mode with their field names, its
//! durations, aspect ratios and resolution tiers; any other model gets the generic shape.

use std::collections::BTreeMap;

/// The model used when the catalog names none.
pub const DEFAULT_MODEL: &str = "fal-ai/kling-video/v2.5-turbo/pro/text-to-video";
/// What reelgate may send, by its `input_fields` name.
pub const THINGS: &[&str] = &[
    "prompt",
    "first_frame",
    "last_frame",
    "reference_images",
    "video",
    "duration",
    "aspect_ratio",
    "resolution",
    "audio",
];
/// The aspect ratios a model of unknown values is asked for.
pub(super) const ANY_RATIO: &[&str] = &["21:9", "16:9", "4:3", "1:1", "3:4", "9:16"];

/// How a model writes its duration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum DurationStyle {
    /// `"5"`.
    Digits,
    /// `"5s"`.
    Seconds,
}

/// The kinds of request one model serves, each at an endpoint of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Mode {
    FirstLast,
    Reference,
    Image,
    Text,
    /// A remix or an edit of a source video (`inputs.source`).
    VideoToVideo,
    /// The continuation of a source video.
    Extension,
}

impl Mode {
    /// The inputs a request of this mode must carry.
    pub(super) fn needs(self) -> &'static [&'static str] {
        match self {
            Mode::FirstLast => &["first_frame", "last_frame"],
            Mode::Reference => &["reference_images"],
            Mode::Image => &["first_frame"],
            Mode::Text => &[],
            Mode::VideoToVideo | Mode::Extension => &["video"],
        }
    }

    /// Whether the mode renders from a source video.
    pub(super) fn takes_source(self) -> bool {
        matches!(self, Mode::VideoToVideo | Mode::Extension)
    }
}

/// One endpoint of a model: its path under the queue and its field for each thing it takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Endpoint {
    pub(super) path: String,
    pub(super) fields: BTreeMap<&'static str, String>,
    /// The durations this endpoint renders when they are not the model's (Veo's extension:
    /// 7 s).
    pub(super) durations: Option<&'static [u32]>,
}

/// A model on fal as this adapter speaks to it.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Model {
    pub(super) endpoints: BTreeMap<Mode, Endpoint>,
    /// The durations it renders (empty: any, as the worker asks).
    pub(super) durations: &'static [u32],
    pub(super) duration_style: DurationStyle,
    pub(super) aspect_ratios: &'static [&'static str],
    /// Resolution tiers by the frame's short side; empty: `"{short side}p"`.
    pub(super) resolutions: &'static [(u32, &'static str)],
}

pub(super) type Fields = &'static [(&'static str, &'static str)];

pub(super) fn endpoint(path: &str, fields: Fields) -> Endpoint {
    Endpoint {
        path: path.to_owned(),
        fields: fields
            .iter()
            .map(|(thing, field)| (*thing, (*field).to_owned()))
            .collect(),
        durations: None,
    }
}

pub(super) const KLING_TEXT: Fields = &[
    ("prompt", "prompt"),
    ("duration", "duration"),
    ("aspect_ratio", "aspect_ratio"),
];
pub(super) const KLING_IMAGE: Fields = &[
    ("prompt", "prompt"),
    ("duration", "duration"),
    ("first_frame", "image_url"),
    ("last_frame", "tail_image_url"),
];
pub(super) const VEO_TEXT: Fields = &[
    ("prompt", "prompt"),
    ("duration", "duration"),
    ("aspect_ratio", "aspect_ratio"),
    ("resolution", "resolution"),
    ("audio", "generate_audio"),
];
pub(super) const VEO_IMAGE: Fields = &[
    ("prompt", "prompt"),
    ("duration", "duration"),
    ("aspect_ratio", "aspect_ratio"),
    ("resolution", "resolution"),
    ("audio", "generate_audio"),
    ("first_frame", "image_url"),
];
pub(super) const VEO_FIRST_LAST: Fields = &[
    ("prompt", "prompt"),
    ("duration", "duration"),
    ("aspect_ratio", "aspect_ratio"),
    ("resolution", "resolution"),
    ("audio", "generate_audio"),
    ("first_frame", "first_frame_url"),
    ("last_frame", "last_frame_url"),
];
pub(super) const VEO_REFERENCE: Fields = &[
    ("prompt", "prompt"),
    ("duration", "duration"),
    ("aspect_ratio", "aspect_ratio"),
    ("resolution", "resolution"),
    ("audio", "generate_audio"),
    ("reference_images", "image_urls"),
];
/// `…/extend-video`: the documented fields only (`aspect_ratio` "auto" and `resolution` "720p",
/// their defaults, follow the source).
pub(super) const VEO_EXTEND: Fields = &[
    ("prompt", "prompt"),
    ("video", "video_url"),
    ("duration", "duration"),
    ("audio", "generate_audio"),
];
/// The seconds Veo's extension adds.
pub(super) const VEO_EXTENSION_SECONDS: &[u32] = &[7];
/// Kling O1's video edit: the source's own soundtrack is kept (`keep_audio`).
pub(super) const KLING_O1_EDIT: Fields = &[
    ("prompt", "prompt"),
    ("video", "video_url"),
    ("audio", "keep_audio"),
];
pub(super) const KLING_O1_EDIT_ID: &str = "fal-ai/kling-video/o1/video-to-video/edit";
pub(super) const HAILUO_TEXT: Fields = &[("prompt", "prompt"), ("duration", "duration")];
pub(super) const HAILUO_IMAGE: Fields = &[
    ("prompt", "prompt"),
    ("duration", "duration"),
    ("resolution", "resolution"),
    ("first_frame", "image_url"),
    ("last_frame", "end_image_url"),
];
pub(super) const ANY_TEXT: Fields = &[
    ("prompt", "prompt"),
    ("duration", "duration"),
    ("aspect_ratio", "aspect_ratio"),
];
pub(super) const ANY_IMAGE: Fields = &[
    ("prompt", "prompt"),
    ("duration", "duration"),
    ("first_frame", "image_url"),
];
pub(super) const ANY_VIDEO: Fields = &[
    ("prompt", "prompt"),
    ("duration", "duration"),
    ("video", "video_url"),
];

/// The documented model `model_id` belongs to, or the generic shape of an unknown one.
pub(super) fn known_model(model_id: &str) -> Model {
    let id = model_id.trim_matches('/');
    let kling = "fal-ai/kling-video/v2.5-turbo/pro";
    if id == format!("{kling}/text-to-video") || id == format!("{kling}/image-to-video") {
        return Model {
            endpoints: BTreeMap::from([
                (
                    Mode::Text,
                    endpoint(&format!("{kling}/text-to-video"), KLING_TEXT),
                ),
                (
                    Mode::Image,
                    endpoint(&format!("{kling}/image-to-video"), KLING_IMAGE),
                ),
            ]),
            durations: &[5, 10],
            duration_style: DurationStyle::Digits,
            aspect_ratios: &["16:9", "9:16", "1:1"],
            resolutions: &[],
        };
    }
    for (veo, reference) in [("fal-ai/veo3.1", true), ("fal-ai/veo3.1/fast", false)] {
        let family = [
            veo.to_owned(),
            format!("{veo}/image-to-video"),
            format!("{veo}/first-last-frame-to-video"),
            format!("{veo}/reference-to-video"),
        ];
        if family.iter().any(|p| p == id) && (reference || !id.ends_with("/reference-to-video")) {
            let mut endpoints = BTreeMap::from([
                (Mode::Text, endpoint(veo, VEO_TEXT)),
                (Mode::Image, endpoint(&family[1], VEO_IMAGE)),
                (Mode::FirstLast, endpoint(&family[2], VEO_FIRST_LAST)),
            ]);
            if reference {
                endpoints.insert(Mode::Reference, endpoint(&family[3], VEO_REFERENCE));
            }
            endpoints.insert(
                Mode::Extension,
                Endpoint {
                    durations: Some(VEO_EXTENSION_SECONDS),
                    ..endpoint(&format!("{veo}/extend-video"), VEO_EXTEND)
                },
            );
            return Model {
                endpoints,
                durations: &[4, 6, 8],
                duration_style: DurationStyle::Seconds,
                aspect_ratios: &["16:9", "9:16"],
                resolutions: &[(720, "720p"), (1080, "1080p")],
            };
        }
    }
    if id == KLING_O1_EDIT_ID {
        return Model {
            endpoints: BTreeMap::from([(Mode::VideoToVideo, endpoint(id, KLING_O1_EDIT))]),
            durations: &[],
            duration_style: DurationStyle::Digits,
            aspect_ratios: &[],
            resolutions: &[],
        };
    }
    let hailuo = "fal-ai/minimax/hailuo-02/standard";
    if id == format!("{hailuo}/text-to-video") || id == format!("{hailuo}/image-to-video") {
        return Model {
            endpoints: BTreeMap::from([
                (
                    Mode::Text,
                    endpoint(&format!("{hailuo}/text-to-video"), HAILUO_TEXT),
                ),
                (
                    Mode::Image,
                    endpoint(&format!("{hailuo}/image-to-video"), HAILUO_IMAGE),
                ),
            ]),
            durations: &[6, 10],
            duration_style: DurationStyle::Digits,
            aspect_ratios: &[],
            resolutions: &[(512, "512P"), (768, "768P")],
        };
    }
    let (text, image) = if let Some(stem) = id.strip_suffix("/text-to-video") {
        (id.to_owned(), format!("{stem}/image-to-video"))
    } else if let Some(stem) = id.strip_suffix("/image-to-video") {
        (format!("{stem}/text-to-video"), id.to_owned())
    } else {
        (id.to_owned(), id.to_owned())
    };
    Model {
        endpoints: BTreeMap::from([
            (Mode::Text, endpoint(&text, ANY_TEXT)),
            (Mode::Image, endpoint(&image, ANY_IMAGE)),
            // Used only where the catalog declares the engine's `operations`.
            (Mode::VideoToVideo, endpoint(id, ANY_VIDEO)),
            (Mode::Extension, endpoint(id, ANY_VIDEO)),
        ]),
        durations: &[],
        duration_style: DurationStyle::Digits,
        aspect_ratios: ANY_RATIO,
        resolutions: &[],
    }
}
