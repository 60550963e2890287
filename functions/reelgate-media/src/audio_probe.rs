//! How long a reference audio file plays, read from its container so that moderation can tell a
//! decodable clip within its limits from bytes that only look like audio: WAV (the `fmt ` and
//! `data` chunks, any encoding), MP4/M4A (the audio track) and FLAC (`STREAMINFO`). MP3, Ogg and
//! ADTS AAC are not probed (`None`): their length is not in a header.

use crate::error::MediaError;

fn bad(what: &str) -> MediaError {
    MediaError::AudioDecode(what.to_owned())
}

/// The duration in seconds of a WAV, MP4/M4A or FLAC file; `Ok(None)` for formats this crate
/// does not probe; an error for a file of a probed format that does not parse.
pub fn audio_duration_secs(bytes: &[u8]) -> Result<Option<f64>, MediaError> {
    if bytes.len() >= 12 && &bytes[0..4] == b"RIFF" && &bytes[8..12] == b"WAVE" {
        return wav(bytes).map(Some);
    }
    if bytes.len() >= 8 && &bytes[4..8] == b"ftyp" {
        let probe = crate::probe::probe_mp4(bytes)?;
        let audio = probe
            .audio
            .ok_or_else(|| bad("the MP4 has no audio track"))?;
        return Ok(Some(audio.duration_secs));
    }
    if bytes.starts_with(b"fLaC") {
        return flac(bytes).map(Some);
    }
    Ok(None)
}

fn wav(bytes: &[u8]) -> Result<f64, MediaError> {
    let mut pos = 12usize;
    let mut byte_rate: Option<u32> = None;
    while pos + 8 <= bytes.len() {
        let id = &bytes[pos..pos + 4];
        let size = u32::from_le_bytes([
            bytes[pos + 4],
            bytes[pos + 5],
            bytes[pos + 6],
            bytes[pos + 7],
        ]) as usize;
        let body = pos + 8;
        match id {
            b"fmt " => {
                if size < 16 || body + 16 > bytes.len() {
                    return Err(bad("WAV fmt chunk is truncated"));
                }
                let rate = u32::from_le_bytes([
                    bytes[body + 8],
                    bytes[body + 9],
                    bytes[body + 10],
                    bytes[body + 11],
                ]);
                if rate == 0 {
                    return Err(bad("WAV byte rate is zero"));
                }
                byte_rate = Some(rate);
            }
            b"data" => {
                let rate = byte_rate.ok_or_else(|| bad("WAV data before its fmt chunk"))?;
                let available = bytes.len().saturating_sub(body);
                if size > available {
                    return Err(bad("WAV data chunk is truncated"));
                }
                return Ok(size as f64 / f64::from(rate));
            }
            _ => {}
        }
        pos = body.saturating_add(size).saturating_add(size & 1);
    }
    Err(bad("WAV has no data chunk"))
}

fn flac(bytes: &[u8]) -> Result<f64, MediaError> {
    // The first metadata block must be STREAMINFO (type 0, 34 bytes).
    if bytes.len() < 4 + 4 + 34 || bytes[4] & 0x7f != 0 {
        return Err(bad("FLAC has no STREAMINFO"));
    }
    let info = &bytes[8..8 + 34];
    let sample_rate =
        (u32::from(info[10]) << 12) | (u32::from(info[11]) << 4) | (u32::from(info[12]) >> 4);
    let total = (u64::from(info[13] & 0x0f) << 32)
        | (u64::from(info[14]) << 24)
        | (u64::from(info[15]) << 16)
        | (u64::from(info[16]) << 8)
        | u64::from(info[17]);
    if sample_rate == 0 || total == 0 {
        return Err(bad("FLAC STREAMINFO has no sample rate or length"));
    }
    Ok(total as f64 / f64::from(sample_rate))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wav_of(seconds: u32) -> Vec<u8> {
        let rate = 8000u32;
        let data = vec![0u8; (rate * 2 * seconds) as usize];
        let mut out = Vec::new();
        out.extend_from_slice(b"RIFF");
        out.extend_from_slice(&(36 + data.len() as u32).to_le_bytes());
        out.extend_from_slice(b"WAVEfmt ");
        out.extend_from_slice(&16u32.to_le_bytes());
        out.extend_from_slice(&1u16.to_le_bytes());
        out.extend_from_slice(&1u16.to_le_bytes());
        out.extend_from_slice(&rate.to_le_bytes());
        out.extend_from_slice(&(rate * 2).to_le_bytes());
        out.extend_from_slice(&2u16.to_le_bytes());
        out.extend_from_slice(&16u16.to_le_bytes());
        out.extend_from_slice(b"data");
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        out.extend_from_slice(&data);
        out
    }

    #[test]
    fn wav_duration_and_truncation() {
        let w = wav_of(3);
        assert_eq!(audio_duration_secs(&w).expect("wav"), Some(3.0));
        assert!(audio_duration_secs(&w[..w.len() - 100]).is_err());
        let mut header_only = w[..44].to_vec();
        header_only[4] = 0;
        assert!(audio_duration_secs(&header_only).is_err());
        assert_eq!(audio_duration_secs(b"ID3\x04\0\0\0\0").expect("mp3"), None);
    }
}
