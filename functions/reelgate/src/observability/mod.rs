//! What the service reports about itself: metrics, the request's one log line, and the trace
//! context a video job carries across hosts. A leaf every layer may write to; it imports no
//! other layer, so a rule never depends on how it is observed.

pub mod metrics;
pub mod telemetry;
pub mod trace_context;
