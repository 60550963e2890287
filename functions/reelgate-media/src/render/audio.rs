//! The clip's sound: a pentatonic tone pattern from the prompt over a drone, with the audio bed
//! mixed under it, encoded as AAC-LC.

use super::seed::{fnv1a, Rng};
use super::spec::RenderSpec;
use crate::encode::{encode_aac_stereo_48k, AacTrack, AUDIO_SAMPLE_RATE};
use crate::error::MediaError;

/// Pentatonic tone pattern over a soft drone, interleaved stereo.
fn synthesize_pcm(spec: &RenderSpec) -> Vec<i16> {
    let rate = f64::from(AUDIO_SAMPLE_RATE);
    let n = (u64::from(spec.seconds) * u64::from(AUDIO_SAMPLE_RATE)) as usize;
    let mut rng = Rng(fnv1a(spec.prompt.trim().as_bytes()) ^ 0x5eed_a0d1_0000_0000);
    let base = 196.0 * 2f64.powf(rng.below(12) as f64 / 12.0);
    const SCALE: [f64; 8] = [0.0, 2.0, 4.0, 7.0, 9.0, 12.0, 14.0, 16.0];
    let pattern: Vec<f64> = (0..8)
        .map(|_| base * 2f64.powf(SCALE[rng.below(8) as usize] / 12.0))
        .collect();
    let step = rate * 0.25; // a note every quarter second
    let tau = std::f64::consts::TAU;
    let mut out = Vec::with_capacity(n * 2);
    for i in 0..n {
        let t = i as f64 / rate;
        let note_index = (i as f64 / step) as usize;
        let note_t = (i as f64 - note_index as f64 * step) / rate;
        let f = pattern[note_index % pattern.len()];
        let attack = (note_t / 0.01).min(1.0);
        let env = attack * (-note_t * 6.0).exp();
        let tone = ((tau * f * t).sin() + 0.3 * (tau * 2.0 * f * t).sin()) * env * 0.35;
        let drone = (tau * base / 2.0 * t).sin() * 0.08;
        // Fade the whole clip in and out over 20 ms to avoid clicks.
        let edge = (t / 0.02)
            .min((spec.seconds as f64 - t) / 0.02)
            .clamp(0.0, 1.0);
        let pan = if note_index % 2 == 0 { 0.35 } else { 0.65 };
        let left = (tone * (1.0 - pan) * 2.0 + drone) * edge;
        let right = (tone * pan * 2.0 + drone) * edge;
        out.push((left * 32767.0).clamp(-32768.0, 32767.0) as i16);
        out.push((right * 32767.0).clamp(-32768.0, 32767.0) as i16);
    }
    if let Some(bed) = spec.audio_bed.as_ref().filter(|b| !b.samples.is_empty()) {
        let len = bed.samples.len() & !1;
        if len > 0 {
            for (i, s) in out.iter_mut().enumerate() {
                let b = i32::from(bed.samples[i % len]) / 2;
                *s = (i32::from(*s) + b).clamp(-32768, 32767) as i16;
            }
        }
    }
    out
}

pub(super) fn encode_audio(spec: &RenderSpec) -> Result<AacTrack, MediaError> {
    let samples = u64::from(spec.seconds) * u64::from(AUDIO_SAMPLE_RATE);
    encode_aac_stereo_48k(&synthesize_pcm(spec), samples)
}
