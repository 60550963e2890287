//! What an engine renders natively, and how a job maps onto it (docs/engines.md).
//!
//! The service owns the video contract (768p H.264 + AAC lasting the seconds asked, in the job's
//! aspect ratio); an engine is asked only for what its provider documents. A job is mapped onto
//! the engine's shortest native duration at or above its seconds (the output is trimmed) and the
//! native size whose shape is nearest the job's ratio (the output is scaled to cover and
//! centre-cropped); the conform stage of the finalize step does the trimming and cropping. A job
//! no native duration covers is refused at create, before anything is reserved.

use reelgate_media::AspectRatio;
use serde::Serialize;

/// The seconds a video create may ask for (the spec's 4 to 15).
pub const CONTRACT_SECONDS: (u32, u32) = (4, 15);

/// The durations an engine renders, in whole seconds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Durations {
    /// Exactly these (e.g. the OpenAI Videos API's 4, 8 and 12).
    Set { values: Vec<u32> },
    /// `min`, `min + step`, … up to `max` (e.g. Nova Reel's 6 to 120 in steps of 6).
    Range { min: u32, max: u32, step: u32 },
}

impl Durations {
    /// The shortest native duration at or above `seconds`.
    pub fn shortest_at_least(&self, seconds: u32) -> Option<u32> {
        match self {
            Durations::Set { values } => values.iter().copied().filter(|v| *v >= seconds).min(),
            Durations::Range { min, max, step } => {
                if seconds <= *min {
                    return Some(*min);
                }
                let step = (*step).max(1);
                let steps = (seconds - min).div_ceil(step);
                let value = min.checked_add(steps.checked_mul(step)?)?;
                (value <= *max).then_some(value)
            }
        }
    }

    /// The longest native duration (0 for an empty set).
    pub fn longest(&self) -> u32 {
        match self {
            Durations::Set { values } => values.iter().copied().max().unwrap_or(0),
            Durations::Range { min, max, step } => {
                let step = (*step).max(1);
                if max < min {
                    0
                } else {
                    min + (max - min) / step * step
                }
            }
        }
    }
}

/// A frame size an engine renders, in pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Size {
    pub width: u32,
    pub height: u32,
}

impl Size {
    /// `WIDTHxHEIGHT`, both sides even and within 16..=4096.
    pub fn parse(text: &str) -> Option<Size> {
        let (w, h) = text.trim().split_once(['x', 'X'])?;
        let (width, height) = (w.trim().parse::<u32>().ok()?, h.trim().parse::<u32>().ok()?);
        let valid = |side: u32| (16..=4096).contains(&side) && side % 2 == 0;
        (valid(width) && valid(height)).then_some(Size { width, height })
    }

    fn shape(self) -> f64 {
        (f64::from(self.width) / f64::from(self.height)).ln()
    }
}

impl std::fmt::Display for Size {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}", self.width, self.height)
    }
}

/// What an engine renders natively: its kind's documented defaults, overridden per engine by
/// the catalog (`durations` or `duration_range`, `sizes`, `audio`, `max_image_bytes`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NativeRenders {
    pub durations: Durations,
    /// In the engine's order of preference; the first is its default orientation.
    pub sizes: Vec<Size>,
    /// Whether the engine renders a soundtrack (without one the conform stage lays the caller's
    /// first reference audio, or silence, under the picture).
    pub audio: bool,
    /// The largest image (first or last frame, reference image) the engine takes, in bytes.
    pub max_image_bytes: Option<u64>,
    /// The most reference images the engine takes (the API's own limit applies besides).
    pub max_reference_images: Option<usize>,
    /// The operations on an earlier video the engine does itself, given the source video.
    pub operations: NativeOperations,
}

