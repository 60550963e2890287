//! The queue port, shaped by SQS: at-least-once delivery, a visibility timeout during which a
//! received message is hidden, and a dead-letter queue after too many receives.

use async_trait::async_trait;
use std::time::Duration;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Received {
    pub message_id: String,
    /// Handle for delete and visibility changes; changes on every receive.
    pub receipt: String,
    pub body: String,
    /// How many times the message has been received, this time included.
    pub receive_count: u32,
}

#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error("the receipt is unknown or stale")]
    StaleReceipt,
    #[error("the queue is unavailable: {0}")]
    Unavailable(String),
}

#[async_trait]
pub trait MessageQueue: Send + Sync + 'static {
    async fn send(&self, body: &str, delay: Duration) -> Result<String, QueueError>;
    /// Waits up to `wait` for at least one message; each received message stays hidden for
    /// `visibility`. A message received more than the queue's limit moves to its dead-letter queue.
    async fn receive(
        &self,
        max: usize,
        visibility: Duration,
        wait: Duration,
    ) -> Result<Vec<Received>, QueueError>;
    async fn delete(&self, receipt: &str) -> Result<(), QueueError>;
    async fn change_visibility(
        &self,
        receipt: &str,
        visibility: Duration,
    ) -> Result<(), QueueError>;
    /// Messages in the dead-letter queue (for alarms, admin and tests).
    async fn dead_letter_count(&self) -> Result<usize, QueueError>;
}
