//! The domain: reelgate's rules and use cases. Each use case takes the ports it uses (or a
//! narrow context of them) as arguments; nothing here knows HTTP routing, SQLite or AWS.

pub mod accounts;
pub mod agreement;
pub mod billing;
pub mod catalog;
pub mod chat;
pub mod error;
pub mod files;
pub mod ids;
pub mod jobs;
pub mod moderation;
pub mod registry;
pub mod responses;
pub mod translation;
pub mod uploads;
pub mod usage;
pub mod videos;
pub mod workflow;
