//! Downloading and checking the media a render is conditioned on.

use std::time::Duration;

use bytes::Bytes;
use image::RgbImage;
use reelgate_media::{decode_image, probe_mp4, sniff, AudioBed, MediaKind};

use crate::protocol::{codes, operations, RenderError, RenderInputs, RenderSource};

/// Images of this size or more are refused (`input_invalid`).
pub const MAX_IMAGE_BYTES: usize = 30 * 1024 * 1024;
/// Video and audio references above this size are refused (`input_invalid`).
pub const MAX_MEDIA_BYTES: usize = 200 * 1024 * 1024;
/// Allowed duration of reference video and audio, in seconds.
pub const REFERENCE_SECONDS: std::ops::RangeInclusive<f64> = 2.0..=15.0;
/// Slack on the duration bounds for container rounding.
const DURATION_SLACK: f64 = 0.05;

/// What the renderer uses from the inputs.
#[derive(Default)]
pub(crate) struct FetchedInputs {
    pub first_frame: Option<RgbImage>,
    pub last_frame: Option<RgbImage>,
    pub audio_bed: Option<AudioBed>,
    /// Reference images, then a still from each reference video, shown in the clip in turn.
    pub pictures: Vec<RgbImage>,
    /// A remix's or an edit's source, as frames sampled through it.
    pub source_frames: Vec<RgbImage>,
}

fn unreadable(what: &str, detail: impl std::fmt::Display) -> RenderError {
    RenderError {
        code: codes::INPUT_UNREADABLE.into(),
        message: format!("{what}: {detail}"),
    }
}

fn invalid(what: &str, detail: impl std::fmt::Display) -> RenderError {
    RenderError {
        code: codes::INPUT_INVALID.into(),
        message: format!("{what}: {detail}"),
    }
}

/// Plain GET of a (signed) URL with a size cap.
async fn download(
    http: &reqwest::Client,
    what: &str,
    url: &str,
    max: usize,
) -> Result<Bytes, RenderError> {
    let mut response = http
        .get(url)
        .timeout(Duration::from_secs(120))
        .send()
        .await
        .map_err(|e| unreadable(what, format!("download failed: {e}")))?;
    if !response.status().is_success() {
        return Err(unreadable(
            what,
            format!("download failed with HTTP {}", response.status().as_u16()),
        ));
    }
    if let Some(len) = response.content_length() {
        if len as usize >= max {
            return Err(invalid(
                what,
                format!("{len} bytes is over the {max} byte limit"),
            ));
        }
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| unreadable(what, format!("download interrupted: {e}")))?
    {
        body.extend_from_slice(&chunk);
        if body.len() >= max {
            return Err(invalid(what, format!("larger than the {max} byte limit")));
        }
    }
    if body.is_empty() {
        return Err(unreadable(what, "download was empty"));
    }
    Ok(Bytes::from(body))
}

async fn fetch_image(
    http: &reqwest::Client,
    what: &str,
    url: &str,
) -> Result<RgbImage, RenderError> {
    let bytes = download(http, what, url, MAX_IMAGE_BYTES).await?;
    let what_owned = what.to_string();
    tokio::task::spawn_blocking(move || {
        decode_image(&bytes).map_err(|e| unreadable(&what_owned, e))
    })
    .await
    .map_err(|e| unreadable(what, format!("decoder crashed: {e}")))?
}

fn check_duration(what: &str, secs: f64) -> Result<(), RenderError> {
    let (lo, hi) = (*REFERENCE_SECONDS.start(), *REFERENCE_SECONDS.end());
    if secs < lo - DURATION_SLACK || secs > hi + DURATION_SLACK {
        return Err(invalid(
            what,
            format!("duration {secs:.2} s is outside {lo}–{hi} s"),
        ));
    }
    Ok(())
}