/// The operations on a source video an engine does natively (the engine protocol's
/// `inputs.source`), with the provider's documented bounds on them; a source or a segment
/// outside them is chained onto a frame of the source (or, for an edit, refused at create).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct NativeOperations {
    /// Re-renders a source video guided by a prompt: remix and edit.
    pub video_to_video: bool,
    /// Renders the segment that continues a source video.
    pub extension: bool,
    /// The longest source video-to-video takes, in seconds (xAI's edits: 8.7 s).
    pub max_video_to_video_seconds: Option<f64>,
    /// The largest source video-to-video takes, in bytes (Runway's: a 16 MB data URI).
    pub max_video_to_video_bytes: Option<u64>,
    /// The source lengths an extension takes, in seconds (xAI: 2 to 15).
    pub extension_source_seconds: Option<(u32, u32)>,
    /// The segment lengths an extension renders (Veo: 7 s); `None`: the engine's durations.
    pub extension_durations: Option<Durations>,
    /// The engine extends only videos it rendered itself, named by its own render id (Veo,
    /// Luma); any other source is chained.
    pub extends_own_renders_only: bool,
    /// How long the provider keeps what it rendered, in hours (Veo's generated files: two
    /// days): an own render older than this is chained too.
    pub own_renders_kept_hours: Option<u32>,
    /// The engine answers an extension with the source and its continuation as one video
    /// (Veo, xAI), which is conformed whole instead of joined after the source.
    pub extension_includes_source: bool,
    /// The model renders only from a source video (a video-to-video model such as Luma's
    /// modify-video): a create without one is refused, and nothing is chained onto it.
    pub source_only: bool,
}

impl NativeOperations {
    /// The names an engine's `operations` list in the catalog uses.
    pub const NAMES: &'static [&'static str] = &["video_to_video", "extension"];

    /// The operations `names` lists (names outside [`Self::NAMES`] are the catalog check's),
    /// with no bounds: an engine declared this way takes any source (the engine protocol's).
    pub fn from_names(names: &[String]) -> NativeOperations {
        let has = |n: &str| names.iter().any(|x| x == n);
        NativeOperations {
            video_to_video: has("video_to_video"),
            extension: has("extension"),
            ..NativeOperations::default()
        }
    }

    /// Whether video-to-video takes a source of `seconds`.
    pub fn video_to_video_takes(&self, seconds: f64) -> bool {
        self.video_to_video
            && self
                .max_video_to_video_seconds
                .is_none_or(|max| seconds <= max + 1e-9)
    }

    /// Whether the engine extends natively a source of `source_seconds` by a segment of
    /// `seconds`, given whether it rendered the source itself (and still keeps it).
    pub fn extends(&self, source_seconds: i64, seconds: u32, own_render: bool) -> bool {
        let source_fits = self
            .extension_source_seconds
            .is_none_or(|(min, max)| (i64::from(min)..=i64::from(max)).contains(&source_seconds));
        let segment_fits = self
            .extension_durations
            .as_ref()
            .is_none_or(|d| d.shortest_at_least(seconds).is_some());
        self.extension
            && source_fits
            && segment_fits
            && (!self.extends_own_renders_only || own_render)
    }
}

/// The 768p sizes the engine protocol renders at (reelgate's own contract sizes).
fn contract_sizes() -> Vec<Size> {
    [
        AspectRatio::R16x9,
        AspectRatio::R9x16,
        AspectRatio::R1x1,
        AspectRatio::R4x3,
        AspectRatio::R3x4,
        AspectRatio::R21x9,
    ]
    .into_iter()
    .map(|a| {
        let (width, height) = reelgate_media::output_dimensions(a, None);
        Size { width, height }
    })
    .collect()
}

