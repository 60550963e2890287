//! The item-store contract: every adapter must pass these cases. Each case takes a fresh
//! partition prefix so that runs against a shared emulator table do not see each other.
//! `item_store_contract_tests!` expands to one test per case for an adapter.

use crate::ports::store::*;
use rust_decimal::Decimal;
use rust_decimal_macros::dec;
use std::sync::Arc;

fn fresh(prefix: &str) -> String {
    format!("{prefix}#{}", crate::domain::ids::new_id("t"))
}

fn key(pk: &str, sk: &str) -> Key {
    Key::new(pk, sk)
}

pub async fn put_get_delete(store: Arc<dyn ItemStore>) {
    let pk = fresh("contract");
    let k = key(&pk, "A");
    let mut it = item(&k);
    it.insert("name".into(), "alpha".into());
    it.insert("amount".into(), Attr::N(dec!(12.345)));
    it.insert("flag".into(), true.into());
    it.insert("nothing".into(), Attr::Null);
    it.insert(
        "list".into(),
        Attr::L(vec!["x".into(), Attr::N(dec!(1)), Attr::M(Item::new())]),
    );
    store.put(it.clone(), None).await.expect("put");
    assert_eq!(store.get(&k).await.expect("get"), Some(it.clone()));
    let gone = store.delete(&k, None).await.expect("delete");
    assert_eq!(gone, Some(it));
    assert_eq!(store.get(&k).await.expect("get after delete"), None);
    assert_eq!(store.delete(&k, None).await.expect("delete absent"), None);
}

pub async fn conditional_put(store: Arc<dyn ItemStore>) {
    let k = key(&fresh("contract"), "A");
    let it = item(&k);
    store
        .put(it.clone(), Some(Condition::NotExists))
        .await
        .expect("first create");
    let again = store.put(it.clone(), Some(Condition::NotExists)).await;
    assert!(
        matches!(again, Err(StoreError::ConditionFailed)),
        "{again:?}"
    );
    store
        .put(it, Some(Condition::Exists))
        .await
        .expect("overwrite existing");
    let missing = store
        .put(item(&key(&k.pk, "B")), Some(Condition::Exists))
        .await;
    assert!(matches!(missing, Err(StoreError::ConditionFailed)));
}

pub async fn conditional_update_with_add(store: Arc<dyn ItemStore>) {
    let k = key(&fresh("contract"), "ORG");
    let created = store
        .update(
            &k,
            Update::new()
                .set("available", Attr::N(dec!(10.00)))
                .set("in_flight", 0i64),
            Some(Condition::NotExists),
        )
        .await
        .expect("create by update");
    assert_eq!(created.decimal_attr("available"), Some(dec!(10.00)));
    let reserve = |quote: Decimal| {
        (
            Update::new()
                .add("available", -quote)
                .add("reserved", quote)
                .add("in_flight", dec!(1)),
            Condition::Ge("available".into(), Attr::N(quote))
                .and(Condition::Lt("in_flight".into(), Attr::N(dec!(2)))),
        )
    };
    let (u, c) = reserve(dec!(6.25));
    let after = store.update(&k, u, Some(c)).await.expect("first reserve");
    assert_eq!(after.decimal_attr("available"), Some(dec!(3.75)));
    assert_eq!(after.decimal_attr("reserved"), Some(dec!(6.25)));
    assert_eq!(after.decimal_attr("in_flight"), Some(dec!(1)));
    let (u, c) = reserve(dec!(3.76));
    let refused = store.update(&k, u, Some(c)).await;
    assert!(matches!(refused, Err(StoreError::ConditionFailed)));
    let (u, c) = reserve(dec!(3.75));
    store.update(&k, u, Some(c)).await.expect("exact fit");
    let (u, c) = reserve(dec!(0));
    let over_limit = store.update(&k, u, Some(c)).await;
    assert!(matches!(over_limit, Err(StoreError::ConditionFailed)));
    let now = store.get(&k).await.expect("get").expect("present");
    assert_eq!(now.decimal_attr("available"), Some(dec!(0.00)));
    assert_eq!(now.decimal_attr("reserved"), Some(dec!(10.00)));
    let removed = store
        .update(
            &k,
            Update::new().remove("reserved").set("note", "x"),
            Some(Condition::Exists),
        )
        .await
        .expect("remove attr");
    assert!(!removed.contains_key("reserved"));
    assert_eq!(removed.str_attr("note"), Some("x"));
}