/// WAV duration from its header: data bytes / (rate * block align).
fn wav_duration(bytes: &[u8]) -> Option<f64> {
    if bytes.len() < 12 || &bytes[0..4] != b"RIFF" || &bytes[8..12] != b"WAVE" {
        return None;
    }
    let mut pos = 12usize;
    let mut byte_rate = None;
    while pos + 8 <= bytes.len() {
        let id = &bytes[pos..pos + 4];
        let len = u32::from_le_bytes([
            bytes[pos + 4],
            bytes[pos + 5],
            bytes[pos + 6],
            bytes[pos + 7],
        ]) as usize;
        let body = pos + 8;
        if id == b"fmt " && body + 12 <= bytes.len() {
            byte_rate = Some(u32::from_le_bytes([
                bytes[body + 8],
                bytes[body + 9],
                bytes[body + 10],
                bytes[body + 11],
            ]));
        } else if id == b"data" {
            let available = len.min(bytes.len().saturating_sub(body));
            return byte_rate
                .filter(|r| *r > 0)
                .map(|r| available as f64 / f64::from(r));
        }
        pos = body.saturating_add(len + (len & 1));
    }
    None
}

/// Width of the still taken from a reference video.
const STILL_WIDTH: u32 = 640;

async fn check_video(
    http: &reqwest::Client,
    what: &str,
    url: &str,
) -> Result<Option<RgbImage>, RenderError> {
    let bytes = download(http, what, url, MAX_MEDIA_BYTES).await?;
    let kind = sniff(&bytes[..bytes.len().min(512)]);
    if kind.kind != MediaKind::Video {
        return Err(unreadable(
            what,
            format!("not a video (looks like {})", kind.mime),
        ));
    }
    if matches!(
        kind.mime,
        "video/mp4" | "video/quicktime" | "video/3gpp" | "video/3gpp2"
    ) {
        let probe = probe_mp4(&bytes).map_err(|e| unreadable(what, e))?;
        let secs = probe
            .video
            .as_ref()
            .map_or(probe.duration_secs, |v| v.duration_secs);
        check_duration(what, secs)?;
        // A still from the middle of the clip is what the render shows of it.
        let still = tokio::task::spawn_blocking(move || {
            reelgate_media::sample_frames_jpeg(&bytes, STILL_WIDTH, 1)
                .ok()
                .and_then(|mut f| f.pop())
                .and_then(|jpeg| decode_image(&jpeg).ok())
        })
        .await
        .map_err(|e| unreadable(what, format!("decoder crashed: {e}")))?;
        return Ok(still);
    }
    Ok(None)
}

async fn check_audio(
    http: &reqwest::Client,
    what: &str,
    url: &str,
) -> Result<Option<AudioBed>, RenderError> {
    let bytes = download(http, what, url, MAX_MEDIA_BYTES).await?;
    let kind = sniff(&bytes[..bytes.len().min(512)]);
    match kind.mime {
        "audio/wav" => {
            let secs = wav_duration(&bytes)
                .ok_or_else(|| unreadable(what, "WAV header has no data chunk"))?;
            check_duration(what, secs)?;
            // 16-bit PCM becomes the audio bed; other WAV encodings are accepted but not mixed.
            Ok(AudioBed::from_wav(&bytes).ok())
        }
        "audio/mp4" | "video/mp4" => {
            let probe = probe_mp4(&bytes).map_err(|e| unreadable(what, e))?;
            let audio = probe
                .audio
                .ok_or_else(|| unreadable(what, "MP4 has no audio track"))?;
            check_duration(what, audio.duration_secs)?;
            Ok(None)
        }
        _ if kind.kind == MediaKind::Audio => Ok(None),
        other => Err(unreadable(what, format!("not audio (looks like {other})"))),
    }
}

/// The longest source video taken, in seconds (an extended video lasts at most 60 s).
pub const MAX_SOURCE_SECONDS: f64 = 60.0;
/// The most pixels a source picture may have (1920x1080).
const MAX_SOURCE_PIXELS: u64 = 1920 * 1080;
/// Width of the frames taken from a source video (scaled to the output when drawn).
const SOURCE_FRAME_WIDTH: u32 = 640;

