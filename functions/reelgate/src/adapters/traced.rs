//! Tracing decorators of the storage ports: one span per item-store, blob-store and queue call
//! (`store get`, `blobs put_stream`, `queue send`, ...), wrapped around a host's adapters once, at
//! assembly (`app::assemble`), and only while traces are exported — without an exporter the
//! adapters are used bare and calls pay nothing.
//!
//! Spans name the operation and the item kind (a key's leading segment, `ORG`, `VIDEO`, ...),
//! never whole keys: a key may carry a credential's digest or a caller's file name.

use crate::ports::blobs::{
    BlobError, BlobListing, BlobMeta, BlobRead, BlobStore, ByteRange, ByteStream,
};
use crate::ports::queue::{MessageQueue, QueueError, Received};
use crate::ports::store::Item;
use crate::ports::store::{Condition, ItemStore, Key, Page, Query, StoreError, TransactOp, Update};
use async_trait::async_trait;
use bytes::Bytes;
use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument;

/// The item kind of a partition or blob key: its first segment.
fn kind(key: &str) -> &str {
    key.split(['#', '/']).next().unwrap_or_default()
}

/// Runs `fut` in a span `name` and marks the span failed when it returns an error.
async fn traced<T, E: std::fmt::Display>(
    span: tracing::Span,
    fut: impl std::future::Future<Output = Result<T, E>>,
) -> Result<T, E> {
    let outcome = fut.instrument(span.clone()).await;
    if let Err(e) = &outcome {
        span.record("otel.status_code", "ERROR");
        span.record("error", tracing::field::display(e));
    }
    outcome
}

macro_rules! port_span {
    ($name:expr, $($field:tt)*) => {
        // DEBUG: the log layer (at its default INFO) does not even format these; the trace
        // layer takes them (adapters/otel.rs).
        tracing::debug_span!(
            "port",
            otel.name = $name,
            otel.status_code = tracing::field::Empty,
            error = tracing::field::Empty,
            $($field)*
        )
    };
}

/// [`ItemStore`] with a span per call.
pub struct TracedStore(pub Arc<dyn ItemStore>);

#[async_trait]
impl ItemStore for TracedStore {
    async fn get(&self, key: &Key) -> Result<Option<Item>, StoreError> {
        let span = port_span!("store get", item = kind(&key.pk));
        traced(span, self.0.get(key)).await
    }
    async fn put(&self, item: Item, condition: Option<Condition>) -> Result<(), StoreError> {
        let pk = item
            .get(crate::ports::store::PK)
            .and_then(|a| a.as_str())
            .map(|pk| kind(pk).to_owned())
            .unwrap_or_default();
        let span = port_span!("store put", item = %pk);
        traced(span, self.0.put(item, condition)).await
    }
    async fn update(
        &self,
        key: &Key,
        update: Update,
        condition: Option<Condition>,
    ) -> Result<Item, StoreError> {
        let span = port_span!("store update", item = kind(&key.pk));
        traced(span, self.0.update(key, update, condition)).await
    }
    async fn delete(
        &self,
        key: &Key,
        condition: Option<Condition>,
    ) -> Result<Option<Item>, StoreError> {
        let span = port_span!("store delete", item = kind(&key.pk));
        traced(span, self.0.delete(key, condition)).await
    }
    async fn transact(&self, ops: Vec<TransactOp>) -> Result<(), StoreError> {
        let span = port_span!("store transact", ops = ops.len() as i64);
        traced(span, self.0.transact(ops)).await
    }
    async fn query(&self, query: Query) -> Result<Page, StoreError> {
        let span = port_span!("store query", item = kind(&query.pk));
        traced(span, self.0.query(query)).await
    }
    async fn update_each(
        &self,
        updates: Vec<crate::ports::store::ConditionalUpdate>,
    ) -> Vec<Result<Item, StoreError>> {
        let first = updates.first().map(|u| kind(&u.key.pk).to_owned());
        let span = port_span!(
            "store update_each",
            item = %first.unwrap_or_default(),
            count = updates.len()
        );
        use tracing::Instrument as _;
        self.0.update_each(updates).instrument(span).await
    }
}

