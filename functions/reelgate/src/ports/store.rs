//! The item-store port, shaped by DynamoDB so that the embedded SQLite adapter and the DynamoDB
//! adapter can honour one contract: items addressed by a partition key and a sort key, conditional
//! single-item writes, all-or-nothing transactions, sort-key range queries with cursor paging, and
//! expiry through a TTL attribute.
//!
//! Conditions deliberately have no arithmetic: DynamoDB rejects arithmetic inside a
//! `ConditionExpression`, so anything that must hold atomically (for example "balance covers the
//! quote plus what is already reserved") is kept as a derived attribute that updates maintain
//! (`available`) and compared against a constant.

use async_trait::async_trait;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The partition-key attribute of every item.
pub const PK: &str = "pk";
/// The sort-key attribute of every item.
pub const SK: &str = "sk";
/// The TTL attribute: Unix seconds after which the item no longer exists for readers.
/// DynamoDB deletes such items within days; both adapters hide them from reads at once.
pub const EXPIRES_AT: &str = "expires_at";

/// One attribute value. Numbers are exact decimals (DynamoDB's `N` holds 38 digits).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Attr {
    S(String),
    N(Decimal),
    Bool(bool),
    Null,
    L(Vec<Attr>),
    M(BTreeMap<String, Attr>),
}

impl Attr {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Attr::S(s) => Some(s),
            _ => None,
        }
    }
    pub fn as_decimal(&self) -> Option<Decimal> {
        match self {
            Attr::N(n) => Some(*n),
            _ => None,
        }
    }
    pub fn as_i64(&self) -> Option<i64> {
        use rust_decimal::prelude::ToPrimitive;
        self.as_decimal().and_then(|d| d.to_i64())
    }
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Attr::Bool(b) => Some(*b),
            _ => None,
        }
    }
}

impl From<&str> for Attr {
    fn from(s: &str) -> Self {
        Attr::S(s.to_owned())
    }
}
impl From<String> for Attr {
    fn from(s: String) -> Self {
        Attr::S(s)
    }
}
impl From<Decimal> for Attr {
    fn from(n: Decimal) -> Self {
        Attr::N(n)
    }
}
impl From<i64> for Attr {
    fn from(n: i64) -> Self {
        Attr::N(Decimal::from(n))
    }
}
impl From<u32> for Attr {
    fn from(n: u32) -> Self {
        Attr::N(Decimal::from(n))
    }
}
impl From<bool> for Attr {
    fn from(b: bool) -> Self {
        Attr::Bool(b)
    }
}
impl<T: Into<Attr>> From<Option<T>> for Attr {
    fn from(v: Option<T>) -> Self {
        v.map(Into::into).unwrap_or(Attr::Null)
    }
}

pub type Item = BTreeMap<String, Attr>;

/// The format of the items this release writes, stamped on each (`FORMAT_VERSION_ATTR`) by
/// both store adapters and taken off again when they read it, so the domain never sees it. An
/// item without it was written before formats were versioned (format 0). A release reads every
/// format up to its own; an item of a newer format (a rollback after an upgrade wrote one) is
/// refused in words rather than misread. docs/data.md says when the number changes.
pub const FORMAT_VERSION: i64 = 1;
pub const FORMAT_VERSION_ATTR: &str = "fv";

/// `item` with this release's format version on it, for writing.
pub fn stamp_format(item: &Item) -> std::borrow::Cow<'_, Item> {
    let mut stamped = item.clone();
    stamped.insert(FORMAT_VERSION_ATTR.into(), Attr::from(FORMAT_VERSION));
    std::borrow::Cow::Owned(stamped)
}

/// `item` as read, without its format version; refused when a newer release wrote it.
pub fn read_format(mut item: Item) -> Result<Item, StoreError> {
    match item.remove(FORMAT_VERSION_ATTR).and_then(|v| v.as_i64()) {
        Some(version) if version > FORMAT_VERSION => Err(StoreError::Invalid(format!(
            "the item {} / {} was written in format {version} by a newer release; this release \
             reads formats up to {FORMAT_VERSION} (docs/data.md: upgrades and rollbacks)",
            item.str_attr("pk").unwrap_or("?"),
            item.str_attr("sk").unwrap_or("?"),
        ))),
        _ => Ok(item),
    }
}