pub async fn update_refuses_overlapping_paths(store: Arc<dyn ItemStore>) {
    let k = key(&fresh("contract"), "U");
    let twice = store
        .update(&k, Update::new().set("a", "x").add("a", dec!(1)), None)
        .await;
    assert!(matches!(twice, Err(StoreError::Invalid(_))), "{twice:?}");
    let rekey = store.update(&k, Update::new().set(SK, "other"), None).await;
    assert!(matches!(rekey, Err(StoreError::Invalid(_))), "{rekey:?}");
    assert_eq!(store.get(&k).await.expect("get"), None, "nothing written");
}

pub async fn condition_operators(store: Arc<dyn ItemStore>) {
    let k = key(&fresh("contract"), "C");
    let mut it = item(&k);
    it.insert("status".into(), "queued".into());
    it.insert("n".into(), 5i64.into());
    store.put(it, None).await.expect("put");
    let ok = |c: Condition| {
        let store = store.clone();
        let k = k.clone();
        async move {
            store
                .update(&k, Update::new().set("touched", true), Some(c))
                .await
                .is_ok()
        }
    };
    assert!(
        ok(Condition::In(
            "status".into(),
            vec!["queued".into(), "in_progress".into()]
        ))
        .await
    );
    assert!(!ok(Condition::In("status".into(), vec!["completed".into()])).await);
    assert!(ok(Condition::Ne("status".into(), "failed".into())).await);
    assert!(ok(Condition::Ne("absent".into(), "x".into())).await);
    assert!(ok(Condition::AttrNotExists("absent".into())).await);
    assert!(!ok(Condition::AttrExists("absent".into())).await);
    assert!(
        ok(Condition::Or(vec![
            Condition::Eq("status".into(), "nope".into()),
            Condition::Gt("n".into(), 4i64.into()),
        ]))
        .await
    );
    assert!(
        !ok(Condition::Not(Box::new(Condition::Le(
            "n".into(),
            5i64.into()
        ))))
        .await
    );
}

pub async fn transaction_all_or_nothing(store: Arc<dyn ItemStore>) {
    let pk = fresh("contract");
    let a = key(&pk, "A");
    let b = key(&pk, "B");
    let c = key(&pk, "C");
    store.put(item(&a), None).await.expect("seed a");
    let cancelled = store
        .transact(vec![
            TransactOp::Put {
                item: item(&b),
                condition: Some(Condition::NotExists),
            },
            TransactOp::Update {
                key: a.clone(),
                update: Update::new().set("x", 1i64),
                condition: Some(Condition::AttrExists("never".into())),
            },
        ])
        .await;
    match cancelled {
        Err(e) => {
            assert!(!e.failed_at(0), "{e:?}");
            assert!(e.failed_at(1), "{e:?}");
        }
        Ok(()) => panic!("transaction should cancel"),
    }
    assert_eq!(store.get(&b).await.expect("get b"), None, "nothing written");
    store
        .transact(vec![
            TransactOp::Put {
                item: item(&b),
                condition: Some(Condition::NotExists),
            },
            TransactOp::Update {
                key: a.clone(),
                update: Update::new().add("x", dec!(2)),
                condition: Some(Condition::Exists),
            },
            TransactOp::ConditionCheck {
                key: c.clone(),
                condition: Condition::NotExists,
            },
        ])
        .await
        .expect("transaction commits");
    assert!(store.get(&b).await.expect("get b").is_some());
    let a_now = store.get(&a).await.expect("get a").expect("a");
    assert_eq!(a_now.decimal_attr("x"), Some(dec!(2)));
    store
        .transact(vec![TransactOp::Delete {
            key: b.clone(),
            condition: Some(Condition::Exists),
        }])
        .await
        .expect("delete in transaction");
    assert_eq!(store.get(&b).await.expect("get b"), None);
    let twice = store
        .transact(vec![
            TransactOp::ConditionCheck {
                key: a.clone(),
                condition: Condition::Exists,
            },
            TransactOp::Delete {
                key: a.clone(),
                condition: None,
            },
        ])
        .await;
    assert!(matches!(twice, Err(StoreError::Invalid(_))), "{twice:?}");
}

