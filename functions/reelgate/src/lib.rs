//! reelgate: a video-generation and text-model API service with an OpenAI-style HTTP API.
//!
//! This crate holds the domain, the ports (store, blobs, queue, workflow) with their embedded
//! adapters, and every HTTP handler. Lambda binaries and the local `reelgate` command are thin
//! hosts over [`http::router`]; the AWS adapters live in `reelgate-aws`.

pub mod accounts;
pub mod agreement;
pub mod app;
pub mod billing;
pub mod blobs;
pub mod catalog;
pub mod chat;
#[cfg(test)]
mod contract_embedded;
pub mod db;
pub mod engines;
pub mod error;
pub mod files;
pub mod http;
pub mod ids;
pub mod jobs;
pub mod local;
pub mod moderation;
pub mod queue;
pub mod responses;
pub mod store;
#[cfg(any(test, feature = "contract"))]
pub mod testing;
pub mod translation;
pub mod uploads;
pub mod upstream;
pub mod usage;
pub mod videos;
pub mod workflow;
