//! Webhooks: an organization's endpoints for `video.completed`, `video.failed` and
//! `video.canceled`, their events, and delivery (docs/webhooks.md).
//!
//! - **Endpoints** (`ORG#<org>` / `WEBHOOK#<id>`) hold the URL, the events, a secret
//!   (`whsec_` and base64, shown once; after a rotation the previous one keeps signing for a
//!   day), the status (`enabled`, or `disabled` with its reason) and the last delivery attempts.
//! - **Events** are emitted by the terminal transition of a job (`domain::videos::events::emit`,
//!   called after the settlement that ended it, through [`events::emit`]): one queue message per
//!   subscribed endpoint, carrying the payload
//!   (`type`, `timestamp`, `data` = the video object as `GET` returns it) and the event's
//!   `webhook-id`, derived from the job and its terminal status so it is the same on every
//!   attempt. Emitting never fails the caller: a queue that cannot take the message is logged.
//! - **Nothing lost in a crash.** The settlement that ends a job writes an unsent-event marker
//!   (`UNSENT_EVENTS` / `VIDEO#<id>`, [`unsent_event_op`]) in its own transaction; `emit`
//!   deletes it once every message is queued. A process that dies in between leaves the marker,
//!   and the recovery pass (`domain::videos::events::recover_unsent`, at start-up and on a
//!   schedule on both hosts) emits the event again: at least once, with the same `webhook-id`.
//! - **Delivery** ([`deliver`], the webhook queue's consumer) signs per Standard Webhooks and
//!   POSTs through the guarded fetcher (private addresses refused). A failed attempt is retried
//!   through the queue after the next wait of `Settings::webhook_retry_schedule` (hops of at most
//!   [`MAX_HOP`], SQS's longest delay); when the last attempt of an event fails the endpoint is
//!   disabled with the reason.
//! - **The cap** ([`MAX_ENDPOINTS`]) is a count (`WEBHOOK_COUNT`) changed in the transaction that
//!   writes or deletes an endpoint, so concurrent creates cannot pass it.
//! - **Fairness** (docs/security.md §12): an attempt holds one of its endpoint's
//!   [`ENDPOINT_IN_FLIGHT`] slots and one of its organization's [`ORG_IN_FLIGHT`] (leases in the
//!   store, so they hold across workers and hosts), the POST waits at most 10 s for its answer,
//!   and a failing endpoint backs off ([`backoff_secs`]); a delivery that must wait goes back to
//!   the queue without counting as an attempt.
//! - **Test events** ([`test_event`]): one signed `webhook.test` POSTed at once to one endpoint
//!   (the console's "Send test event"), answered with what the receiver did; not a delivery,
//!   nothing is recorded on the endpoint.
//!
//! Where each part lives: [`endpoints`] (the records and their routes' use cases), [`events`]
//! (emission and the unsent-event recovery), [`delivery`] (the queue consumer), [`signing`]
//! (secrets and headers), [`test_event`] (the console's test events).

pub mod delivery;
pub mod endpoints;
pub mod events;
pub mod signing;
pub mod test_event;

pub use delivery::{deliver, ENDPOINT_IN_FLIGHT};
pub use endpoints::{
    create, delete, endpoint_key, get, list, rotate_secret, Attempt, DeliveryRecord, Endpoint,
    WebhookCreateRequest, EVENT_COMPLETED,
};
pub use events::unsent_event_op;
