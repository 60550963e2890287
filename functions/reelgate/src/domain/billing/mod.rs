//! Money and metering: what a render and a text request cost, the ledger that records every
//! charge, the customer's usage report, and the limits that bound spending and traffic (rate
//! limits per key and organization, monthly budgets per key).

pub mod admission;
pub mod budgets;
pub mod ledger;
pub mod rate_limits;
pub mod render_charges;
pub mod store_windows;
pub mod token_charges;
pub mod usage;
pub mod usage_report;