pub async fn query_paging_both_directions(store: Arc<dyn ItemStore>) {
    let pk = fresh("contract");
    for i in 0..7 {
        store
            .put(item(&key(&pk, &format!("VIDEO#{i:03}"))), None)
            .await
            .expect("seed");
    }
    store
        .put(item(&key(&pk, "ORG")), None)
        .await
        .expect("other kind");
    store
        .put(item(&key(&pk, "WIDGET#1")), None)
        .await
        .expect("other kind");
    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let page = store
            .query(
                Query::partition(&pk)
                    .prefix("VIDEO#")
                    .descending()
                    .limit(3)
                    .after(after),
            )
            .await
            .expect("query");
        seen.extend(
            page.items
                .iter()
                .map(|i| i.str_attr(SK).unwrap_or("").to_owned()),
        );
        match page.last_sk {
            Some(sk) => after = Some(sk),
            None => break,
        }
    }
    let expected: Vec<String> = (0..7).rev().map(|i| format!("VIDEO#{i:03}")).collect();
    assert_eq!(seen, expected);
    let asc = store
        .query(Query::partition(&pk).prefix("VIDEO#").limit(100))
        .await
        .expect("ascending");
    assert_eq!(asc.items.len(), 7);
    assert_eq!(asc.last_sk, None);
    assert_eq!(asc.items[0].str_attr(SK), Some("VIDEO#000"));
    let exact = store
        .query(Query::partition(&pk).prefix("VIDEO#").limit(7))
        .await
        .expect("exact page");
    assert_eq!(exact.items.len(), 7);
    let all = store
        .query(Query::partition(&pk))
        .await
        .expect("whole partition");
    assert_eq!(all.items.len(), 9);
}

pub async fn expiry_hides_items(store: Arc<dyn ItemStore>) {
    let pk = fresh("contract");
    let live = key(&pk, "FILE#1");
    let dead = key(&pk, "FILE#2");
    let mut l = item(&live);
    l.insert(EXPIRES_AT.into(), (now_secs() + 3600).into());
    let mut d = item(&dead);
    d.insert(EXPIRES_AT.into(), (now_secs() - 10).into());
    store.put(l, None).await.expect("live");
    store.put(d, None).await.expect("dead");
    assert!(store.get(&live).await.expect("get").is_some());
    assert_eq!(store.get(&dead).await.expect("get"), None);
    let page = store
        .query(Query::partition(&pk).prefix("FILE#"))
        .await
        .expect("query");
    assert_eq!(page.items.len(), 1);
}

pub async fn concurrent_conditional_updates_admit_exactly(store: Arc<dyn ItemStore>) {
    let k = key(&fresh("contract"), "ORG");
    store
        .update(
            &k,
            Update::new().set("available", Attr::N(dec!(7.00))),
            None,
        )
        .await
        .expect("seed");
    let mut tasks = Vec::new();
    for _ in 0..30 {
        let store = store.clone();
        let k = k.clone();
        tasks.push(tokio::spawn(async move {
            store
                .update(
                    &k,
                    Update::new().add("available", dec!(-1.00)),
                    Some(Condition::Ge("available".into(), Attr::N(dec!(1.00)))),
                )
                .await
                .is_ok()
        }));
    }
    let mut admitted = 0;
    for t in tasks {
        if t.await.expect("join") {
            admitted += 1;
        }
    }
    assert_eq!(admitted, 7);
    let after = store.get(&k).await.expect("get").expect("org");
    assert_eq!(after.decimal_attr("available"), Some(dec!(0.00)));
}

