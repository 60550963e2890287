//! The ports: the traits the domain needs from the outside world, with their error types and
//! the plain data they exchange. Nothing here knows a database, a cloud or HTTP routing; each
//! trait has an embedded adapter (`reelgate-embedded`) and an AWS one (`reelgate-aws`), or an
//! HTTP one in `crate::adapters`.

pub mod blobs;
pub mod engine;
pub mod fetch;
pub mod issuer;
pub mod moderator;
pub mod pdf;
pub mod queue;
pub mod store;
pub mod translator;
pub mod upstream;
pub mod workflow;