/// Builds an item with its keys set.
pub fn item(key: &Key) -> Item {
    let mut item = Item::new();
    item.insert(PK.into(), Attr::S(key.pk.clone()));
    item.insert(SK.into(), Attr::S(key.sk.clone()));
    item
}

/// Typed reads of item attributes, so domain code can say what it expects.
pub trait ItemExt {
    fn str_attr(&self, name: &str) -> Option<&str>;
    fn decimal_attr(&self, name: &str) -> Option<Decimal>;
    fn i64_attr(&self, name: &str) -> Option<i64>;
    fn bool_attr(&self, name: &str) -> Option<bool>;
    fn key(&self) -> Option<Key>;
}

impl ItemExt for Item {
    fn str_attr(&self, name: &str) -> Option<&str> {
        self.get(name).and_then(Attr::as_str)
    }
    fn decimal_attr(&self, name: &str) -> Option<Decimal> {
        self.get(name).and_then(Attr::as_decimal)
    }
    fn i64_attr(&self, name: &str) -> Option<i64> {
        self.get(name).and_then(Attr::as_i64)
    }
    fn bool_attr(&self, name: &str) -> Option<bool> {
        self.get(name).and_then(Attr::as_bool)
    }
    fn key(&self) -> Option<Key> {
        Some(Key::new(self.str_attr(PK)?, self.str_attr(SK)?))
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Key {
    pub pk: String,
    pub sk: String,
}

impl Key {
    pub fn new(pk: impl Into<String>, sk: impl Into<String>) -> Self {
        Key {
            pk: pk.into(),
            sk: sk.into(),
        }
    }
}

/// A condition on the current item (an absent item has no attributes).
#[derive(Clone, Debug, PartialEq)]
pub enum Condition {
    /// The item exists.
    Exists,
    /// The item does not exist.
    NotExists,
    AttrExists(String),
    AttrNotExists(String),
    Eq(String, Attr),
    Ne(String, Attr),
    Lt(String, Attr),
    Le(String, Attr),
    Gt(String, Attr),
    Ge(String, Attr),
    /// The attribute equals one of the values.
    In(String, Vec<Attr>),
    And(Vec<Condition>),
    Or(Vec<Condition>),
    Not(Box<Condition>),
}

impl Condition {
    pub fn and(self, other: Condition) -> Condition {
        match self {
            Condition::And(mut all) => {
                all.push(other);
                Condition::And(all)
            }
            first => Condition::And(vec![first, other]),
        }
    }

    /// Evaluates the condition against the current item; the reference semantics both adapters
    /// share (the DynamoDB adapter translates instead of evaluating).
    pub fn holds(&self, current: Option<&Item>) -> bool {
        let attr = |name: &str| current.and_then(|i| i.get(name));
        let cmp = |name: &str, v: &Attr| attr(name).and_then(|a| compare(a, v));
        use std::cmp::Ordering::*;
        match self {
            Condition::Exists => current.is_some(),
            Condition::NotExists => current.is_none(),
            Condition::AttrExists(n) => attr(n).is_some(),
            Condition::AttrNotExists(n) => attr(n).is_none(),
            Condition::Eq(n, v) => attr(n) == Some(v),
            // DynamoDB's `<>` is true for an absent attribute.
            Condition::Ne(n, v) => attr(n) != Some(v),
            Condition::Lt(n, v) => cmp(n, v) == Some(Less),
            Condition::Le(n, v) => matches!(cmp(n, v), Some(Less | Equal)),
            Condition::Gt(n, v) => cmp(n, v) == Some(Greater),
            Condition::Ge(n, v) => matches!(cmp(n, v), Some(Greater | Equal)),
            Condition::In(n, vs) => attr(n).is_some_and(|a| vs.contains(a)),
            Condition::And(cs) => cs.iter().all(|c| c.holds(current)),
            Condition::Or(cs) => cs.iter().any(|c| c.holds(current)),
            Condition::Not(c) => !c.holds(current),
        }
    }
}

/// Ordering as DynamoDB defines it: numbers numerically, strings by bytes; other pairs don't compare.
pub fn compare(a: &Attr, b: &Attr) -> Option<std::cmp::Ordering> {
    match (a, b) {
        (Attr::N(x), Attr::N(y)) => Some(x.cmp(y)),
        (Attr::S(x), Attr::S(y)) => Some(x.as_bytes().cmp(y.as_bytes())),
        _ => None,
    }
}

/// An update of one item. Like DynamoDB's UpdateItem it creates the item when it is absent
/// (guard with `Condition::Exists` where that is wrong). `add` adds to a number, treating an
/// absent attribute as zero.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Update {
    pub set: Vec<(String, Attr)>,
    pub add: Vec<(String, Decimal)>,
    pub remove: Vec<String>,
}

impl Update {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn set(mut self, name: &str, value: impl Into<Attr>) -> Self {
        self.set.push((name.to_owned(), value.into()));
        self
    }
    pub fn add(mut self, name: &str, amount: Decimal) -> Self {
        self.add.push((name.to_owned(), amount));
        self
    }
    pub fn remove(mut self, name: &str) -> Self {
        self.remove.push(name.to_owned());
        self
    }

