//! Timed captions burned into the picture: the dialogue a prompt holds inside `<d>…</d>`, drawn
//! with GNU Unifont's bitmap glyphs (the `unifont` crate embeds them, so nothing is read or
//! downloaded at run time). Unifont covers the Basic Multilingual Plane, Japanese kana and kanji
//! included, in 8×16 (half-width) and 16×16 (full-width) cells; captions scale them by whole
//! pixels.

/// One caption: its text and when it is on screen.
#[derive(Debug, Clone, PartialEq)]
pub struct Caption {
    pub text: String,
    /// Seconds from the start of the clip.
    pub start: f64,
    /// Seconds from the start of the clip (exclusive).
    pub end: f64,
}

/// The dialogue lines of a prompt: the trimmed text of every `<d>…</d>` pair, in order
/// (an unclosed `<d>` runs to the end of the prompt; empty lines are skipped).
pub fn dialogue(prompt: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = prompt;
    while let Some(open) = rest.find("<d>") {
        let after = &rest[open + 3..];
        let (line, next) = match after.find("</d>") {
            Some(close) => (&after[..close], &after[close + 4..]),
            None => (after, ""),
        };
        let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
        if !line.is_empty() {
            out.push(line);
        }
        rest = next;
    }
    out
}

/// The prompt without its `<d>…</d>` dialogue: what the picture's look derives from, so the
/// same scene with and without lines differs only by its captions.
pub fn without_dialogue(prompt: &str) -> String {
    let mut out = String::new();
    let mut rest = prompt;
    while let Some(open) = rest.find("<d>") {
        out.push_str(&rest[..open]);
        rest = match rest[open + 3..].find("</d>") {
            Some(close) => &rest[open + 3 + close + 4..],
            None => "",
        };
    }
    out.push_str(rest);
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Spreads dialogue lines over a clip of `seconds`: each line gets time in proportion to its
/// length (at least a second where the clip allows), in order, with a short gap between lines.
pub fn timed(lines: &[String], seconds: f64) -> Vec<Caption> {
    if lines.is_empty() || seconds <= 0.0 {
        return Vec::new();
    }
    let gap = 0.15_f64.min(seconds / (lines.len() as f64 * 10.0));
    let usable = seconds - gap * (lines.len() as f64 + 1.0);
    let weights: Vec<f64> = lines
        .iter()
        .map(|l| (l.chars().count() as f64).max(4.0))
        .collect();
    let total: f64 = weights.iter().sum();
    let mut t = gap;
    lines
        .iter()
        .zip(weights)
        .map(|(line, w)| {
            let span = usable * w / total;
            let caption = Caption {
                text: line.clone(),
                start: t,
                end: t + span,
            };
            t += span + gap;
            caption
        })
        .collect()
}

/// A glyph cell's width in font pixels (8 or 16); characters Unifont lacks draw as a blank
/// half-width cell.
fn cell_width(c: char) -> usize {
    unifont::get_glyph(c).map_or(8, |g| g.get_width())
}

/// Breaks `text` into lines at most `max_cells` font pixels wide: at spaces where there are
/// any, else between any two characters (Japanese has no spaces).
pub(crate) fn wrap(text: &str, max_px: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    let mut width = 0usize;
    let mut last_space: Option<(usize, usize)> = None; // byte index in `line`, width before it
    for c in text.chars() {
        let cw = cell_width(c);
        if width + cw > max_px && !line.is_empty() {
            match last_space {
                Some((at, w_before)) if c != ' ' => {
                    let tail = line[at + 1..].to_owned();
                    line.truncate(at);
                    lines.push(std::mem::take(&mut line));
                    width -= w_before + cell_width(' ');
                    line = tail;
                }
                _ => {
                    lines.push(std::mem::take(&mut line).trim_end().to_owned());
                    width = 0;
                }
            }
            last_space = None;
            if c == ' ' && line.is_empty() {
                continue;
            }
        }
        if c == ' ' {
            last_space = Some((line.len(), width));
        }
        line.push(c);
        width += cw;
    }
    if !line.trim().is_empty() {
        lines.push(line.trim_end().to_owned());
    }
    lines
}

/// Width in font pixels.
pub(crate) fn text_width(text: &str) -> usize {
    text.chars().map(cell_width).sum()
}

/// Calls `set(x, y)` for every lit font pixel of `text`, with the text's top-left at the origin.
pub(crate) fn for_each_pixel(text: &str, mut set: impl FnMut(usize, usize)) {
    let mut x0 = 0usize;
    for c in text.chars() {
        if let Some(glyph) = unifont::get_glyph(c) {
            let w = glyph.get_width();
            for y in 0..16 {
                for x in 0..w {
                    if glyph.get_pixel(x, y) {
                        set(x0 + x, y);
                    }
                }
            }
            x0 += w;
        } else {
            x0 += 8;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dialogue_is_taken_from_d_tags() {
        assert_eq!(
            dialogue(
                "a harbour at dusk <d>We sail at dawn.</d> gulls <d> 明日、出航する。 </d><d></d>"
            ),
            vec!["We sail at dawn.".to_owned(), "明日、出航する。".to_owned()]
        );
        assert!(dialogue("no dialogue here").is_empty());
        assert_eq!(
            without_dialogue("a harbour <d>We sail.</d> at dusk <d>unclosed"),
            "a harbour at dusk"
        );
        assert_eq!(
            dialogue("<d>unclosed line"),
            vec!["unclosed line".to_owned()]
        );
    }

    #[test]
    fn captions_cover_the_clip_in_order() {
        let lines = vec!["short".to_owned(), "a much longer second line".to_owned()];
        let c = timed(&lines, 8.0);
        assert_eq!(c.len(), 2);
        assert!(c[0].start > 0.0 && c[0].end <= c[1].start && c[1].end <= 8.0);
        assert!(c[1].end - c[1].start > c[0].end - c[0].start);
    }

    #[test]
    fn japanese_has_glyphs_and_wraps_without_spaces() {
        // Full-width: 16 font pixels each.
        assert_eq!(text_width("明日"), 32);
        let mut lit = 0;
        for_each_pixel("出航", |_, _| lit += 1);
        assert!(lit > 40, "kanji draw pixels ({lit})");
        let lines = wrap("明日の朝に出航する", 64);
        assert_eq!(lines, vec!["明日の朝", "に出航す", "る"]);
        let lines = wrap("we sail at dawn", 64);
        assert_eq!(lines, vec!["we sail", "at dawn"]);
    }
}
