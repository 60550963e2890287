//! The blob-store contract every adapter passes. Presigned-URL cases fetch with a plain HTTP
//! client, so the local adapter's cases need the local server's blob route listening (the test
//! harness starts it).

use crate::ports::blobs::*;
use bytes::Bytes;
use std::sync::Arc;
use std::time::Duration;

fn fresh_key(name: &str) -> String {
    format!("contract/{}/{name}", crate::domain::ids::new_id("blob"))
}

fn chunks(parts: &[&'static [u8]]) -> ByteStream {
    let items: Vec<Result<Bytes, std::io::Error>> =
        parts.iter().map(|p| Ok(Bytes::from_static(p))).collect();
    Box::pin(futures::stream::iter(items))
}

pub async fn stream_roundtrip_and_range(store: Arc<dyn BlobStore>) {
    let key = fresh_key("a.bin");
    let size = store
        .put_stream(
            &key,
            "application/test",
            chunks(&[b"hello ", b"blob ", b"world"]),
            1024,
        )
        .await
        .expect("put");
    assert_eq!(size, 16);
    let meta = store.head(&key).await.expect("head").expect("present");
    assert_eq!(meta.size, 16);
    assert_eq!(meta.content_type, "application/test");
    assert_eq!(
        read_all(store.as_ref(), &key).await.expect("read"),
        Bytes::from_static(b"hello blob world")
    );
    let read = store
        .get(
            &key,
            Some(ByteRange {
                start: 6,
                end_inclusive: 9,
            }),
        )
        .await
        .expect("range");
    assert_eq!(
        read.range,
        Some(ByteRange {
            start: 6,
            end_inclusive: 9
        })
    );
    use futures::TryStreamExt;
    let body: Vec<Bytes> = read.body.try_collect().await.expect("body");
    assert_eq!(body.concat(), b"blob");
    let open_end = store
        .get(
            &key,
            Some(ByteRange {
                start: 11,
                end_inclusive: u64::MAX,
            }),
        )
        .await
        .expect("open range");
    assert_eq!(
        open_end.range,
        Some(ByteRange {
            start: 11,
            end_inclusive: 15
        })
    );
    let bad = store
        .get(
            &key,
            Some(ByteRange {
                start: 99,
                end_inclusive: 120,
            }),
        )
        .await;
    assert!(matches!(
        bad,
        Err(BlobError::RangeNotSatisfiable { size: 16 })
    ));
}

pub async fn oversize_upload_leaves_nothing(store: Arc<dyn BlobStore>) {
    let key = fresh_key("big.bin");
    let result = store
        .put_stream(
            &key,
            "application/octet-stream",
            chunks(&[b"0123456789", b"0123456789"]),
            15,
        )
        .await;
    assert!(
        matches!(result, Err(BlobError::TooLarge { limit: 15 })),
        "{result:?}"
    );
    assert_eq!(store.head(&key).await.expect("head"), None);
}

pub async fn delete_and_missing(store: Arc<dyn BlobStore>) {
    let key = fresh_key("gone.txt");
    store
        .put_bytes(&key, "text/plain", Bytes::from_static(b"bye"))
        .await
        .expect("put");
    store.delete(&key).await.expect("delete");
    store.delete(&key).await.expect("delete again");
    assert_eq!(store.head(&key).await.expect("head"), None);
    assert!(matches!(
        store.get(&key, None).await,
        Err(BlobError::NotFound)
    ));
}

pub async fn list_by_prefix(store: Arc<dyn BlobStore>) {
    let root = format!("contract/{}", crate::domain::ids::new_id("list"));
    for (name, body) in [("a/one", &b"1"[..]), ("a/two", b"22"), ("ab/three", b"333")] {
        store
            .put_bytes(&format!("{root}/{name}"), "text/plain", Bytes::from(body))
            .await
            .expect("put");
    }
    let under_a = store.list(&format!("{root}/a/")).await.expect("list");
    assert_eq!(
        under_a,
        vec![
            BlobListing {
                key: format!("{root}/a/one"),
                size: 1
            },
            BlobListing {
                key: format!("{root}/a/two"),
                size: 2
            },
        ]
    );
    assert_eq!(
        store.list(&format!("{root}/")).await.expect("list").len(),
        3
    );
    assert!(store
        .list(&format!("{root}/nothing/"))
        .await
        .expect("list")
        .is_empty());
    store
        .delete(&format!("{root}/a/one"))
        .await
        .expect("delete");
    assert_eq!(
        store.list(&format!("{root}/a/")).await.expect("list").len(),
        1
    );
}

pub async fn presigned_get_serves_then_expires(store: Arc<dyn BlobStore>) {
    let key = fresh_key("signed.png");
    let bytes = Bytes::from_static(b"\x89PNG\r\n\x1a\n signed bytes");
    store
        .put_bytes(&key, "image/png", bytes.clone())
        .await
        .expect("put");
    let http = reqwest::Client::new();
    let url = store
        .presign_get(&key, Duration::from_secs(2))
        .await
        .expect("presign");
    let ok = http.get(&url).send().await.expect("fetch");
    assert_eq!(ok.status(), 200, "{url}");
    assert_eq!(ok.bytes().await.expect("body"), bytes);
    let tampered = tamper(&url);
    let refused = http.get(&tampered).send().await.expect("fetch tampered");
    assert!(
        refused.status() == 403 || refused.status() == 400,
        "{}",
        refused.status()
    );
    let other_key = url.replace("signed.png", "other.png");
    let refused = http.get(&other_key).send().await.expect("fetch other key");
    assert!(refused.status().is_client_error());
    tokio::time::sleep(Duration::from_millis(3100)).await;
    let expired = http.get(&url).send().await.expect("fetch expired");
    assert_eq!(expired.status(), 403);
}

pub async fn presigned_put_uploads(store: Arc<dyn BlobStore>) {
    let key = fresh_key("direct.mp4");
    let url = store
        .presign_put(&key, "video/mp4", Duration::from_secs(60))
        .await
        .expect("presign put");
    let http = reqwest::Client::new();
    let put = http
        .put(&url)
        .header("content-type", "video/mp4")
        .body(b"direct upload body".to_vec())
        .send()
        .await
        .expect("put");
    assert!(put.status().is_success(), "{}", put.status());
    assert_eq!(
        read_all(store.as_ref(), &key).await.expect("read"),
        Bytes::from_static(b"direct upload body")
    );
}

/// Changes one character of the signature.
fn tamper(url: &str) -> String {
    let mut chars: Vec<char> = url.chars().collect();
    if let Some(pos) = url.find("ignature=").map(|p| p + "ignature=".len() + 3) {
        if let Some(c) = chars.get_mut(pos) {
            *c = if *c == 'a' { 'b' } else { 'a' };
        }
    }
    chars.into_iter().collect()
}

#[macro_export]
macro_rules! blob_store_contract_tests {
    ($make:expr) => {
        $crate::blob_store_contract_tests!(@cases $make;
            stream_roundtrip_and_range, oversize_upload_leaves_nothing, delete_and_missing,
            list_by_prefix, presigned_get_serves_then_expires, presigned_put_uploads);
    };
    (@cases $make:expr; $($case:ident),*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let store: std::sync::Arc<dyn $crate::ports::blobs::BlobStore> = $make.await;
                $crate::contract::blobs::$case(store).await;
            }
        )*
    };
}