    /// Refuses what DynamoDB refuses: a key attribute changed, or one attribute named twice
    /// ("overlapping paths"). Both adapters check this before writing.
    pub fn validate(&self) -> Result<(), StoreError> {
        let mut seen = std::collections::HashSet::new();
        let names = self
            .set
            .iter()
            .map(|(n, _)| n)
            .chain(self.add.iter().map(|(n, _)| n))
            .chain(self.remove.iter());
        for name in names {
            if name == PK || name == SK {
                return Err(StoreError::Invalid(format!(
                    "an update cannot change the key attribute {name}"
                )));
            }
            if !seen.insert(name) {
                return Err(StoreError::Invalid(format!(
                    "an update names the attribute {name} twice"
                )));
            }
        }
        Ok(())
    }

    /// Applies the update to an item in memory (reference semantics for the embedded adapter).
    pub fn apply(&self, key: &Key, current: Option<Item>) -> Item {
        let mut next = current.unwrap_or_else(|| item(key));
        for (name, value) in &self.set {
            next.insert(name.clone(), value.clone());
        }
        for (name, amount) in &self.add {
            let base = next
                .get(name)
                .and_then(Attr::as_decimal)
                .unwrap_or_default();
            next.insert(name.clone(), Attr::N(base + amount));
        }
        for name in &self.remove {
            next.remove(name);
        }
        next
    }
}

/// One write of a transaction.
#[derive(Clone, Debug, PartialEq)]
pub enum TransactOp {
    Put {
        item: Item,
        condition: Option<Condition>,
    },
    Update {
        key: Key,
        update: Update,
        condition: Option<Condition>,
    },
    Delete {
        key: Key,
        condition: Option<Condition>,
    },
    ConditionCheck {
        key: Key,
        condition: Condition,
    },
}

impl TransactOp {
    pub fn key(&self) -> Option<Key> {
        match self {
            TransactOp::Put { item, .. } => item.key(),
            TransactOp::Update { key, .. }
            | TransactOp::Delete { key, .. }
            | TransactOp::ConditionCheck { key, .. } => Some(key.clone()),
        }
    }
}

/// A query of one partition, ordered by sort key.
#[derive(Clone, Debug, PartialEq)]
pub struct Query {
    pub pk: String,
    pub sk_prefix: Option<String>,
    /// Newest first when sort keys grow with time.
    pub descending: bool,
    pub limit: usize,
    /// Continue after this sort key (exclusive), as DynamoDB's `ExclusiveStartKey`.
    pub after_sk: Option<String>,
}

impl Query {
    pub fn partition(pk: impl Into<String>) -> Self {
        Query {
            pk: pk.into(),
            sk_prefix: None,
            descending: false,
            limit: 100,
            after_sk: None,
        }
    }
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.sk_prefix = Some(prefix.into());
        self
    }
    pub fn descending(mut self) -> Self {
        self.descending = true;
        self
    }
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }
    pub fn after(mut self, sk: Option<String>) -> Self {
        self.after_sk = sk;
        self
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Page {
    pub items: Vec<Item>,
    /// The sort key to continue after, when more items may follow.
    pub last_sk: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("the condition of the write did not hold")]
    ConditionFailed,
    /// A transaction was cancelled; `failed[i]` is true where op `i`'s condition did not hold.
    #[error("the transaction was cancelled: {failed:?}")]
    TransactionCanceled { failed: Vec<bool> },
    #[error("the store rejected the request: {0}")]
    Invalid(String),
    #[error("the store is unavailable: {0}")]
    Unavailable(String),
}

