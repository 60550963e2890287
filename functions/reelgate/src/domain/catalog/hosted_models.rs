//! What a named model behind a hosted kind takes and renders, where it differs from the kind's
//! default model: Veo 3.1 behind `fal` or `replicate` offers what Veo 3.1 offers, not what the
//! kind's default model does. An engine whose `model_id` is listed here starts from this entry;
//! the catalog's own overrides (`durations`, `sizes`, `operations`, …) still apply on top.
//! Each entry names the provider page it is taken from (docs/engines.md has the table).

use crate::domain::catalog::native_renders::{hosted, Durations, NativeOperations, NativeRenders};

/// One model of a hosted kind.
pub struct HostedModel {
    pub kind: &'static str,
    /// The provider's id of the model (the catalog's `model_id`).
    pub model_id: &'static str,
    /// Other ids the adapter takes for the same model (fal's endpoint of one of its modes).
    pub aliases: &'static [&'static str],
    /// The inputs it takes (`first_frame`, `last_frame`, `reference_images`).
    pub inputs: &'static [&'static str],
    /// What it renders, with its native operations.
    pub renders: fn() -> NativeRenders,
}

/// Every model this table knows.
pub const MODELS: &[HostedModel] = &[
    // fal.ai/models/fal-ai/veo3.1/api (text: `duration` "4s"/"6s"/"8s", `aspect_ratio` 16:9 or
    // 9:16, `resolution` 720p/1080p/4k, `generate_audio` default true), …/image-to-video,
    // …/first-last-frame-to-video, …/reference-to-video (`image_urls`; Veo's own limit is three
    // reference images: Gemini API, *Generate videos with Veo 3.1*) and …/extend-video
    // (fal.ai/models/fal-ai/veo3.1/extend-video/api: `video_url` of a video up to 8 s, 720p or
    // 1080p, 16:9 or 9:16; `duration` "7s"). The adapter asks for 720p and 1080p only.
    HostedModel {
        kind: "fal",
        model_id: "fal-ai/veo3.1",
        aliases: &[
            "fal-ai/veo3.1/image-to-video",
            "fal-ai/veo3.1/first-last-frame-to-video",
            "fal-ai/veo3.1/reference-to-video",
        ],
        inputs: &["first_frame", "last_frame", "reference_images"],
        renders: || NativeRenders {
            max_reference_images: Some(3),
            operations: veo_extend_on_fal(),
            ..hosted(&[4, 6, 8], VEO_SIZES, true)
        },
    },
    // fal.ai/models/fal-ai/veo3.1/fast/api and …/fast/extend-video/api: as Veo 3.1, without a
    // reference-to-video endpoint.
    HostedModel {
        kind: "fal",
        model_id: "fal-ai/veo3.1/fast",
        aliases: &[
            "fal-ai/veo3.1/fast/image-to-video",
            "fal-ai/veo3.1/fast/first-last-frame-to-video",
        ],
        inputs: &["first_frame", "last_frame"],
        renders: || NativeRenders {
            operations: veo_extend_on_fal(),
            ..hosted(&[4, 6, 8], VEO_SIZES, true)
        },
    },
    // fal.ai/docs/model-api-reference/video-generation-api/kling-video-o1-video-to-video
    // (`fal-ai/kling-video/o1/video-to-video/edit`): `prompt` and `video_url` (.mp4/.mov, 3 to
    // 10.05 s, 720 to 2160 px a side, at most 200 MB), `keep_audio`; the edit keeps the
    // source's length. Video-to-video only: no text or image mode at this endpoint.
    HostedModel {
        kind: "fal",
        model_id: "fal-ai/kling-video/o1/video-to-video/edit",
        aliases: &[],
        inputs: &[],
        renders: || NativeRenders {
            durations: Durations::Range {
                min: 3,
                max: 10,
                step: 1,
            },
            operations: NativeOperations {
                video_to_video: true,
                max_video_to_video_seconds: Some(10.05),
                source_only: true,
                ..NativeOperations::default()
            },
            // With `keep_audio` the edit carries the source's soundtrack.
            ..hosted(&[], SOURCE_SIZES, true)
        },
    },
    // replicate.com/google/veo-3.1/api: `image`, `last_frame`, `reference_images` (1 to 3, at
    // 16:9 and 8 s only), `duration` 4/6/8, `aspect_ratio` 16:9 or 9:16, `resolution` 720p or
    // 1080p, `generate_audio` (default true). No video input.
    HostedModel {
        kind: "replicate",
        model_id: "google/veo-3.1",
        aliases: &[],
        inputs: &["first_frame", "last_frame", "reference_images"],
        renders: || NativeRenders {
            max_reference_images: Some(3),
            ..hosted(&[4, 6, 8], VEO_SIZES, true)
        },
    },
    // replicate.com/luma/modify-video/api: `video` (at most 100 MB and 30 s), `prompt`,
    // `first_frame` (a modified first frame guiding the edit), `mode` (default adhere_1); the
    // output keeps the source's length. Video-to-video only; Luma renders no soundtrack.
    HostedModel {
        kind: "replicate",
        model_id: "luma/modify-video",
        aliases: &[],
        inputs: &[],
        renders: || NativeRenders {
            durations: Durations::Range {
                min: 1,
                max: 30,
                step: 1,
            },
            operations: NativeOperations {
                video_to_video: true,
                max_video_to_video_seconds: Some(30.0),
                source_only: true,
                ..NativeOperations::default()
            },
            ..hosted(&[], SOURCE_SIZES, false)
        },
    },
];

