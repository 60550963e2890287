//! Media toolkit for reelgate that runs anywhere cargo builds, including AWS
//! Lambda: no ffmpeg or other run-time tools are needed.
//!
//! * [`render_mp4`] synthesises a deterministic clip (H.264 via openh264, AAC-LC
//!   via fdk-aac, muxed with the `mp4` crate, `moov` first) from a prompt and
//!   optional first/last frame images (a pan and zoom over the first, cross-fading into the
//!   last), reference pictures as inset cards, captions and an audio bed.
//! * [`conform_source`] turns a hosted engine's MP4 (other sizes, lengths, codecs of audio, or
//!   no audio) into a clip that meets the service's contract: H.264 at the job's 768p size, AAC
//!   audio, exactly the seconds asked, `moov` first. It reads the file through [`ReadAt`] in
//!   bounded windows (a local [`FileSource`] need not be held in memory); [`conform_mp4`] does
//!   the same over bytes in memory.
//! * [`probe_mp4`] reads container metadata only.
//! * [`thumbnail_jpeg`] decodes a frame near the start of an H.264 MP4.
//! * [`sniff`] classifies uploads by their magic bytes.
//! * [`decode_image`] turns PNG/JPEG/WebP/GIF bytes into RGB.

mod aspect;
mod audio_decode;
mod audio_probe;
mod captions;
mod conform;
mod demux;
mod encode;
mod error;
mod faststart;
mod image_header;
mod image_io;
mod mux;
mod probe;
mod render;
mod scale;
mod sniff;
mod source;
mod thumbnail;

pub use aspect::{output_dimensions, AspectRatio, SHORT_SIDE};
pub use audio_probe::audio_duration_secs;
pub use captions::{dialogue, timed as timed_captions, Caption};
pub use conform::{
    check_source, conform_mp4, conform_source, stitch_mp4, ConformTarget, Conformed, SourceVideo,
};
pub use demux::{MAX_MOOV_BYTES, MAX_SAMPLE_BYTES};
pub use error::MediaError;
pub use image_header::image_dimensions;
pub use image_io::{bounded_image_jpeg, decode_image, fit_frame_jpeg};
pub use probe::{probe_mp4, AudioTrack, Mp4Probe, VideoTrack};
pub use render::{
    render_mp4, AudioBed, RenderSpec, AUDIO_CHANNELS, AUDIO_SAMPLE_RATE, MAX_SOURCE_FRAMES,
};
pub use sniff::{sniff, MediaKind, Sniffed};
pub use source::{FileSource, ReadAt};
pub use thumbnail::{
    first_frame_jpeg, last_frame_jpeg, sample_frames_jpeg, spritesheet_jpeg, thumbnail_jpeg,
    SPRITESHEET_COLUMNS, SPRITESHEET_FRAMES,
};
