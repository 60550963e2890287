//! Writes an H.264 track and an AAC track into a fast-start MP4 (`moov` first) with an edit list
//! that hides the AAC priming, shared by the reference renderer and the conform stage.

use std::io::Cursor;

use crate::encode::{AacTrack, EncodedVideo, MOVIE_TIMESCALE};
use crate::error::MediaError;
use crate::faststart::{self, AudioEdit};

/// Muxes `video` (sample durations in [`MOVIE_TIMESCALE`] ticks) and `audio` into an MP4 with
/// `moov` before `mdat`; the audio's edit list skips its priming and presents `presented`
/// samples. The last access unit's duration is cut so that the audio media ends exactly at
/// `priming + presented`.
///
/// The file is written into a buffer sized for it up front, and each coded picture is dropped
/// once written, so that muxing holds the clip about twice (the written file and its fast-start
/// copy), not four times (pictures, a doubling buffer, the copy).
pub(crate) fn mux(
    width: u32,
    height: u32,
    video: EncodedVideo,
    audio: &AacTrack,
) -> Result<Vec<u8>, MediaError> {
    let err = |e: mp4::Error| MediaError::Mux(e.to_string());
    let brand = |s: &str| s.parse::<mp4::FourCC>().map_err(err);
    let (Ok(w16), Ok(h16)) = (u16::try_from(width), u16::try_from(height)) else {
        return Err(MediaError::Mux(format!("frame size {width}x{height}")));
    };
    if audio.timescale == 0 {
        return Err(MediaError::Mux("audio timescale is zero".into()));
    }
    let config = mp4::Mp4Config {
        major_brand: brand("isom")?,
        minor_version: 512,
        compatible_brands: vec![
            brand("isom")?,
            brand("iso2")?,
            brand("avc1")?,
            brand("mp41")?,
        ],
        timescale: MOVIE_TIMESCALE,
    };
    let media_bytes: usize = video.samples.iter().map(|s| s.data.len()).sum::<usize>()
        + audio.units.iter().map(|u| u.data.len()).sum::<usize>();
    // The boxes besides the media: a few dozen bytes a sample in the tables.
    let boxes = 64 * (video.samples.len() + audio.units.len()) + 4096;
    let buffer = Vec::with_capacity(media_bytes + boxes);
    let mut writer = mp4::Mp4Writer::write_start(Cursor::new(buffer), &config).map_err(err)?;
    writer
        .add_track(&mp4::TrackConfig {
            track_type: mp4::TrackType::Video,
            timescale: MOVIE_TIMESCALE,
            language: "und".into(),
            media_conf: mp4::MediaConfig::AvcConfig(mp4::AvcConfig {
                width: w16,
                height: h16,
                seq_param_set: video.sps,
                pic_param_set: video.pps,
            }),
        })
        .map_err(err)?;
    writer
        .add_track(&mp4::TrackConfig {
            track_type: mp4::TrackType::Audio,
            timescale: audio.timescale,
            language: "und".into(),
            media_conf: mp4::MediaConfig::AacConfig(audio.config.clone()),
        })
        .map_err(err)?;

    let media_total = audio.priming + audio.presented;
    let a_scale = u64::from(audio.timescale);
    let v_scale = u64::from(MOVIE_TIMESCALE);
    let mut v_iter = video.samples.into_iter().peekable();
    let mut a_iter = audio.units.iter().peekable();
    let mut v_time = 0u64;
    let mut a_start = 0u64;
    loop {
        let a_pending = a_iter.peek().is_some() && a_start < media_total;
        // Audio time on the presentation timeline (minus the priming), for interleaving.
        let a_time = a_start.saturating_sub(audio.priming);
        let take_video = match (v_iter.peek(), a_pending) {
            (Some(_), true) => v_time * a_scale <= a_time * v_scale,
            (Some(_), false) => true,
            (None, true) => false,
            (None, false) => break,
        };
        if take_video {
            if let Some(s) = v_iter.next() {
                writer
                    .write_sample(
                        1,
                        &mp4::Mp4Sample {
                            start_time: v_time,
                            duration: s.duration,
                            rendering_offset: 0,
                            is_sync: s.sync,
                            bytes: bytes::Bytes::from(s.data),
                        },
                    )
                    .map_err(err)?;
                v_time += u64::from(s.duration);
            }
        } else if let Some(unit) = a_iter.next() {
            let duration = (media_total - a_start).min(u64::from(unit.duration));
            writer
                .write_sample(
                    2,
                    &mp4::Mp4Sample {
                        start_time: a_start,
                        duration: duration as u32,
                        rendering_offset: 0,
                        is_sync: true,
                        bytes: bytes::Bytes::copy_from_slice(&unit.data),
                    },
                )
                .map_err(err)?;
            a_start += duration;
        }
    }
    writer.write_end().map_err(err)?;
    let file = writer.into_writer().into_inner();
    faststart::finalize(
        &file,
        Some(AudioEdit {
            track_id: 2,
            media_time: audio.priming,
            duration: audio.presented * v_scale / a_scale,
        }),
    )
}
