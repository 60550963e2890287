//! reelgate: a video-generation and text-model API service with an OpenAI-style HTTP API.
//!
//! The core crate, in layers (docs/architecture.md): `ports` (the traits the domain needs),
//! `domain` (rules and use cases over those ports), `api` (the axum router, extractors and
//! envelopes over the domain), plus `adapters` (the adapters that need neither AWS nor SQLite),
//! `config` (the typed configuration) and `app` (the application assembled from them). The
//! embedded adapters and the local host live in `reelgate-embedded`, the AWS adapters in
//! `reelgate-aws`; Lambda binaries and the `reelgate` command are thin hosts over [`api::router`].

pub mod adapters;
pub mod api;
pub mod app;
pub mod config;
#[cfg(any(test, feature = "contract"))]
pub mod contract;
pub mod domain;
pub mod observability;
pub mod ports;
