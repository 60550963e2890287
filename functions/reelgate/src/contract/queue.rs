//! The queue contract: at-least-once delivery with visibility timeouts and dead-lettering.
//! Adapters are built with a dead-letter limit of 2 receives for these cases; each case
//! drains what it sends, and tolerates nothing else being on the queue.

use crate::ports::queue::*;
use std::sync::Arc;
use std::time::Duration;

async fn receive_one(q: &dyn MessageQueue, visibility: Duration) -> Option<Received> {
    q.receive(1, visibility, Duration::from_secs(3))
        .await
        .expect("receive")
        .into_iter()
        .next()
}

pub async fn send_receive_delete(q: Arc<dyn MessageQueue>) {
    let body = format!("hello {}", crate::domain::ids::new_id("m"));
    q.send(&body, Duration::ZERO).await.expect("send");
    let got = receive_one(q.as_ref(), Duration::from_secs(30))
        .await
        .expect("a message");
    assert_eq!(got.body, body);
    assert_eq!(got.receive_count, 1);
    let hidden = q
        .receive(1, Duration::from_secs(30), Duration::from_millis(500))
        .await
        .expect("receive");
    assert!(hidden.is_empty(), "received while invisible: {hidden:?}");
    q.delete(&got.receipt).await.expect("delete");
}

pub async fn visibility_timeout_redelivers_then_dead_letters(q: Arc<dyn MessageQueue>) {
    let dead_before = q.dead_letter_count().await.expect("dlq count");
    let body = format!("poison {}", crate::domain::ids::new_id("m"));
    q.send(&body, Duration::ZERO).await.expect("send");
    let first = receive_one(q.as_ref(), Duration::from_secs(1))
        .await
        .expect("first");
    assert_eq!(first.body, body);
    tokio::time::sleep(Duration::from_millis(1300)).await;
    let second = receive_one(q.as_ref(), Duration::from_secs(1))
        .await
        .expect("redelivered");
    assert_eq!(second.body, body);
    assert_eq!(second.receive_count, 2);
    assert_ne!(second.receipt, first.receipt);
    tokio::time::sleep(Duration::from_millis(1300)).await;
    let third = q
        .receive(1, Duration::from_secs(1), Duration::from_secs(2))
        .await
        .expect("receive");
    assert!(
        third.iter().all(|m| m.body != body),
        "delivered past the limit"
    );
    let mut dead = 0;
    for _ in 0..20 {
        dead = q.dead_letter_count().await.expect("dlq count");
        if dead > dead_before {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!(dead, dead_before + 1);
}

pub async fn change_visibility_releases_early(q: Arc<dyn MessageQueue>) {
    let body = format!("retry {}", crate::domain::ids::new_id("m"));
    q.send(&body, Duration::ZERO).await.expect("send");
    let got = receive_one(q.as_ref(), Duration::from_secs(60))
        .await
        .expect("message");
    q.change_visibility(&got.receipt, Duration::ZERO)
        .await
        .expect("release");
    let again = receive_one(q.as_ref(), Duration::from_secs(60))
        .await
        .expect("again");
    assert_eq!(again.body, body);
    q.delete(&again.receipt).await.expect("delete");
}

pub async fn delayed_message_waits(q: Arc<dyn MessageQueue>) {
    let body = format!("later {}", crate::domain::ids::new_id("m"));
    q.send(&body, Duration::from_secs(1)).await.expect("send");
    let early = q
        .receive(1, Duration::from_secs(30), Duration::ZERO)
        .await
        .expect("receive");
    assert!(early.iter().all(|m| m.body != body));
    let got = q
        .receive(1, Duration::from_secs(30), Duration::from_secs(5))
        .await
        .expect("receive");
    assert_eq!(got.first().map(|m| m.body.as_str()), Some(body.as_str()));
    if let Some(m) = got.first() {
        q.delete(&m.receipt).await.expect("delete");
    }
}

#[macro_export]
macro_rules! queue_contract_tests {
    ($make:expr) => {
        $crate::queue_contract_tests!(@cases $make;
            send_receive_delete, visibility_timeout_redelivers_then_dead_letters,
            change_visibility_releases_early, delayed_message_waits);
    };
    (@cases $make:expr; $($case:ident),*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let queue: std::sync::Arc<dyn $crate::ports::queue::MessageQueue> = $make.await;
                $crate::contract::queue::$case(queue).await;
            }
        )*
    };
}
