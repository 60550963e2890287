//! The contract suites every adapter of a port must pass (item store, blobs, queue, admission),
//! as macros that adapter crates instantiate in their tests with a constructor of their adapter.

pub mod blobs;
pub mod queue;
pub mod store;
