//! The embedded queue: rows in the shared SQLite file, with SQS's visibility timeout,
//! receive counting and a dead-letter flag after `max_receives`.

use crate::db::Database;
use async_trait::async_trait;
use reelgate::ports::queue::*;
use rusqlite::params;
use std::time::Duration;

pub struct SqliteQueue {
    db: Database,
    name: String,
    max_receives: u32,
    notify: std::sync::Arc<tokio::sync::Notify>,
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}

impl SqliteQueue {
    /// Deletes dead-lettered messages sent before `before_ms` (SQS drops messages from a
    /// dead-letter queue after its retention period). Returns how many.
    pub async fn prune_dead(&self, before_ms: i64) -> Result<usize, QueueError> {
        let queue = self.name.clone();
        self.db
            .write(move |tx| {
                tx.execute(
                    "DELETE FROM queue_messages WHERE queue = ?1 AND dead = 1 AND sent_at_ms < ?2",
                    params![queue, before_ms],
                )
            })
            .await
            .map_err(unavailable)
    }

    pub fn new(db: Database, name: &str, max_receives: u32) -> Self {
        SqliteQueue {
            db,
            name: name.to_owned(),
            max_receives,
            notify: Default::default(),
        }
    }
}

fn unavailable(e: crate::db::DbError) -> QueueError {
    QueueError::Unavailable(e.to_string())
}

#[async_trait]
impl MessageQueue for SqliteQueue {
    async fn send(&self, body: &str, delay: Duration) -> Result<String, QueueError> {
        let id = reelgate::domain::ids::new_id("msg");
        let (queue, body, mid) = (self.name.clone(), body.to_owned(), id.clone());
        self.db
            .write(move |tx| {
                let now = now_ms();
                tx.execute(
                    "INSERT INTO queue_messages (queue, message_id, body, visible_at_ms, sent_at_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![queue, mid, body, now + delay.as_millis() as i64, now],
                )
            })
            .await
            .map_err(unavailable)?;
        self.notify.notify_waiters();
        Ok(id)
    }

    async fn receive(
        &self,
        max: usize,
        visibility: Duration,
        wait: Duration,
    ) -> Result<Vec<Received>, QueueError> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let (queue, limit) = (self.name.clone(), self.max_receives);
            let batch = self
                .db
                .write(move |tx| {
                    let now = now_ms();
                    // Messages received too often go to the dead-letter side first, as SQS's
                    // redrive does on the receive that would exceed maxReceiveCount.
                    tx.execute(
                        "UPDATE queue_messages SET dead = 1
                         WHERE queue = ?1 AND dead = 0 AND visible_at_ms <= ?2 AND receive_count >= ?3",
                        params![queue, now, limit],
                    )?;
                    let mut stmt = tx.prepare_cached(
                        "SELECT message_id, body, receive_count FROM queue_messages
                         WHERE queue = ?1 AND dead = 0 AND visible_at_ms <= ?2
                         ORDER BY visible_at_ms, sent_at_ms LIMIT ?3",
                    )?;
                    let rows: Vec<(String, String, u32)> = stmt
                        .query_map(params![queue, now, max as i64], |r| {
                            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                        })?
                        .collect::<Result<_, _>>()?;
                    let mut out = Vec::new();
                    for (message_id, body, count) in rows {
                        let receipt = format!("{message_id}.{}", reelgate::domain::ids::new_secret(12));
                        tx.execute(
                            "UPDATE queue_messages SET receive_count = receive_count + 1,
                             receipt = ?1, visible_at_ms = ?2 WHERE queue = ?3 AND message_id = ?4",
                            params![receipt, now + visibility.as_millis() as i64, queue, message_id],
                        )?;
                        out.push(Received {
                            message_id,
                            receipt,
                            body,
                            receive_count: count + 1,
                        });
                    }
                    Ok(out)
                })
                .await
                .map_err(unavailable)?;
            if !batch.is_empty() || tokio::time::Instant::now() >= deadline {
                return Ok(batch);
            }
            let notified = self.notify.notified();
            let _ = tokio::time::timeout(
                Duration::from_millis(200).min(deadline - tokio::time::Instant::now()),
                notified,
            )
            .await;
        }
    }

    async fn delete(&self, receipt: &str) -> Result<(), QueueError> {
        let (queue, receipt) = (self.name.clone(), receipt.to_owned());
        let n = self
            .db
            .write(move |tx| {
                tx.execute(
                    "DELETE FROM queue_messages WHERE queue = ?1 AND receipt = ?2",
                    params![queue, receipt],
                )
            })
            .await
            .map_err(unavailable)?;
        // SQS accepts a delete with a receipt from an earlier receive; only an unknown one fails.
        if n == 0 {
            return Err(QueueError::StaleReceipt);
        }
        Ok(())
    }

    async fn change_visibility(
        &self,
        receipt: &str,
        visibility: Duration,
    ) -> Result<(), QueueError> {
        let (queue, receipt) = (self.name.clone(), receipt.to_owned());
        let n = self
            .db
            .write(move |tx| {
                tx.execute(
                    "UPDATE queue_messages SET visible_at_ms = ?1 WHERE queue = ?2 AND receipt = ?3 AND dead = 0",
                    params![now_ms() + visibility.as_millis() as i64, queue, receipt],
                )
            })
            .await
            .map_err(unavailable)?;
        if n == 0 {
            return Err(QueueError::StaleReceipt);
        }
        self.notify.notify_waiters();
        Ok(())
    }

    async fn dead_letter_count(&self) -> Result<usize, QueueError> {
        let queue = self.name.clone();
        self.db
            .read(move |c| {
                c.query_row(
                    "SELECT COUNT(*) FROM queue_messages WHERE queue = ?1 AND dead = 1",
                    params![queue],
                    |r| r.get::<_, i64>(0),
                )
            })
            .await
            .map(|n| n as usize)
            .map_err(unavailable)
    }
}
