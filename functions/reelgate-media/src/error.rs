//! The crate's one error type. It lives in a module of its own, below every module that returns
//! it, so no module imports the crate root that re-exports it.

/// Everything that can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
pub enum MediaError {
    /// The render parameters are out of range (odd or too large dimensions, zero seconds, ...).
    #[error("invalid render spec: {0}")]
    InvalidSpec(String),
    /// The render was canceled through its cancel flag.
    #[error("render canceled")]
    Canceled,
    /// The bytes are not an MP4/QuickTime file this crate can read.
    #[error("not a readable MP4 file: {0}")]
    NotMp4(String),
    /// The MP4 has no H.264 video track to take a thumbnail from.
    #[error("MP4 has no H.264 video track")]
    NoVideoTrack,
    /// The H.264 encoder failed.
    #[error("H.264 encoding failed: {0}")]
    VideoEncode(String),
    /// The H.264 decoder failed or produced no frame.
    #[error("H.264 decoding failed: {0}")]
    VideoDecode(String),
    /// The AAC encoder failed.
    #[error("AAC encoding failed: {0}")]
    AudioEncode(String),
    /// Writing the MP4 container failed.
    #[error("MP4 muxing failed: {0}")]
    Mux(String),
    /// The image bytes could not be decoded (unknown format, corrupt, or too large).
    #[error("image decoding failed: {0}")]
    ImageDecode(String),
    /// Encoding the JPEG thumbnail failed.
    #[error("image encoding failed: {0}")]
    ImageEncode(String),
    /// An audio file's container does not parse (truncated, no data, no audio track).
    #[error("audio decoding failed: {0}")]
    AudioDecode(String),
    /// The media uses a codec (or a codec profile) this crate does not decode; the message
    /// names it, e.g. "the video is H.265/HEVC (hvc1); only H.264 Baseline, Main and High are
    /// conformed".
    #[error("unsupported codec: {0}")]
    UnsupportedCodec(String),
    /// The engine's clip cannot be made to meet the contract: too short for the seconds asked,
    /// too long, too many frames or too large a picture to accept.
    #[error("cannot conform the clip: {0}")]
    Unconformable(String),
    /// Reading the media from its [`ReadAt`] source failed (an I/O error of the file, not a
    /// fault of its contents).
    #[error("reading the media failed: {0}")]
    Io(String),
}