impl StoreError {
    /// True when op `index` of a cancelled transaction failed its condition.
    pub fn failed_at(&self, index: usize) -> bool {
        matches!(self, StoreError::TransactionCanceled { failed } if failed.get(index) == Some(&true))
    }
}

#[async_trait]
pub trait ItemStore: Send + Sync + 'static {
    /// Reads one item; an expired item reads as absent.
    async fn get(&self, key: &Key) -> Result<Option<Item>, StoreError>;
    async fn put(&self, item: Item, condition: Option<Condition>) -> Result<(), StoreError>;
    /// Updates (or creates) an item and returns it as it is after the update.
    async fn update(
        &self,
        key: &Key,
        update: Update,
        condition: Option<Condition>,
    ) -> Result<Item, StoreError>;
    /// Deletes an item and returns what was there.
    async fn delete(
        &self,
        key: &Key,
        condition: Option<Condition>,
    ) -> Result<Option<Item>, StoreError>;
    /// All writes happen or none does (at most 100 ops, no two on one item, as in DynamoDB).
    async fn transact(&self, ops: Vec<TransactOp>) -> Result<(), StoreError>;
    async fn query(&self, query: Query) -> Result<Page, StoreError>;
    /// Several independent conditional updates in one round trip: each one applies, or fails
    /// its condition, on its own (this is not a transaction); the answers come in order, each
    /// as [`ItemStore::update`] would give it. By default they are sent concurrently (DynamoDB);
    /// a store that can write them together in one commit does so (SQLite).
    async fn update_each(&self, updates: Vec<ConditionalUpdate>) -> Vec<Result<Item, StoreError>> {
        futures::future::join_all(
            updates
                .into_iter()
                .map(|u| async move { self.update(&u.key, u.update, u.condition).await }),
        )
        .await
    }

    /// The rate-limit windows of this store's host where it keeps them outside the store (the
    /// local host keeps them in memory); None where they are items of this store.
    fn rate_windows(&self) -> Option<&dyn RateWindows> {
        None
    }
}

/// Every item `query` selects, following its pages: for the few reads that must see a whole
/// partition or prefix (erasure and what it stops first).
pub async fn query_all(store: &dyn ItemStore, mut query: Query) -> Result<Vec<Item>, StoreError> {
    let mut items = Vec::new();
    loop {
        let page = store.query(query.clone()).await?;
        items.extend(page.items);
        match page.last_sk {
            Some(last) => query.after_sk = Some(last),
            None => return Ok(items),
        }
    }
}

/// One of [`ItemStore::update_each`]'s updates.
#[derive(Clone, Debug, PartialEq)]
pub struct ConditionalUpdate {
    pub key: Key,
    pub update: Update,
    pub condition: Option<Condition>,
}

/// Unix seconds now.
pub fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default()
}

/// True when the item carries an expiry that has passed.
pub fn is_expired(item: &Item, now: i64) -> bool {
    item.i64_attr(EXPIRES_AT).is_some_and(|t| t <= now)
}

