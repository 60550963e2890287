//! A source video the caller sends as a file (`video` on `POST /v1/videos/edits` and
//! `/extensions`): checked at create, before anything is reserved, with the conform stage's
//! own reading of it, and decoded through to its last picture, so that a file the workflow
//! could not use is a 400 naming `video`, never a failed job.

use crate::domain::catalog::Capabilities;
use crate::domain::error::{ApiError, ApiResult};
use bytes::Bytes;
use std::future::Future;
use std::pin::Pin;

/// The largest source file taken, in bytes (the form carrying it is within the request body
/// limit, `max_json_bytes`, 32 MiB by default, as well).
pub const MAX_UPLOAD_BYTES: u64 = 32 * 1024 * 1024;
/// The most pixels a source picture may have (1920x1080).
pub const MAX_PIXELS: u64 = 1920 * 1080;

/// A source file that passed the checks.
#[derive(Clone, Debug)]
pub struct CheckedUpload {
    pub bytes: Bytes,
    pub width: u32,
    pub height: u32,
    pub duration_secs: f64,
}

impl CheckedUpload {
    /// Its length in whole seconds (at least 1), as a job counts it.
    pub fn whole_seconds(&self) -> i64 {
        (self.duration_secs.round() as i64).max(1)
    }

    /// Of the aspect ratios the model renders, the one nearest the source's shape (on a
    /// logarithmic scale, as `Auto` chooses), so that the output keeps its orientation.
    pub fn aspect_ratio(&self, capabilities: &Capabilities) -> Option<String> {
        let shape = |w: u32, h: u32| (f64::from(w) / f64::from(h)).ln();
        let target = shape(self.width, self.height);
        capabilities
            .aspect_ratios
            .iter()
            .filter_map(|name| {
                let ratio = reelgate_media::AspectRatio::parse(name)?;
                (ratio != reelgate_media::AspectRatio::Auto).then_some((name, ratio))
            })
            .map(|(name, ratio)| {
                let (w, h) = reelgate_media::output_dimensions(ratio, None);
                (name, (shape(w, h) - target).abs())
            })
            .fold(None, |best: Option<(&String, f64)>, (name, d)| match best {
                Some((_, bd)) if bd <= d + 1e-12 => best,
                _ => Some((name, d)),
            })
            .map(|(name, _)| name.clone())
    }
}

/// How a source file is checked: [`check`], which decodes every picture.
pub type UploadCheck =
    fn(Bytes, f64) -> Pin<Box<dyn Future<Output = ApiResult<CheckedUpload>> + Send>>;

/// A source file sent with the request, with its check. The check travels as a value so that
/// only the routes that take files link the H.264 decoder: the console names sources by id and
/// passes no file (`tests/media_code.rs` in the Lambda crate holds it to that).
pub struct SourceFile {
    pub bytes: Bytes,
    pub check: UploadCheck,
}

/// Splits an optional source file into the bytes the request parser reads and the check
/// [`crate::domain::videos::source_request::resolve`] runs.
pub fn split(file: Option<SourceFile>) -> (Option<Bytes>, Option<UploadCheck>) {
    match file {
        Some(f) => (Some(f.bytes), Some(f.check)),
        None => (None, None),
    }
}

/// The caller's source file with this module's check, for the routes that take files.
pub fn file(bytes: Bytes) -> SourceFile {
    SourceFile {
        bytes,
        check: |bytes, max_secs| Box::pin(check(bytes, max_secs)),
    }
}

/// Checks the caller's source file: at most [`MAX_UPLOAD_BYTES`], an MP4 whose H.264 track
/// the conform stage decodes (Baseline, Main or High, 8-bit 4:2:0, progressive), at most
/// [`MAX_PIXELS`] a picture and `max_secs` long, every picture decodable. Each refusal is a
/// 400 naming `video`, with the reason in words.
pub async fn check(bytes: Bytes, max_secs: f64) -> ApiResult<CheckedUpload> {
    if bytes.len() as u64 > MAX_UPLOAD_BYTES {
        return Err(ApiError::invalid(
            "video",
            format!(
                "video is {} bytes; a source file may have at most {} MiB.",
                bytes.len(),
                MAX_UPLOAD_BYTES / (1024 * 1024)
            ),
        ));
    }
    let sniffed = reelgate_media::sniff(&bytes[..bytes.len().min(4096)]);
    if sniffed.kind != reelgate_media::MediaKind::Video {
        return Err(ApiError::invalid(
            "video",
            format!(
                "video must be an MP4 file; this content looks like {}.",
                sniffed.mime
            ),
        ));
    }
    let file = bytes.clone();
    let checked = tokio::task::spawn_blocking(move || {
        let source = reelgate_media::check_source(&file, max_secs, MAX_PIXELS)?;
        // Decoding through to the last picture proves every sample is there and decodes.
        reelgate_media::last_frame_jpeg(&file)?;
        Ok::<_, reelgate_media::MediaError>(source)
    })
    .await
    .map_err(|e| ApiError::internal("checking a source video", e))?
    .map_err(|e| {
        ApiError::invalid(
            "video",
            format!(
                "video must be an H.264 MP4 (8-bit 4:2:0, progressive) of at most 1920x1080 and \
                 {max_secs} s whose pictures all decode: {e}."
            ),
        )
    })?;
    Ok(CheckedUpload {
        bytes,
        width: checked.width,
        height: checked.height,
        duration_secs: checked.duration_secs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::catalog::native_renders::NativeRenders;

    fn capabilities(ratios: &[&str]) -> Capabilities {
        Capabilities {
            inputs: Vec::new(),
            aspect_ratios: ratios.iter().map(|r| (*r).to_owned()).collect(),
            seconds: Some((4, 15)),
            native: NativeRenders::kind_default("reference", None),
        }
    }

    fn upload(width: u32, height: u32, secs: f64) -> CheckedUpload {
        CheckedUpload {
            bytes: Bytes::new(),
            width,
            height,
            duration_secs: secs,
        }
    }

    #[test]
    fn the_ratio_follows_the_sources_shape_among_the_models() {
        let all = capabilities(&["Auto", "21:9", "16:9", "4:3", "1:1", "3:4", "9:16"]);
        assert_eq!(
            upload(1920, 1080, 4.0).aspect_ratio(&all).as_deref(),
            Some("16:9")
        );
        assert_eq!(
            upload(720, 1280, 4.0).aspect_ratio(&all).as_deref(),
            Some("9:16")
        );
        assert_eq!(
            upload(640, 480, 4.0).aspect_ratio(&all).as_deref(),
            Some("4:3")
        );
        let landscape_only = capabilities(&["16:9"]);
        assert_eq!(
            upload(720, 1280, 4.0)
                .aspect_ratio(&landscape_only)
                .as_deref(),
            Some("16:9")
        );
        assert_eq!(
            upload(720, 1280, 4.0).aspect_ratio(&capabilities(&["Auto"])),
            None
        );
    }

    #[test]
    fn whole_seconds_round_and_never_reach_zero() {
        assert_eq!(upload(16, 16, 4.4).whole_seconds(), 4);
        assert_eq!(upload(16, 16, 4.6).whole_seconds(), 5);
        assert_eq!(upload(16, 16, 0.2).whole_seconds(), 1);
    }
}
