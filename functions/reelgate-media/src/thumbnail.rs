//! JPEG thumbnails from H.264 MP4s.

use std::io::Cursor;

use image::imageops::FilterType;
use image::{DynamicImage, RgbImage};
use openh264::decoder::{DecodedYUV, Decoder, DecoderConfig, Flush};
use openh264::formats::YUVSource;
use openh264::OpenH264API;

use crate::demux::avcc_to_annexb;
use crate::{probe, MediaError};

/// How far into the clip the thumbnail is taken.
const THUMBNAIL_AT_SECS: f64 = 0.5;
const JPEG_QUALITY: u8 = 85;

fn to_rgb(frame: &DecodedYUV<'_>) -> Result<RgbImage, MediaError> {
    let (w, h) = frame.dimensions();
    let mut rgb = vec![0u8; w * h * 3];
    frame.write_rgb8(&mut rgb);
    RgbImage::from_raw(w as u32, h as u32, rgb)
        .ok_or_else(|| MediaError::VideoDecode("bad frame size".into()))
}

/// The H.264 track a thumbnail is taken from.
struct AvcTrack {
    track_id: u32,
    /// SPS and PPS NAL units from `avcC`.
    params: Vec<Vec<u8>>,
    length_size: usize,
    sample_count: u32,
    secs: f64,
}

/// Decodes the frame shown about 0.5 s into the clip (the last frame for
/// shorter clips) of the first H.264 track, scales it to `width` pixels wide
/// keeping the aspect ratio, and encodes it as JPEG. Streams with B-frames
/// (e.g. from x264) are supported; the decoder runs without automatic
/// flushing so frames come out in display order.
pub fn thumbnail_jpeg(mp4: &[u8], width: u32) -> Result<Vec<u8>, MediaError> {
    guarded(|| thumbnail(mp4, width))
}

/// Frames sampled evenly through the clip for moderation: `count` JPEGs `width` pixels wide,
/// taken at (i + 0.5) / count of its duration, from the first H.264 track.
pub fn sample_frames_jpeg(mp4: &[u8], width: u32, count: u32) -> Result<Vec<Vec<u8>>, MediaError> {
    let count = count.clamp(1, 32);
    guarded(|| frames(mp4, width, |secs| evenly(count, secs)))
}

/// `count` times spread evenly through `secs`: (i + 0.5) / count of it.
fn evenly(count: u32, secs: f64) -> Vec<f64> {
    (0..count)
        .map(|i| (f64::from(i) + 0.5) / f64::from(count) * secs)
        .collect()
}

/// How many frames a spritesheet shows, and in how many columns.
pub const SPRITESHEET_FRAMES: u32 = 16;
pub const SPRITESHEET_COLUMNS: u32 = 4;

/// One JPEG grid of [`SPRITESHEET_FRAMES`] frames taken evenly through the clip (at
/// (i + 0.5) / n of its duration), each `tile_width` pixels wide, left to right and top to
/// bottom in [`SPRITESHEET_COLUMNS`] columns: what a scrubber previews.
pub fn spritesheet_jpeg(mp4: &[u8], tile_width: u32) -> Result<Vec<u8>, MediaError> {
    check_width(tile_width)?;
    let n = SPRITESHEET_FRAMES;
    let tiles = guarded(|| pictures(mp4, |secs| evenly(n, secs), Some(tile_width)))?;
    let (tw, th) = tiles
        .first()
        .map(|t| (t.width(), t.height()))
        .ok_or_else(|| MediaError::VideoDecode("the decoder produced no picture".into()))?;
    let columns = SPRITESHEET_COLUMNS.min(n);
    let rows = n.div_ceil(columns);
    let mut sheet = RgbImage::new(tw * columns, th * rows);
    for (i, tile) in tiles.iter().enumerate() {
        let i = i as u32;
        image::imageops::replace(
            &mut sheet,
            tile,
            i64::from(i % columns * tw),
            i64::from(i / columns * th),
        );
    }
    jpeg(sheet)
}