/// Checks the invariants DynamoDB enforces on a transaction, so both adapters refuse alike.
pub fn validate_transaction(ops: &[TransactOp]) -> Result<(), StoreError> {
    for op in ops {
        if let TransactOp::Update { update, .. } = op {
            update.validate()?;
        }
    }
    if ops.is_empty() || ops.len() > 100 {
        return Err(StoreError::Invalid(format!(
            "a transaction holds 1 to 100 operations, not {}",
            ops.len()
        )));
    }
    let mut seen = std::collections::HashSet::new();
    for op in ops {
        let key = op
            .key()
            .ok_or_else(|| StoreError::Invalid("an item without pk/sk".into()))?;
        if !seen.insert(key.clone()) {
            return Err(StoreError::Invalid(format!(
                "two operations on one item ({}/{})",
                key.pk, key.sk
            )));
        }
    }
    Ok(())
}

// ---- Rate-limit windows (here, not a module of their own: the item store names its host's windows,
// and the windows speak the store's keys and errors) ----
// Rate-limit windows: per scope and minute, the requests and tokens admitted so far. The rule
// (which scopes, which limits, what a refusal says) is `domain::billing::rate_limits`; this port
// only counts. Two adapters: windows kept as items of the item store
// (`domain::billing::store_windows`, what the AWS host uses, every Lambda instance sharing them
// through DynamoDB), and windows kept in the memory of the one process that owns them
// (`reelgate-embedded`'s `rate_windows`, the local host), which the request path takes and
// settles without a store round trip. An item store names the windows of its host through
// [`crate::ports::store::ItemStore::rate_windows`].

/// One request into one window: one more request and `tokens` more tokens, only if both stay
/// within the limits that are set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WindowAdmission {
    pub key: Key,
    pub max_requests: Option<u64>,
    pub max_tokens: Option<u64>,
    /// Never more than `max_tokens` (the rule refuses such a request before any window).
    pub tokens: u64,
    /// When the window is forgotten (Unix seconds).
    pub expires_at: i64,
}

/// A window's counts: after the admission when admitted, as they stand when full.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WindowCounts {
    pub requests: u64,
    pub tokens: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowOutcome {
    Admitted(WindowCounts),
    /// A limit is reached; nothing was counted.
    Full(WindowCounts),
}

#[async_trait]
pub trait RateWindows: Send + Sync {
    /// Each admission on its own (not all or none), the answers in order. The count is exact
    /// under any concurrency: no two admissions into one window interleave.
    async fn admit_each(
        &self,
        admissions: Vec<WindowAdmission>,
    ) -> Vec<Result<WindowOutcome, StoreError>>;

    /// Takes back one request and its `tokens` from a window that admitted them (the other
    /// scope refused the request). Failures are logged, never answered: a unit not given back
    /// only refuses early, never admits wrongly.
    async fn give_back(&self, key: &Key, tokens: u64);

    /// Adds `delta` tokens (the real count minus the estimate) to a window that still exists.
    async fn settle(&self, key: &Key, delta: i64);

    /// The settlement of a charged request as a write to join the charge's transaction, where the
    /// windows are items of the same store (`expires_at` kept). None where they are not: the
    /// charge then calls [`RateWindows::settle`] once its transaction has committed, so a charge
    /// that is refused (already charged) settles nothing either way.
    fn settlement_write(&self, key: &Key, delta: i64, expires_at: i64) -> Option<TransactOp>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_carry_the_format_version_out_and_lose_it_on_the_way_in() {
        let mut old = item(&Key::new("ORG#o", "JOB#j"));
        old.insert("status".into(), "queued".into());
        // Written before formats were versioned: read as it is.
        assert_eq!(read_format(old.clone()).unwrap(), old);
        let stamped = stamp_format(&old).into_owned();
        assert_eq!(stamped.i64_attr(FORMAT_VERSION_ATTR), Some(FORMAT_VERSION));
        assert_eq!(read_format(stamped).unwrap(), old);
        let mut newer = old.clone();
        newer.insert(FORMAT_VERSION_ATTR.into(), Attr::from(FORMAT_VERSION + 1));
        let refused = read_format(newer).unwrap_err().to_string();
        assert!(
            refused.contains("newer release") && refused.contains("JOB#j"),
            "{refused}"
        );
    }
}
