//! Typed records over the item store: each record type reads and writes its item in one place
//! (`from_item` / `to_item`, and the updates of its state changes), with enums for its statuses
//! whose stored strings are exactly the ones the table and the API have always carried. Domain
//! code uses these instead of naming attributes by hand; the keys come from
//! [`crate::domain::keys`].

pub mod account;
pub mod file;
pub mod job;
pub mod ledger;