impl NativeRenders {
    /// The documented defaults of an engine kind (docs/engines.md cites each source):
    /// - `reference`, `http` and an `openai_videos` target in reelgate's shape: reelgate's own
    ///   contract, every second from 4 to 15 at the 768p sizes, with audio;
    /// - `openai_videos` in OpenAI's shape: `seconds` "4", "8" or "12", `size` 1280x720 or
    ///   720x1280 (sora-2), with audio;
    /// - `bedrock` (Amazon Nova Reel): 1280x720 at 24 fps, 6 s per shot and multi-shot clips up
    ///   to 120 s in steps of 6, no audio.
    pub fn kind_default(kind: &str, request_shape: Option<&str>) -> NativeRenders {
        let contract = || NativeRenders {
            durations: Durations::Range {
                min: CONTRACT_SECONDS.0,
                max: CONTRACT_SECONDS.1,
                step: 1,
            },
            sizes: contract_sizes(),
            audio: true,
            max_image_bytes: None,
            max_reference_images: None,
            operations: NativeOperations::default(),
        };
        match (kind, request_shape) {
            // The reference engine draws the source's frames: every operation is native, so
            // every path is testable offline. An `http` engine declares its own (`operations`),
            // since an engine written before `inputs.source` would ignore it.
            ("reference", _) => NativeRenders {
                operations: NativeOperations {
                    video_to_video: true,
                    extension: true,
                    ..NativeOperations::default()
                },
                ..contract()
            },
            ("openai_videos", Some("reelgate")) => contract(),
            ("openai_videos", _) => NativeRenders {
                durations: Durations::Set {
                    values: vec![4, 8, 12],
                },
                sizes: vec![
                    Size {
                        width: 1280,
                        height: 720,
                    },
                    Size {
                        width: 720,
                        height: 1280,
                    },
                ],
                audio: true,
                max_image_bytes: None,
                max_reference_images: None,
                operations: NativeOperations::default(),
            },
            // Veo renders 1080p and 4k only at 8 s: 720p is what every duration has.
            // Veo extends only its own videos, by 7 s, answering the whole extended video.
            ("veo", _) => NativeRenders {
                max_reference_images: Some(3),
                operations: NativeOperations {
                    extension: true,
                    extension_durations: Some(Durations::Set { values: vec![7] }),
                    extends_own_renders_only: true,
                    own_renders_kept_hours: Some(48),
                    extension_includes_source: true,
                    ..NativeOperations::default()
                },
                ..hosted(&[4, 6, 8], &[(1280, 720), (720, 1280)], true)
            },
            // Grok Imagine: 1 to 15 s at 720p in seven ratios, with audio; edits take a source
            // of at most 8.7 s, extensions one of 2 to 15 s and add 2 to 10 s.
            ("xai", _) => NativeRenders {
                durations: Durations::Range {
                    min: 1,
                    max: 15,
                    step: 1,
                },
                max_reference_images: Some(7),
                operations: NativeOperations {
                    video_to_video: true,
                    extension: true,
                    max_video_to_video_seconds: Some(8.7),
                    extension_source_seconds: Some((2, 15)),
                    extension_durations: Some(Durations::Range {
                        min: 2,
                        max: 10,
                        step: 1,
                    }),
                    extension_includes_source: true,
                    ..NativeOperations::default()
                },
                ..hosted(
                    &[],
                    &[
                        (1280, 720),
                        (720, 1280),
                        (720, 720),
                        (960, 720),
                        (720, 960),
                        (1080, 720),
                        (720, 1080),
                    ],
                    true,
                )
            },
            // gen4.5 takes any whole second from 2 to 10.
            ("runway", _) => NativeRenders {
                durations: Durations::Range {
                    min: 2,
                    max: 10,
                    step: 1,
                },
                // aleph2 re-renders a source video (remix and edit) at the source's length and
                // resolution. No Runway page states its longest source (resellers' pages say
                // 2 to 30 s; unconfirmed): 10 s, Runway's longest generation, is a bound that
                // also keeps a source of reelgate's bit rate well inside the 16 MB data URI.
                operations: NativeOperations {
                    video_to_video: true,
                    max_video_to_video_seconds: Some(10.0),
                    // Sent as a data URI of at most 16 MB: base64 of 12 MB.
                    max_video_to_video_bytes: Some(12_000_000),
                    ..NativeOperations::default()
                },
                ..hosted(
                    &[10],
                    &[
                        (1280, 720),
                        (720, 1280),
                        (960, 960),
                        (1104, 832),
                        (832, 1104),
                        (1584, 672),
                    ],
                    false,
                )
            },
            // Ray 2 extends its own generations (the segment only) and modifies a video of at
            // most 10 s.
            ("luma", _) => NativeRenders {
                operations: NativeOperations {
                    video_to_video: true,
                    extension: true,
                    max_video_to_video_seconds: Some(10.0),
                    extends_own_renders_only: true,
                    ..NativeOperations::default()
                },
                ..hosted(
                    &[5, 9],
                    &[
                        (1920, 1080),
                        (1080, 1920),
                        (1080, 1080),
                        (1440, 1080),
                        (1080, 1440),
                        (2520, 1080),
                    ],
                    false,
                )
            },
            ("fal", _) => hosted(&[5, 10], &[(1920, 1080), (1080, 1920), (1080, 1080)], false),
            ("replicate", _) => hosted(&[6, 10], &[(1366, 768)], false),
            ("bedrock", _) => NativeRenders {
                durations: Durations::Range {
                    min: 6,
                    max: 120,
                    step: 6,
                },
                sizes: vec![Size {
                    width: 1280,
                    height: 720,
                }],
                audio: false,
                max_image_bytes: None,
                max_reference_images: None,
                operations: NativeOperations::default(),
            },
            _ => contract(),
        }
    }