/// Veo 3.1's sizes at the tiers the adapters ask for (720p, 1080p).
const VEO_SIZES: &[(u32, u32)] = &[(1280, 720), (720, 1280), (1920, 1080), (1080, 1920)];

/// A video-to-video model's output keeps its source's frame: reelgate's 768p sizes.
const SOURCE_SIZES: &[(u32, u32)] = &[
    (1366, 768),
    (768, 1366),
    (768, 768),
    (1024, 768),
    (768, 1024),
    (1792, 768),
];

/// fal's `…/extend-video`: any video of up to 8 s (not only Veo's own), 7 s added, answered (as
/// Veo's own extension is) as the source and the extension in one video.
fn veo_extend_on_fal() -> NativeOperations {
    NativeOperations {
        extension: true,
        extension_source_seconds: Some((1, 8)),
        extension_durations: Some(Durations::Set { values: vec![7] }),
        extension_includes_source: true,
        ..NativeOperations::default()
    }
}

/// The entry for `model_id` behind `kind`, if this table knows it.
pub fn find(kind: &str, model_id: Option<&str>) -> Option<&'static HostedModel> {
    let model_id = model_id?.trim().trim_matches('/');
    MODELS
        .iter()
        .find(|m| m.kind == kind && (m.model_id == model_id || m.aliases.contains(&model_id)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::catalog::{Catalog, OperationSupport};

    /// The capabilities of a video model on an engine `kind` with `model_id` (and `extra` keys).
    fn capabilities(
        kind: &str,
        model_id: &str,
        extra: &str,
    ) -> crate::domain::catalog::Capabilities {
        let text = format!(
            "{}\n[[engines]]\nid = \"e\"\nkind = \"{kind}\"\nmodel_id = \"{model_id}\"\n{extra}\n\
             [[video_models]]\nid = \"m\"\nname = \"M\"\ndescription = \"d\"\nengine = \"e\"\n\
             plans = [\"starter\"]\n\
             pricing = [{{ resolution = \"768p\", per_second = \"0.10\", currency = \"usd\" }}]\n",
            super::super::DEFAULT_CATALOG
        );
        let catalog = Catalog::parse(&text).expect("catalog");
        catalog.capabilities(catalog.video_model("m").expect("model"))
    }

    #[test]
    fn every_entry_is_usable_and_named_once() {
        for (i, m) in MODELS.iter().enumerate() {
            let native = (m.renders)();
            assert!(native.seconds_range().is_some(), "{}", m.model_id);
            assert!(!native.sizes.is_empty(), "{}", m.model_id);
            assert!(
                MODELS[..i]
                    .iter()
                    .all(|o| (o.kind, o.model_id) != (m.kind, m.model_id)),
                "{} twice",
                m.model_id
            );
        }
        assert!(find(
            "fal",
            Some("fal-ai/kling-video/v2.5-turbo/pro/text-to-video")
        )
        .is_none());
        assert!(find("replicate", Some("fal-ai/veo3.1")).is_none());
        assert!(find("fal", None).is_none());
        let alias = find("fal", Some("fal-ai/veo3.1/image-to-video")).expect("an alias");
        assert_eq!(alias.model_id, "fal-ai/veo3.1");
    }

    #[test]
    fn veo_on_fal_takes_references_and_extends_natively() {
        let caps = capabilities("fal", "fal-ai/veo3.1", "");
        assert_eq!(
            caps.inputs,
            vec!["first_frame", "last_frame", "reference_images"]
        );
        assert_eq!(caps.native.max_reference_images, Some(3));
        assert!(caps.native.audio);
        assert_eq!(caps.seconds, Some((4, 8)));
        let ops = &caps.native.operations;
        assert!(ops.extension && !ops.video_to_video && ops.extension_includes_source);
        assert!(ops.extends(4, 4, false), "any video up to 8 s, by 7 s");
        assert!(!ops.extends(9, 4, false), "a source over 8 s is chained");
        assert!(!ops.extends(4, 8, false), "a segment over 7 s is chained");
        let o = caps.operations();
        assert_eq!(
            (o.remix, o.extension, o.edit),
            (
                OperationSupport::Chained,
                OperationSupport::Native,
                OperationSupport::Unavailable
            )
        );
        // The kind's default model (Kling 2.5 Turbo Pro) takes no reference images.
        let kling = capabilities("fal", "fal-ai/kling-video/v2.5-turbo/pro/text-to-video", "");
        assert_eq!(kling.inputs, vec!["first_frame", "last_frame"]);
        assert!(!kling.native.operations.extension);
        // The catalog's overrides still apply on top of the model's entry.
        let overridden = capabilities("fal", "fal-ai/veo3.1", "audio = false\ndurations = [8]");
        assert!(!overridden.native.audio);
        assert_eq!(overridden.seconds, Some((4, 8)));
        assert_eq!(overridden.native.duration_for(4), Some(8));
    }

    #[test]
    fn veo_on_replicate_takes_the_last_frame_and_three_references() {
        let caps = capabilities("replicate", "google/veo-3.1", "");
        assert_eq!(
            caps.inputs,
            vec!["first_frame", "last_frame", "reference_images"]
        );
        assert_eq!(caps.native.max_reference_images, Some(3));
        assert_eq!(caps.native.duration_for(5), Some(6));
        assert!(caps.native.audio);
        assert_eq!(caps.native.operations, NativeOperations::default());
        // hailuo-02 (the kind's default) has no reference images.
        let hailuo = capabilities("replicate", "minimax/hailuo-02", "");
        assert_eq!(hailuo.inputs, vec!["first_frame", "last_frame"]);
    }

    #[test]
    fn video_to_video_models_edit_natively_within_their_bounds() {
        for (kind, model, max) in [
            ("replicate", "luma/modify-video", 30.0),
            ("fal", "fal-ai/kling-video/o1/video-to-video/edit", 10.05),
        ] {
            let caps = capabilities(kind, model, "");
            assert!(caps.inputs.is_empty(), "{model}");
            let o = caps.operations();
            assert_eq!(
                (o.remix, o.extension, o.edit),
                (
                    OperationSupport::Native,
                    OperationSupport::Unavailable,
                    OperationSupport::Native
                ),
                "{model}"
            );
            assert_eq!(caps.native.operations.max_video_to_video_seconds, Some(max));
            assert!(caps.native.operations.video_to_video_takes(max));
            assert!(!caps.native.operations.video_to_video_takes(max + 0.1));
        }
        // A catalog claiming a first frame for a model that takes none is refused.
        let text = format!(
            "{}\n[[engines]]\nid = \"e\"\nkind = \"replicate\"\nmodel_id = \"luma/modify-video\"\n\
             [[video_models]]\nid = \"m\"\nname = \"M\"\ndescription = \"d\"\nengine = \"e\"\n\
             plans = [\"starter\"]\ninputs = [\"first_frame\"]\n\
             pricing = [{{ resolution = \"768p\", per_second = \"0.10\", currency = \"usd\" }}]\n",
            super::super::DEFAULT_CATALOG
        );
        assert!(Catalog::parse(&text).is_err());
    }
}