/// Several independent updates in one call: each applies or fails its condition on its own,
/// answered in order; concurrent calls over the same items count exactly.
pub async fn update_each_applies_each_on_its_own(store: Arc<dyn ItemStore>) {
    let pk = fresh("contract");
    let (a, b, c) = (key(&pk, "A"), key(&pk, "B"), key(&pk, "C"));
    store
        .update(&b, Update::new().set("n", Attr::N(dec!(5))), None)
        .await
        .expect("seed");
    fn add_one(k: &Key, max: Decimal) -> ConditionalUpdate {
        ConditionalUpdate {
            key: k.clone(),
            update: Update::new().add("n", dec!(1)),
            condition: Some(Condition::Or(vec![
                Condition::AttrNotExists("n".into()),
                Condition::Lt("n".into(), Attr::N(max)),
            ])),
        }
    }
    let answers = store
        .update_each(vec![
            add_one(&a, dec!(3)),
            add_one(&b, dec!(5)),
            add_one(&c, dec!(3)),
        ])
        .await;
    assert_eq!(answers.len(), 3);
    assert_eq!(
        answers[0].as_ref().expect("a").decimal_attr("n"),
        Some(dec!(1))
    );
    assert!(
        matches!(answers[1], Err(StoreError::ConditionFailed)),
        "{:?}",
        answers[1]
    );
    assert_eq!(
        answers[2].as_ref().expect("c").decimal_attr("n"),
        Some(dec!(1))
    );
    assert_eq!(
        store
            .get(&b)
            .await
            .expect("get")
            .expect("b")
            .decimal_attr("n"),
        Some(dec!(5))
    );
    // 20 concurrent calls, each adding one to A (below 10) and to C (below 15).
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let (store, a, c) = (store.clone(), a.clone(), c.clone());
        tasks.push(tokio::spawn(async move {
            let answers = store
                .update_each(vec![add_one(&a, dec!(10)), add_one(&c, dec!(15))])
                .await;
            (answers[0].is_ok(), answers[1].is_ok())
        }));
    }
    let (mut to_a, mut to_c) = (0, 0);
    for t in tasks {
        let (x, y) = t.await.expect("join");
        to_a += usize::from(x);
        to_c += usize::from(y);
    }
    assert_eq!((to_a, to_c), (9, 14));
    for (k, n) in [(&a, dec!(10)), (&c, dec!(15))] {
        let item = store.get(k).await.expect("get").expect("item");
        assert_eq!(item.decimal_attr("n"), Some(n));
    }
}

/// Of 16 `complete` calls racing on one pending upload, exactly one claims it; the others wait
/// for its outcome and answer its file, never copying themselves.
pub async fn upload_complete_claims_once(store: Arc<dyn ItemStore>) {
    use crate::domain::files::uploads::{claim, Claimed};
    let k = key(&fresh("contract"), "UPLOAD#upload_x");
    let mut it = item(&k);
    it.insert("status".into(), "pending".into());
    it.insert("file_id".into(), "file_x".into());
    store.put(it, None).await.expect("put upload");
    let racers: Vec<_> = (0..16)
        .map(|_| {
            let store = store.clone();
            let k = k.clone();
            tokio::spawn(async move {
                let got = claim(store.as_ref(), &k, || {
                    crate::domain::error::ApiError::bad_request("missing")
                })
                .await
                .expect("claim");
                if let Claimed::Ours(_, at) = &got {
                    // The claimant's work, then its conditional finish.
                    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
                    store
                        .update(
                            &k,
                            Update::new().set("status", "completed"),
                            Some(
                                Condition::Eq("status".into(), "completing".into())
                                    .and(Condition::Eq("completing_at".into(), (*at).into())),
                            ),
                        )
                        .await
                        .expect("finish");
                }
                got
            })
        })
        .collect();
    let mut ours = 0;
    for r in racers {
        match r.await.expect("join") {
            Claimed::Ours(..) => ours += 1,
            Claimed::Done(file) => assert_eq!(file, "file_x"),
        }
    }
    assert_eq!(ours, 1, "exactly one complete claims the upload");
}

/// Expands to one `#[tokio::test]` per contract case; `$make` is an async expression giving an
/// `Arc<dyn ItemStore>`.
#[macro_export]
macro_rules! item_store_contract_tests {
    ($make:expr) => {
        $crate::item_store_contract_tests!(@cases $make;
            put_get_delete, conditional_put, conditional_update_with_add, condition_operators,
            update_refuses_overlapping_paths,
            transaction_all_or_nothing, query_paging_both_directions, expiry_hides_items,
            concurrent_conditional_updates_admit_exactly, update_each_applies_each_on_its_own,
            upload_complete_claims_once);
    };
    (@cases $make:expr; $($case:ident),*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $case() {
                let store: std::sync::Arc<dyn $crate::ports::store::ItemStore> = $make.await;
                $crate::contract::store::$case(store).await;
            }
        )*
    };
}