    /// The native duration a job of `seconds` renders at, if any.
    pub fn duration_for(&self, seconds: u32) -> Option<u32> {
        self.durations.shortest_at_least(seconds)
    }

    /// The seconds a create may ask for on this engine: the API's range, cut at the engine's
    /// longest native duration (every shorter request maps onto some native duration).
    pub fn seconds_range(&self) -> Option<(u32, u32)> {
        let (min, max) = CONTRACT_SECONDS;
        let max = max.min(self.durations.longest());
        (max >= min && self.duration_for(min).is_some()).then_some((min, max))
    }

    /// The native size that best covers a frame of `aspect`: the one whose shape is nearest
    /// (on a logarithmic scale, so 2:1 and 1:2 weigh alike), and among sizes of that shape the
    /// smallest with 768 pixels or more on its short side, else the largest. `Auto` follows the
    /// first frame's shape when there is one, else takes the engine's first (default) size.
    pub fn size_for(&self, aspect: AspectRatio, first_frame: Option<(u32, u32)>) -> Option<Size> {
        let target = match (aspect, first_frame) {
            (AspectRatio::Auto, Some((w, h))) if w > 0 && h > 0 => {
                (f64::from(w) / f64::from(h)).ln()
            }
            (AspectRatio::Auto, _) => return self.sizes.first().copied(),
            (fixed, _) => {
                let (w, h) = reelgate_media::output_dimensions(fixed, None);
                (f64::from(w) / f64::from(h)).ln()
            }
        };
        let distance = |s: &Size| (s.shape() - target).abs();
        // The first size of the nearest shape (ties keep the engine's order), then its tiers.
        let best = self.sizes.iter().copied().reduce(|best, s| {
            if distance(&s) < distance(&best) - 1e-9 {
                s
            } else {
                best
            }
        })?;
        let same_shape: Vec<Size> = self
            .sizes
            .iter()
            .copied()
            .filter(|s| (s.shape() - best.shape()).abs() <= 1e-9)
            .collect();
        let short = |s: &Size| s.width.min(s.height);
        let area = |s: &Size| u64::from(s.width) * u64::from(s.height);
        same_shape
            .iter()
            .copied()
            .filter(|s| short(s) >= reelgate_media::SHORT_SIDE)
            .min_by_key(area)
            .or_else(|| same_shape.iter().copied().max_by_key(area))
    }
}

/// A hosted provider's documented renders: a set of durations, sizes, audio.
pub(crate) fn hosted(durations: &[u32], sizes: &[(u32, u32)], audio: bool) -> NativeRenders {
    NativeRenders {
        durations: Durations::Set {
            values: durations.to_vec(),
        },
        sizes: sizes
            .iter()
            .map(|&(width, height)| Size { width, height })
            .collect(),
        audio,
        max_image_bytes: None,
        max_reference_images: None,
        operations: NativeOperations::default(),
    }
}

/// What the engine is asked to render for one job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RenderShape {
    pub seconds: u32,
    pub size: Size,
}

