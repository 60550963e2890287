//! reelgate's video engine protocol: wire types ([`protocol`]), a client
//! ([`EngineClient`]) and the reference engine ([`ReferenceEngine`]) that
//! renders synthetic clips with `reelgate_media`. The protocol is documented in
//! `docs/engine-protocol.md`.

mod client;
mod engine;
mod inputs;
pub mod protocol;

pub use client::{EngineClient, EngineClientError};
pub use engine::{
    serve, serve_on, EngineConfig, ReferenceEngine, BAD_OUTPUT_SIZE, HANG_PROGRESS, MAX_SECONDS,
};
pub use inputs::{MAX_IMAGE_BYTES, MAX_MEDIA_BYTES, REFERENCE_SECONDS};
pub use protocol::{
    FaultSwitches, Render, RenderError, RenderInputs, RenderRequest, RenderSource, RenderStatus,
};