/// What the render takes of its source: frames through it (remix, edit) or its last frame,
/// which the continuation opens with (extension). Anything but an H.264 MP4 within the
/// limits, every picture decodable, is `input_invalid` or `input_unreadable`.
async fn fetch_source(
    http: &reqwest::Client,
    source: &RenderSource,
) -> Result<(Vec<RgbImage>, Option<RgbImage>), RenderError> {
    let what = "source.video_url";
    let bytes = download(http, what, &source.video_url, MAX_MEDIA_BYTES).await?;
    let extension = source.operation == operations::EXTENSION;
    tokio::task::spawn_blocking(move || {
        reelgate_media::check_source(
            &bytes,
            MAX_SOURCE_SECONDS + DURATION_SLACK,
            MAX_SOURCE_PIXELS,
        )
        .map_err(|e| invalid(what, e))?;
        let decode = |jpeg: Vec<u8>| decode_image(&jpeg).map_err(|e| unreadable(what, e));
        if extension {
            let last = reelgate_media::last_frame_jpeg(&bytes).map_err(|e| unreadable(what, e))?;
            return Ok((Vec::new(), Some(decode(last)?)));
        }
        let frames = reelgate_media::sample_frames_jpeg(
            &bytes,
            SOURCE_FRAME_WIDTH,
            reelgate_media::MAX_SOURCE_FRAMES as u32,
        )
        .map_err(|e| unreadable(what, e))?;
        let frames = frames
            .into_iter()
            .map(decode)
            .collect::<Result<Vec<_>, _>>()?;
        Ok((frames, None))
    })
    .await
    .map_err(|e| unreadable(what, format!("decoder crashed: {e}")))?
}

/// Downloads and checks every input. First/last frames and reference images
/// are decoded for use; MP4/MOV video and M4A/MP4/WAV audio references must
/// last 2–15 s; a still from the middle of each H.264 reference video joins
/// the reference pictures; the first 16-bit PCM WAV reference becomes the
/// audio bed.
pub(crate) async fn fetch_all(
    http: &reqwest::Client,
    inputs: &RenderInputs,
) -> Result<FetchedInputs, RenderError> {
    let mut out = FetchedInputs::default();
    if let Some(url) = &inputs.first_frame_url {
        out.first_frame = Some(fetch_image(http, "first_frame_url", url).await?);
    }
    if let Some(source) = &inputs.source {
        let (frames, last) = fetch_source(http, source).await?;
        out.source_frames = frames;
        // An extension continues from the source's last picture.
        if out.first_frame.is_none() {
            out.first_frame = last;
        }
    }
    if let Some(url) = &inputs.last_frame_url {
        out.last_frame = Some(fetch_image(http, "last_frame_url", url).await?);
    }
    for (i, url) in inputs.reference_image_urls.iter().enumerate() {
        let picture = fetch_image(http, &format!("reference_image_urls[{i}]"), url).await?;
        out.pictures.push(picture);
    }
    for (i, url) in inputs.reference_video_urls.iter().enumerate() {
        if let Some(still) = check_video(http, &format!("reference_video_urls[{i}]"), url).await? {
            out.pictures.push(still);
        }
    }
    for (i, url) in inputs.reference_audio_urls.iter().enumerate() {
        let bed = check_audio(http, &format!("reference_audio_urls[{i}]"), url).await?;
        if out.audio_bed.is_none() {
            out.audio_bed = bed;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wav_duration_from_header() {
        let mut wav = b"RIFF\0\0\0\0WAVEfmt ".to_vec();
        wav.extend_from_slice(&16u32.to_le_bytes());
        wav.extend_from_slice(&1u16.to_le_bytes());
        wav.extend_from_slice(&1u16.to_le_bytes());
        wav.extend_from_slice(&8000u32.to_le_bytes());
        wav.extend_from_slice(&16000u32.to_le_bytes());
        wav.extend_from_slice(&2u16.to_le_bytes());
        wav.extend_from_slice(&16u16.to_le_bytes());
        wav.extend_from_slice(b"data");
        wav.extend_from_slice(&32000u32.to_le_bytes());
        wav.resize(wav.len() + 32000, 0);
        assert_eq!(wav_duration(&wav), Some(2.0));
        assert_eq!(wav_duration(b"RIFF\0\0\0\0WAVE"), None);
        assert!(check_duration("x", 2.0).is_ok());
        assert!(check_duration("x", 15.04).is_ok());
        assert!(check_duration("x", 1.5).is_err());
        assert!(check_duration("x", 16.0).is_err());
    }
}
