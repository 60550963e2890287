//! reelgate: a video-generation and text-model API service with an OpenAI-style HTTP API.
//!
//! This crate holds the domain, the ports (store, blobs, queue, workflow) with their embedded
//! adapters, and every HTTP handler. Lambda binaries and the local `reelgate` command are thin
//! hosts over [`http::router`]; the AWS adapters live in `reelgate-aws`.

pub mod blobs;
pub mod db;
pub mod ids;
pub mod queue;
pub mod store;
pub mod workflow;
pub mod accounts;
pub mod app;
pub mod catalog;
pub mod error;
pub mod files;
pub mod http;
pub mod responses;
pub mod upstream;
pub mod chat;
pub mod usage;
pub mod local;
#[cfg(any(test, feature = "contract"))]
pub mod testing;
#[cfg(test)]
mod contract_embedded;
pub mod agreement;
pub mod billing;
pub mod jobs;
pub mod videos;
pub mod engines;
pub mod moderation;
pub mod translation;
pub mod uploads;