/// The clip's first frame at its own size, as JPEG: what a render chained onto an earlier
/// video (a remix on an engine without video-to-video) opens with.
pub fn first_frame_jpeg(mp4: &[u8]) -> Result<Vec<u8>, MediaError> {
    let mut pictures = guarded(|| pictures(mp4, |_| vec![0.0], None))?;
    let first = pictures
        .pop()
        .ok_or_else(|| MediaError::VideoDecode("the decoder produced no picture".into()))?;
    jpeg(first)
}

/// The clip's last frame at its own size, as JPEG: what the segment of an extension chained
/// onto the clip opens with.
pub fn last_frame_jpeg(mp4: &[u8]) -> Result<Vec<u8>, MediaError> {
    // A time past the end picks the last picture the decoder produces.
    let mut pictures = guarded(|| pictures(mp4, |secs| vec![secs + 1.0], None))?;
    let last = pictures
        .pop()
        .ok_or_else(|| MediaError::VideoDecode("the decoder produced no picture".into()))?;
    jpeg(last)
}

/// `decode`, with a panic in the demuxer (not ours) turned into an error.
fn guarded<T>(decode: impl FnOnce() -> Result<T, MediaError>) -> Result<T, MediaError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(decode)).unwrap_or_else(|_| {
        Err(MediaError::NotMp4(
            "malformed MP4 (the demuxer panicked)".into(),
        ))
    })
}

fn check_width(width: u32) -> Result<(), MediaError> {
    if !(16..=4096).contains(&width) {
        return Err(MediaError::InvalidSpec(format!(
            "thumbnail width must be within 16..=4096, got {width}"
        )));
    }
    Ok(())
}

fn thumbnail(mp4: &[u8], width: u32) -> Result<Vec<u8>, MediaError> {
    let mut frames = frames(mp4, width, |_| vec![THUMBNAIL_AT_SECS])?;
    frames
        .pop()
        .ok_or_else(|| MediaError::VideoDecode("the decoder produced no picture".into()))
}

/// Decodes the frames shown at the times `at(duration)` picks (ascending seconds; the last
/// frame for times past the end) and encodes each `width` pixels wide as JPEG.
fn frames(
    mp4: &[u8],
    width: u32,
    at: impl FnOnce(f64) -> Vec<f64>,
) -> Result<Vec<Vec<u8>>, MediaError> {
    check_width(width)?;
    pictures(mp4, at, Some(width))?
        .into_iter()
        .map(jpeg)
        .collect()
}