/// [`BlobStore`] with a span per call (a read's span covers opening it, not streaming it).
pub struct TracedBlobs(pub Arc<dyn BlobStore>);

#[async_trait]
impl BlobStore for TracedBlobs {
    async fn put_stream(
        &self,
        key: &str,
        content_type: &str,
        body: ByteStream,
        max_bytes: u64,
    ) -> Result<u64, BlobError> {
        let span = port_span!("blobs put_stream", blob = kind(key));
        traced(span, self.0.put_stream(key, content_type, body, max_bytes)).await
    }
    async fn put_bytes(
        &self,
        key: &str,
        content_type: &str,
        bytes: Bytes,
    ) -> Result<(), BlobError> {
        let span = port_span!(
            "blobs put_bytes",
            blob = kind(key),
            bytes = bytes.len() as i64
        );
        traced(span, self.0.put_bytes(key, content_type, bytes)).await
    }
    async fn head(&self, key: &str) -> Result<Option<BlobMeta>, BlobError> {
        let span = port_span!("blobs head", blob = kind(key));
        traced(span, self.0.head(key)).await
    }
    async fn get(&self, key: &str, range: Option<ByteRange>) -> Result<BlobRead, BlobError> {
        let span = port_span!("blobs get", blob = kind(key));
        traced(span, self.0.get(key, range)).await
    }
    async fn delete(&self, key: &str) -> Result<(), BlobError> {
        let span = port_span!("blobs delete", blob = kind(key));
        traced(span, self.0.delete(key)).await
    }
    async fn list(&self, prefix: &str) -> Result<Vec<BlobListing>, BlobError> {
        let span = port_span!("blobs list", blob = kind(prefix));
        traced(span, self.0.list(prefix)).await
    }
    async fn presign_get(&self, key: &str, ttl: Duration) -> Result<String, BlobError> {
        let span = port_span!("blobs presign_get", blob = kind(key));
        traced(span, self.0.presign_get(key, ttl)).await
    }
    async fn presign_put(
        &self,
        key: &str,
        content_type: &str,
        ttl: Duration,
    ) -> Result<String, BlobError> {
        let span = port_span!("blobs presign_put", blob = kind(key));
        traced(span, self.0.presign_put(key, content_type, ttl)).await
    }
}

/// [`MessageQueue`] with a span per call.
pub struct TracedQueue(pub Arc<dyn MessageQueue>);

#[async_trait]
impl MessageQueue for TracedQueue {
    async fn send(&self, body: &str, delay: Duration) -> Result<String, QueueError> {
        let span = port_span!("queue send", delay_ms = delay.as_millis() as i64);
        traced(span, self.0.send(body, delay)).await
    }
    async fn receive(
        &self,
        max: usize,
        visibility: Duration,
        wait: Duration,
    ) -> Result<Vec<Received>, QueueError> {
        // A long poll that finds nothing is not worth a span of its own in every trace backend;
        // receiving is traced by the handler of what was received.
        self.0.receive(max, visibility, wait).await
    }
    async fn delete(&self, receipt: &str) -> Result<(), QueueError> {
        let span = port_span!("queue delete",);
        traced(span, self.0.delete(receipt)).await
    }
    async fn change_visibility(
        &self,
        receipt: &str,
        visibility: Duration,
    ) -> Result<(), QueueError> {
        let span = port_span!("queue change_visibility",);
        traced(span, self.0.change_visibility(receipt, visibility)).await
    }
    async fn dead_letter_count(&self) -> Result<usize, QueueError> {
        let span = port_span!("queue dead_letter_count",);
        traced(span, self.0.dead_letter_count()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_name_the_kind_of_item_not_the_key() {
        assert_eq!(kind("ORG#org_1"), "ORG");
        assert_eq!(kind("videos/org_1/video_1.mp4"), "videos");
        assert_eq!(kind(""), "");
    }
}