/// Maps a job onto the engine: `None` when no native duration covers `seconds`, which the
/// create refuses (so a job that reaches the worker always maps).
pub fn map_job(
    native: &NativeRenders,
    seconds: u32,
    aspect: AspectRatio,
    first_frame: Option<(u32, u32)>,
) -> Option<RenderShape> {
    Some(RenderShape {
        seconds: native.duration_for(seconds)?,
        size: native.size_for(aspect, first_frame)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(w: u32, h: u32) -> Size {
        Size {
            width: w,
            height: h,
        }
    }

    #[test]
    fn durations_map_to_the_shortest_native_one_at_or_above() {
        let set = Durations::Set {
            values: vec![12, 4, 8],
        };
        assert_eq!(set.shortest_at_least(4), Some(4));
        assert_eq!(set.shortest_at_least(6), Some(8));
        assert_eq!(set.shortest_at_least(13), None);
        assert_eq!(set.longest(), 12);
        let range = Durations::Range {
            min: 6,
            max: 120,
            step: 6,
        };
        assert_eq!(range.shortest_at_least(4), Some(6));
        assert_eq!(range.shortest_at_least(7), Some(12));
        assert_eq!(range.shortest_at_least(15), Some(18));
        assert_eq!(range.shortest_at_least(121), None);
        assert_eq!(range.longest(), 120);
        let odd = Durations::Range {
            min: 5,
            max: 12,
            step: 5,
        };
        assert_eq!(odd.longest(), 10);
        assert_eq!(odd.shortest_at_least(11), None);
    }

    #[test]
    fn sizes_cover_the_jobs_shape() {
        let openai = NativeRenders::kind_default("openai_videos", None);
        assert_eq!(
            openai.size_for(AspectRatio::R16x9, None),
            Some(size(1280, 720))
        );
        assert_eq!(
            openai.size_for(AspectRatio::R9x16, None),
            Some(size(720, 1280))
        );
        assert_eq!(
            openai.size_for(AspectRatio::R3x4, None),
            Some(size(720, 1280))
        );
        // A tie (1:1 between landscape and portrait) goes to the engine's first size.
        assert_eq!(
            openai.size_for(AspectRatio::R1x1, None),
            Some(size(1280, 720))
        );
        assert_eq!(
            openai.size_for(AspectRatio::Auto, Some((600, 900))),
            Some(size(720, 1280))
        );
        assert_eq!(
            openai.size_for(AspectRatio::Auto, None),
            Some(size(1280, 720))
        );
        // Among tiers of one shape: the smallest at 768p or more.
        let tiers = NativeRenders {
            sizes: vec![size(1280, 720), size(1920, 1080), size(3840, 2160)],
            ..openai.clone()
        };
        assert_eq!(
            tiers.size_for(AspectRatio::R16x9, None),
            Some(size(1920, 1080))
        );
        let small = NativeRenders {
            sizes: vec![size(640, 360), size(1280, 720)],
            ..openai
        };
        assert_eq!(
            small.size_for(AspectRatio::R16x9, None),
            Some(size(1280, 720))
        );
    }

    #[test]
    fn the_seconds_range_stops_at_the_longest_native_duration() {
        let openai = NativeRenders::kind_default("openai_videos", None);
        assert_eq!(openai.seconds_range(), Some((4, 12)));
        let reference = NativeRenders::kind_default("reference", None);
        assert_eq!(reference.seconds_range(), Some((4, 15)));
        let nova = NativeRenders::kind_default("bedrock", None);
        assert_eq!(nova.seconds_range(), Some((4, 15)));
        assert_eq!(
            map_job(&nova, 13, AspectRatio::R9x16, None),
            Some(RenderShape {
                seconds: 18,
                size: size(1280, 720)
            })
        );
        let short = NativeRenders {
            durations: Durations::Set { values: vec![2, 3] },
            ..openai
        };
        assert_eq!(short.seconds_range(), None);
    }

    #[test]
    fn sizes_parse_strictly() {
        assert_eq!(Size::parse("1280x720"), Some(size(1280, 720)));
        assert_eq!(Size::parse("1281x720"), None);
        assert_eq!(Size::parse("8x8"), None);
        assert_eq!(Size::parse("1280"), None);
        assert_eq!(Size::parse("99999x720"), None);
    }
}
