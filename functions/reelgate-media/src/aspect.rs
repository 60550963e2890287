//! Aspect ratios and the 768p output sizes they map to.

/// Output size of the short side, in pixels (reelgate renders at "768p").
pub const SHORT_SIDE: u32 = 768;

/// The aspect ratios a create request may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AspectRatio {
    /// Follow the first-frame image (see [`output_dimensions`]), else 16:9.
    Auto,
    R21x9,
    R16x9,
    R4x3,
    R1x1,
    R3x4,
    R9x16,
}

/// The fixed ratios with their 768p sizes, in the order used for `Auto` ties.
const FIXED: [(AspectRatio, u32, u32); 6] = [
    (AspectRatio::R16x9, 1366, 768),
    (AspectRatio::R9x16, 768, 1366),
    (AspectRatio::R1x1, 768, 768),
    (AspectRatio::R4x3, 1024, 768),
    (AspectRatio::R3x4, 768, 1024),
    (AspectRatio::R21x9, 1792, 768),
];

impl AspectRatio {
    /// Parses the API spelling: `Auto`, `21:9`, `16:9`, `4:3`, `1:1`, `3:4`, `9:16`.
    /// `auto` is accepted in any letter case; anything else gives `None`.
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim() {
            "21:9" => Some(Self::R21x9),
            "16:9" => Some(Self::R16x9),
            "4:3" => Some(Self::R4x3),
            "1:1" => Some(Self::R1x1),
            "3:4" => Some(Self::R3x4),
            "9:16" => Some(Self::R9x16),
            other if other.eq_ignore_ascii_case("auto") => Some(Self::Auto),
            _ => None,
        }
    }

    /// The API spelling (`Auto`, `21:9`, ...), the inverse of [`AspectRatio::parse`].
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Auto => "Auto",
            Self::R21x9 => "21:9",
            Self::R16x9 => "16:9",
            Self::R4x3 => "4:3",
            Self::R1x1 => "1:1",
            Self::R3x4 => "3:4",
            Self::R9x16 => "9:16",
        }
    }
}

impl std::fmt::Display for AspectRatio {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Output frame size for an aspect ratio: 768 px on the short side.
///
/// | ratio | size |
/// |---|---|
/// | 16:9 | 1366x768 |
/// | 9:16 | 768x1366 |
/// | 21:9 | 1792x768 |
/// | 4:3 | 1024x768 |
/// | 1:1 | 768x768 |
/// | 3:4 | 768x1024 |
///
/// `Auto` picks, of the six ratios above, the one nearest to the first-frame
/// image's width/height ratio when `first_frame` is given (nearest on a
/// logarithmic scale, so 2:1 and 1:2 are treated symmetrically; ties go to the
/// earlier entry of 16:9, 9:16, 1:1, 4:3, 3:4, 21:9). Without a first frame, or
/// when it has a zero side, `Auto` is 16:9 (1366x768).
pub fn output_dimensions(aspect: AspectRatio, first_frame: Option<(u32, u32)>) -> (u32, u32) {
    let fixed = |want: AspectRatio| {
        FIXED
            .iter()
            .find(|(a, _, _)| *a == want)
            .map_or((1366, 768), |&(_, w, h)| (w, h))
    };
    match aspect {
        AspectRatio::Auto => match first_frame {
            Some((w, h)) if w > 0 && h > 0 => {
                let target = (f64::from(w) / f64::from(h)).ln();
                let mut best = (1366, 768);
                let mut best_dist = f64::INFINITY;
                for &(_, fw, fh) in &FIXED {
                    let dist = ((f64::from(fw) / f64::from(fh)).ln() - target).abs();
                    if dist < best_dist - 1e-12 {
                        best_dist = dist;
                        best = (fw, fh);
                    }
                }
                best
            }
            _ => fixed(AspectRatio::R16x9),
        },
        other => fixed(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_round_trips() {
        for s in ["Auto", "21:9", "16:9", "4:3", "1:1", "3:4", "9:16"] {
            let a = AspectRatio::parse(s);
            assert_eq!(a.map(|a| a.as_str()), Some(s));
        }
        assert_eq!(AspectRatio::parse("auto"), Some(AspectRatio::Auto));
        assert_eq!(AspectRatio::parse("16x9"), None);
        assert_eq!(AspectRatio::parse(""), None);
    }

    #[test]
    fn fixed_dimensions() {
        let cases = [
            (AspectRatio::R16x9, (1366, 768)),
            (AspectRatio::R9x16, (768, 1366)),
            (AspectRatio::R21x9, (1792, 768)),
            (AspectRatio::R4x3, (1024, 768)),
            (AspectRatio::R1x1, (768, 768)),
            (AspectRatio::R3x4, (768, 1024)),
        ];
        for (a, dims) in cases {
            assert_eq!(output_dimensions(a, None), dims);
            assert_eq!(output_dimensions(a, Some((10, 1000))), dims);
        }
    }

    #[test]
    fn auto_follows_first_frame() {
        assert_eq!(output_dimensions(AspectRatio::Auto, None), (1366, 768));
        assert_eq!(
            output_dimensions(AspectRatio::Auto, Some((0, 5))),
            (1366, 768)
        );
        assert_eq!(
            output_dimensions(AspectRatio::Auto, Some((1920, 1080))),
            (1366, 768)
        );
        assert_eq!(
            output_dimensions(AspectRatio::Auto, Some((1080, 1920))),
            (768, 1366)
        );
        assert_eq!(
            output_dimensions(AspectRatio::Auto, Some((640, 480))),
            (1024, 768)
        );
        assert_eq!(
            output_dimensions(AspectRatio::Auto, Some((500, 510))),
            (768, 768)
        );
        assert_eq!(
            output_dimensions(AspectRatio::Auto, Some((3000, 1000))),
            (1792, 768)
        );
        assert_eq!(
            output_dimensions(AspectRatio::Auto, Some((600, 800))),
            (768, 1024)
        );
    }
}