/// Decodes the pictures shown at the times `at(duration)` picks (ascending seconds; the last
/// frame for times past the end), at the clip's own size.
/// With `width`, each picture is scaled to it as it is picked, so that many pictures never sit
/// in memory at the clip's size.
fn pictures(
    mp4: &[u8],
    at: impl FnOnce(f64) -> Vec<f64>,
    width: Option<u32>,
) -> Result<Vec<RgbImage>, MediaError> {
    let sized = |frame: &RgbImage| match width {
        Some(w) => scaled(frame.clone(), w),
        None => frame.clone(),
    };
    let mut reader = probe::open(mp4)?;
    let mut chosen: Option<AvcTrack> = None;
    for track in reader.tracks().values() {
        let Some(avc1) = &track.trak.mdia.minf.stbl.stsd.avc1 else {
            continue;
        };
        if chosen
            .as_ref()
            .is_some_and(|c| c.track_id < track.track_id())
        {
            continue;
        }
        let params = avc1
            .avcc
            .sequence_parameter_sets
            .iter()
            .chain(&avc1.avcc.picture_parameter_sets)
            .map(|nal| nal.bytes.clone())
            .collect();
        let mdhd = &track.trak.mdia.mdhd;
        chosen = Some(AvcTrack {
            track_id: track.track_id(),
            params,
            length_size: usize::from(avc1.avcc.length_size_minus_one & 3) + 1,
            sample_count: track.sample_count(),
            secs: if mdhd.timescale == 0 {
                0.0
            } else {
                mdhd.duration as f64 / f64::from(mdhd.timescale)
            },
        });
    }
    let AvcTrack {
        track_id,
        params,
        length_size,
        sample_count,
        secs,
    } = chosen.ok_or(MediaError::NoVideoTrack)?;
    if sample_count == 0 {
        return Err(MediaError::VideoDecode(
            "the video track has no samples".into(),
        ));
    }
    let fps = if secs > 0.0 {
        f64::from(sample_count) / secs
    } else {
        24.0
    };
    let targets: Vec<u32> = at(secs)
        .into_iter()
        .map(|t| ((t * fps).round().max(0.0) as u32).min(sample_count - 1))
        .collect();
    let target = targets.iter().copied().max().unwrap_or(0);
    let mut picked: Vec<RgbImage> = Vec::new();
    // Frame number `produced - 1` was just decoded into `last`: keep it for each target it is.
    let keep = |produced: u32, last: &Option<RgbImage>, picked: &mut Vec<RgbImage>| {
        if let Some(frame) = last {
            for t in &targets {
                if *t + 1 == produced {
                    picked.push(sized(frame));
                }
            }
        }
    };

    let config = DecoderConfig::new().flush_after_decode(Flush::NoFlush);
    let mut decoder = Decoder::with_api_config(OpenH264API::from_source(), config)
        .map_err(|e| MediaError::VideoDecode(e.to_string()))?;
    let mut produced = 0u32;
    let mut last: Option<RgbImage> = None;
    let mut last_error = None;
    let mut packet = Vec::new();
    for sample_id in 1..=sample_count {
        let sample = reader
            .read_sample(track_id, sample_id)
            .map_err(|e| MediaError::NotMp4(e.to_string()))?;
        let Some(sample) = sample else { break };
        packet.clear();
        if sample_id == 1 {
            for p in &params {
                packet.extend_from_slice(&[0, 0, 0, 1]);
                packet.extend_from_slice(p);
            }
        }
        avcc_to_annexb(&sample.bytes, length_size, &mut packet)?;
        crate::conform::check_parameter_sets(&packet)?;
        match decoder.decode(&packet) {
            Ok(Some(frame)) => {
                last = Some(to_rgb(&frame)?);
                produced += 1;
                keep(produced, &last, &mut picked);
                if produced > target {
                    break;
                }
            }
            Ok(None) => {}
            Err(e) => last_error = Some(e.to_string()),
        }
    }
    if produced <= target {
        let remaining = decoder
            .flush_remaining()
            .map_err(|e| MediaError::VideoDecode(e.to_string()))?;
        for frame in remaining {
            last = Some(to_rgb(&frame)?);
            produced += 1;
            keep(produced, &last, &mut picked);
            if produced > target {
                break;
            }
        }
    }
    let Some(frame) = last else {
        return Err(MediaError::VideoDecode(
            last_error.unwrap_or_else(|| "the decoder produced no picture".into()),
        ));
    };
    // Targets past the frames the decoder produced get the last picture.
    while picked.len() < targets.len() {
        picked.push(sized(&frame));
    }
    Ok(picked)
}

/// `frame` scaled to `width` pixels wide, keeping its aspect ratio.
fn scaled(frame: RgbImage, width: u32) -> RgbImage {
    let height = ((f64::from(frame.height()) * f64::from(width) / f64::from(frame.width())).round()
        as u32)
        .max(1);
    DynamicImage::ImageRgb8(frame)
        .resize_exact(width, height, FilterType::Triangle)
        .to_rgb8()
}

fn jpeg(picture: RgbImage) -> Result<Vec<u8>, MediaError> {
    let mut out = Cursor::new(Vec::new());
    DynamicImage::ImageRgb8(picture)
        .write_with_encoder(image::codecs::jpeg::JpegEncoder::new_with_quality(
            &mut out,
            JPEG_QUALITY,
        ))
        .map_err(|e| MediaError::ImageEncode(e.to_string()))?;
    Ok(out.into_inner())
}
