//! The item store on one DynamoDB table (`pk` HASH, `sk` RANGE, TTL on `expires_at`).
//!
//! Semantics follow the embedded SQLite adapter exactly:
//! - Reads are strongly consistent (`ConsistentRead`), as the embedded store is.
//! - An item whose `expires_at` has passed does not exist for readers *or for conditions*:
//!   DynamoDB's TTL deletes such items lazily, so every condition is rewritten to treat an
//!   expired item as absent (without arithmetic: the adapter evaluates the condition against an
//!   absent item itself and compares `expires_at` with the current time as a constant).
//! - An update (alone or in a transaction) of an expired item starts from an absent item, not
//!   from the stale attributes: its condition also requires a live item, and when an expired
//!   item made it fail the adapter deletes that item (guarded so that only an expired item
//!   goes) and tries again.
//! - `Condition`s become `ConditionExpression`s with generated `#n`/`:v` placeholders and no
//!   arithmetic; `Update`s become `SET`/`ADD`/`REMOVE` update expressions.

use crate::errors::{describe, service_code};
use async_trait::async_trait;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, Delete, Put, ReturnValue, TransactWriteItem,
    Update as DynamoUpdate,
};
use aws_sdk_dynamodb::Client;
use reelgate::ports::store::{
    is_expired, now_secs, validate_transaction, Attr, Condition, Item, ItemExt, ItemStore, Key,
    Page, Query, StoreError, TransactOp, Update, EXPIRES_AT, PK, SK,
};
use rust_decimal::Decimal;
use std::collections::HashMap;
use std::str::FromStr;

/// How often an update retries after clearing an expired item out of its way.
const EXPIRED_RETRIES: usize = 3;

/// The DynamoDB adapter of [`ItemStore`].
#[derive(Clone, Debug)]
pub struct DynamoItemStore {
    client: Client,
    table: String,
}

impl DynamoItemStore {
    pub fn new(config: &aws_config::SdkConfig, table: &str) -> Self {
        Self::from_client(Client::new(config), table)
    }

    pub fn from_client(client: Client, table: &str) -> Self {
        DynamoItemStore {
            client,
            table: table.to_owned(),
        }
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    /// Reads an item as stored, expired or not.
    async fn get_raw(&self, key: &Key) -> Result<Option<Item>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(key_map(key)))
            .consistent_read(true)
            .send()
            .await
            .map_err(store_error)?;
        out.item().map(from_dynamo).transpose()
    }

    /// The transaction's items, with conditions that see an expired item as absent.
    fn transaction_items(
        &self,
        ops: &[TransactOp],
        now: i64,
    ) -> Result<Vec<TransactWriteItem>, StoreError> {
        let mut items = Vec::with_capacity(ops.len());
        for op in ops {
            let mut expr = Expr::default();
            let built = match op {
                TransactOp::Put { item, condition } => {
                    let cond = condition
                        .as_ref()
                        .map(|c| expr.condition_seeing_expiry(c, now));
                    let put = Put::builder()
                        .table_name(&self.table)
                        .set_item(Some(to_dynamo(item)))
                        .set_condition_expression(cond)
                        .set_expression_attribute_names(expr.names())
                        .set_expression_attribute_values(expr.values())
                        .build()
                        .map_err(build_error)?;
                    TransactWriteItem::builder().put(put).build()
                }
                TransactOp::Update {
                    key,
                    update,
                    condition,
                } => {
                    let update_expr = expr.update(update)?.ok_or_else(|| {
                        StoreError::Invalid("a transactional update needs a change".into())
                    })?;
                    // As for a single update: never on top of an expired item's attributes.
                    let cond = expr.condition_on_live(condition.as_ref(), now);
                    let update = DynamoUpdate::builder()
                        .table_name(&self.table)
                        .set_key(Some(key_map(key)))
                        .update_expression(update_expr)
                        .condition_expression(cond)
                        .set_expression_attribute_names(expr.names())
                        .set_expression_attribute_values(expr.values())
                        .build()
                        .map_err(build_error)?;
                    TransactWriteItem::builder().update(update).build()
                }
                TransactOp::Delete { key, condition } => {
                    let cond = condition
                        .as_ref()
                        .map(|c| expr.condition_seeing_expiry(c, now));
                    let delete = Delete::builder()
                        .table_name(&self.table)
                        .set_key(Some(key_map(key)))
                        .set_condition_expression(cond)
                        .set_expression_attribute_names(expr.names())
                        .set_expression_attribute_values(expr.values())
                        .build()
                        .map_err(build_error)?;
                    TransactWriteItem::builder().delete(delete).build()
                }
                TransactOp::ConditionCheck { key, condition } => {
                    let cond = expr.condition_seeing_expiry(condition, now);
                    let check = ConditionCheck::builder()
                        .table_name(&self.table)
                        .set_key(Some(key_map(key)))
                        .condition_expression(cond)
                        .set_expression_attribute_names(expr.names())
                        .set_expression_attribute_values(expr.values())
                        .build()
                        .map_err(build_error)?;
                    TransactWriteItem::builder().condition_check(check).build()
                }
            };
            items.push(built);
        }
        Ok(items)
    }

    /// After a cancelled transaction: removes the expired items that made an update fail where
    /// an absent item would have passed. True when there was one (the transaction is retried).
    async fn clear_expired_in_the_way(
        &self,
        ops: &[TransactOp],
        failed: &[bool],
    ) -> Result<bool, StoreError> {
        let mut cleared = false;
        for (op, failed) in ops.iter().zip(failed) {
            let TransactOp::Update { key, condition, .. } = op else {
                continue;
            };
            if !failed || !condition.as_ref().is_none_or(|c| c.holds(None)) {
                continue;
            }
            let now = now_secs();
            if self
                .get_raw(key)
                .await?
                .is_some_and(|item| is_expired(&item, now))
            {
                self.delete_if_expired(key, now).await?;
                cleared = true;
            }
        }
        Ok(cleared)
    }

    /// Deletes `key` only while it is expired.
    async fn delete_if_expired(&self, key: &Key, now: i64) -> Result<(), StoreError> {
        let mut expr = Expr::default();
        let cond = expr.expired(now).text;
        let result = self
            .client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(key_map(key)))
            .condition_expression(cond)
            .set_expression_attribute_names(expr.names())
            .set_expression_attribute_values(expr.values())
            .send()
            .await;
        match result.map_err(store_error) {
            Ok(_) | Err(StoreError::ConditionFailed) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Attribute values

fn to_dynamo_value(attr: &Attr) -> AttributeValue {
    match attr {
        Attr::S(s) => AttributeValue::S(s.clone()),
        Attr::N(n) => AttributeValue::N(n.to_string()),
        Attr::Bool(b) => AttributeValue::Bool(*b),
        Attr::Null => AttributeValue::Null(true),
        Attr::L(list) => AttributeValue::L(list.iter().map(to_dynamo_value).collect()),
        Attr::M(map) => AttributeValue::M(
            map.iter()
                .map(|(k, v)| (k.clone(), to_dynamo_value(v)))
                .collect(),
        ),
    }
}

fn from_dynamo_value(value: &AttributeValue) -> Result<Attr, StoreError> {
    Ok(match value {
        AttributeValue::S(s) => Attr::S(s.clone()),
        AttributeValue::N(n) => Attr::N(parse_number(n)?),
        AttributeValue::Bool(b) => Attr::Bool(*b),
        AttributeValue::Null(_) => Attr::Null,
        AttributeValue::L(list) => Attr::L(
            list.iter()
                .map(from_dynamo_value)
                .collect::<Result<_, _>>()?,
        ),
        AttributeValue::M(map) => Attr::M(
            map.iter()
                .map(|(k, v)| Ok((k.clone(), from_dynamo_value(v)?)))
                .collect::<Result<_, StoreError>>()?,
        ),
        other => {
            return Err(StoreError::Invalid(format!(
                "unsupported DynamoDB attribute type: {other:?}"
            )))
        }
    })
}

fn parse_number(text: &str) -> Result<Decimal, StoreError> {
    Decimal::from_str(text)
        .or_else(|_| Decimal::from_scientific(text))
        .map_err(|e| StoreError::Invalid(format!("number {text:?} does not fit a decimal: {e}")))
}

fn to_dynamo(item: &Item) -> HashMap<String, AttributeValue> {
    reelgate::ports::store::stamp_format(item)
        .iter()
        .map(|(k, v)| (k.clone(), to_dynamo_value(v)))
        .collect()
}

fn from_dynamo(map: &HashMap<String, AttributeValue>) -> Result<Item, StoreError> {
    let item = map
        .iter()
        .map(|(k, v)| Ok((k.clone(), from_dynamo_value(v)?)))
        .collect::<Result<Item, StoreError>>()?;
    reelgate::ports::store::read_format(item)
}

fn key_map(key: &Key) -> HashMap<String, AttributeValue> {
    HashMap::from([
        (PK.to_owned(), AttributeValue::S(key.pk.clone())),
        (SK.to_owned(), AttributeValue::S(key.sk.clone())),
    ])
}

fn check_key(item: &Item) -> Result<Key, StoreError> {
    item.key()
        .ok_or_else(|| StoreError::Invalid("an item needs string pk and sk attributes".into()))
}

// ---------------------------------------------------------------------------------------------
// Expressions

/// How loosely a rendered condition binds: DynamoDB's precedence is comparisons and functions,
/// then `NOT`, then `AND`, then `OR`. Parentheses go only where precedence needs them, because
/// DynamoDB rejects an expression with redundant parentheses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Binding {
    Atom,
    Not,
    And,
    Or,
}

struct Rendered {
    text: String,
    binding: Binding,
}

impl Rendered {
    fn atom(text: String) -> Self {
        Rendered {
            text,
            binding: Binding::Atom,
        }
    }

    /// The text, parenthesised when it binds more loosely than `within`.
    fn inside(self, within: Binding) -> String {
        if self.binding > within {
            format!("({})", self.text)
        } else {
            self.text
        }
    }

    fn join(mut parts: Vec<Rendered>, binding: Binding, op: &str) -> Self {
        if parts.len() == 1 {
            if let Some(only) = parts.pop() {
                return only;
            }
        }
        let texts: Vec<String> = parts.into_iter().map(|p| p.inside(binding)).collect();
        Rendered {
            text: texts.join(op),
            binding,
        }
    }

    fn and(parts: Vec<Rendered>) -> Self {
        Self::join(parts, Binding::And, " AND ")
    }

    fn or(parts: Vec<Rendered>) -> Self {
        Self::join(parts, Binding::Or, " OR ")
    }

    fn not(inner: Rendered) -> Self {
        Rendered {
            text: format!("NOT {}", inner.inside(Binding::Atom)),
            binding: Binding::Not,
        }
    }
}

/// Builds expressions with `#nN` name and `:vN` value placeholders.
#[derive(Default)]
struct Expr {
    names: HashMap<String, String>,
    by_name: HashMap<String, String>,
    values: HashMap<String, AttributeValue>,
}

impl Expr {
    fn name(&mut self, name: &str) -> String {
        if let Some(placeholder) = self.by_name.get(name) {
            return placeholder.clone();
        }
        let placeholder = format!("#n{}", self.names.len());
        self.names.insert(placeholder.clone(), name.to_owned());
        self.by_name.insert(name.to_owned(), placeholder.clone());
        placeholder
    }

    fn value(&mut self, value: AttributeValue) -> String {
        let placeholder = format!(":v{}", self.values.len());
        self.values.insert(placeholder.clone(), value);
        placeholder
    }

    fn names(&self) -> Option<HashMap<String, String>> {
        (!self.names.is_empty()).then(|| self.names.clone())
    }

    fn values(&self) -> Option<HashMap<String, AttributeValue>> {
        (!self.values.is_empty()).then(|| self.values.clone())
    }

    /// Always true / always false, for empty `And` / `Or` / `In`.
    fn constant(&mut self, truth: bool) -> Rendered {
        let pk = self.name(PK);
        if truth {
            Rendered::or(vec![
                Rendered::atom(format!("attribute_exists({pk})")),
                Rendered::atom(format!("attribute_not_exists({pk})")),
            ])
        } else {
            Rendered::and(vec![
                Rendered::atom(format!("attribute_exists({pk})")),
                Rendered::atom(format!("attribute_not_exists({pk})")),
            ])
        }
    }

    fn condition(&mut self, condition: &Condition) -> Rendered {
        let compare = |this: &mut Self, name: &str, op: &str, value: &Attr| {
            let n = this.name(name);
            let v = this.value(to_dynamo_value(value));
            Rendered::atom(format!("{n} {op} {v}"))
        };
        match condition {
            Condition::Exists => Rendered::atom(format!("attribute_exists({})", self.name(PK))),
            Condition::NotExists => {
                Rendered::atom(format!("attribute_not_exists({})", self.name(PK)))
            }
            Condition::AttrExists(n) => {
                Rendered::atom(format!("attribute_exists({})", self.name(n)))
            }
            Condition::AttrNotExists(n) => {
                Rendered::atom(format!("attribute_not_exists({})", self.name(n)))
            }
            Condition::Eq(n, v) => compare(self, n, "=", v),
            Condition::Ne(n, v) => compare(self, n, "<>", v),
            Condition::Lt(n, v) => compare(self, n, "<", v),
            Condition::Le(n, v) => compare(self, n, "<=", v),
            Condition::Gt(n, v) => compare(self, n, ">", v),
            Condition::Ge(n, v) => compare(self, n, ">=", v),
            Condition::In(_, values) if values.is_empty() => self.constant(false),
            Condition::In(n, values) => {
                let n = self.name(n);
                let vs: Vec<String> = values
                    .iter()
                    .map(|v| self.value(to_dynamo_value(v)))
                    .collect();
                Rendered::atom(format!("{n} IN ({})", vs.join(", ")))
            }
            Condition::And(all) if all.is_empty() => self.constant(true),
            Condition::Or(any) if any.is_empty() => self.constant(false),
            Condition::And(all) => Rendered::and(all.iter().map(|c| self.condition(c)).collect()),
            Condition::Or(any) => Rendered::or(any.iter().map(|c| self.condition(c)).collect()),
            Condition::Not(c) => Rendered::not(self.condition(c)),
        }
    }

    /// The item carries an expiry at or before `now`.
    fn expired(&mut self, now: i64) -> Rendered {
        let e = self.name(EXPIRES_AT);
        let now = self.value(AttributeValue::N(now.to_string()));
        Rendered::atom(format!("{e} <= {now}"))
    }

    /// The item is absent, or present without a passed expiry.
    fn live(&mut self, now: i64) -> Rendered {
        let e = self.name(EXPIRES_AT);
        let now = self.value(AttributeValue::N(now.to_string()));
        Rendered::or(vec![
            Rendered::atom(format!("attribute_not_exists({e})")),
            Rendered::atom(format!("{e} > {now}")),
        ])
    }

    /// `condition` as it holds when an expired item counts as absent.
    fn condition_seeing_expiry(&mut self, condition: &Condition, now: i64) -> String {
        let c = self.condition(condition);
        if condition.holds(None) {
            let expired = self.expired(now);
            Rendered::or(vec![c, expired]).text
        } else {
            let live = self.live(now);
            Rendered::and(vec![c, live]).text
        }
    }

    /// `condition`, and the item is not expired (an update must not start from stale attributes).
    fn condition_on_live(&mut self, condition: Option<&Condition>, now: i64) -> String {
        let c = condition.map(|c| self.condition(c));
        let live = self.live(now);
        match c {
            Some(c) => Rendered::and(vec![c, live]).text,
            None => live.text,
        }
    }

    /// The update expression; None for an update that changes nothing. DynamoDB refuses an
    /// update that names one attribute twice ("overlapping paths"), and so does this, before
    /// sending (an emulator may accept it).
    fn update(&mut self, update: &Update) -> Result<Option<String>, StoreError> {
        update.validate()?;
        let mut clauses = Vec::new();
        if !update.set.is_empty() {
            let mut sets: Vec<String> = update
                .set
                .iter()
                .map(|(n, v)| {
                    let n = self.name(n);
                    let v = self.value(to_dynamo_value(v));
                    format!("{n} = {v}")
                })
                .collect();
            // The item is now (also) this release's format.
            let n = self.name(reelgate::ports::store::FORMAT_VERSION_ATTR);
            let v = self.value(AttributeValue::N(
                reelgate::ports::store::FORMAT_VERSION.to_string(),
            ));
            sets.push(format!("{n} = {v}"));
            clauses.push(format!("SET {}", sets.join(", ")));
        }
        if !update.add.is_empty() {
            let adds: Vec<String> = update
                .add
                .iter()
                .map(|(n, amount)| {
                    let n = self.name(n);
                    let v = self.value(AttributeValue::N(amount.to_string()));
                    format!("{n} {v}")
                })
                .collect();
            clauses.push(format!("ADD {}", adds.join(", ")));
        }
        if !update.remove.is_empty() {
            let removes: Vec<String> = update.remove.iter().map(|n| self.name(n)).collect();
            clauses.push(format!("REMOVE {}", removes.join(", ")));
        }
        Ok((!clauses.is_empty()).then(|| clauses.join(" ")))
    }
}

// ---------------------------------------------------------------------------------------------
// Errors

fn store_error<E, R>(err: SdkError<E, R>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    match service_code(&err) {
        Some("ConditionalCheckFailedException") => StoreError::ConditionFailed,
        Some("ValidationException" | "SerializationException") => {
            StoreError::Invalid(describe(&err))
        }
        _ => StoreError::Unavailable(describe(&err)),
    }
}

fn transaction_error<R: std::fmt::Debug>(
    err: SdkError<TransactWriteItemsError, R>,
    ops: usize,
) -> StoreError {
    if let SdkError::ServiceError(service) = &err {
        if let TransactWriteItemsError::TransactionCanceledException(cancel) = service.err() {
            let codes: Vec<&str> = cancel
                .cancellation_reasons()
                .iter()
                .map(|r| r.code().unwrap_or("None"))
                .collect();
            if codes.contains(&"ValidationError") {
                return StoreError::Invalid(describe(&err));
            }
            if codes.contains(&"ConditionalCheckFailed") {
                let mut failed: Vec<bool> = codes
                    .iter()
                    .map(|c| *c == "ConditionalCheckFailed")
                    .collect();
                failed.resize(ops, false);
                return StoreError::TransactionCanceled { failed };
            }
            // A conflict with a concurrent write or throttling: nothing was written, try again.
            return StoreError::Unavailable(format!("{} {codes:?}", describe(&err)));
        }
    }
    store_error(err)
}

// ---------------------------------------------------------------------------------------------
// The port

#[async_trait]
impl ItemStore for DynamoItemStore {
    async fn get(&self, key: &Key) -> Result<Option<Item>, StoreError> {
        let now = now_secs();
        Ok(self
            .get_raw(key)
            .await?
            .filter(|item| !is_expired(item, now)))
    }

    async fn put(&self, item: Item, condition: Option<Condition>) -> Result<(), StoreError> {
        check_key(&item)?;
        let mut expr = Expr::default();
        let cond = condition
            .as_ref()
            .map(|c| expr.condition_seeing_expiry(c, now_secs()));
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(to_dynamo(&item)))
            .set_condition_expression(cond)
            .set_expression_attribute_names(expr.names())
            .set_expression_attribute_values(expr.values())
            .send()
            .await
            .map_err(store_error)?;
        Ok(())
    }

    async fn update(
        &self,
        key: &Key,
        update: Update,
        condition: Option<Condition>,
    ) -> Result<Item, StoreError> {
        for _ in 0..EXPIRED_RETRIES {
            let now = now_secs();
            let mut expr = Expr::default();
            let update_expr = expr.update(&update)?;
            let cond = expr.condition_on_live(condition.as_ref(), now);
            let result = self
                .client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(key_map(key)))
                .set_update_expression(update_expr)
                .condition_expression(cond)
                .set_expression_attribute_names(expr.names())
                .set_expression_attribute_values(expr.values())
                .return_values(ReturnValue::AllNew)
                .send()
                .await;
            match result.map_err(store_error) {
                Ok(out) => {
                    return match out.attributes() {
                        Some(attrs) => from_dynamo(attrs),
                        // UpdateItem returns the whole item with ALL_NEW; be safe anyway.
                        None => self.get(key).await?.ok_or_else(|| {
                            StoreError::Unavailable("the updated item vanished".into())
                        }),
                    };
                }
                Err(StoreError::ConditionFailed) => {
                    // Failed because of the caller's condition, or because an expired item
                    // (not yet deleted by TTL) is in the way: then it counts as absent.
                    let now = now_secs();
                    let in_the_way = self
                        .get_raw(key)
                        .await?
                        .is_some_and(|item| is_expired(&item, now));
                    let absent_passes = condition.as_ref().is_none_or(|c| c.holds(None));
                    if !(in_the_way && absent_passes) {
                        return Err(StoreError::ConditionFailed);
                    }
                    self.delete_if_expired(key, now).await?;
                }
                Err(e) => return Err(e),
            }
        }
        Err(StoreError::Unavailable(
            "an expired item kept reappearing in the way of an update".into(),
        ))
    }

    async fn delete(
        &self,
        key: &Key,
        condition: Option<Condition>,
    ) -> Result<Option<Item>, StoreError> {
        let now = now_secs();
        let mut expr = Expr::default();
        let cond = condition
            .as_ref()
            .map(|c| expr.condition_seeing_expiry(c, now));
        let out = self
            .client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(key_map(key)))
            .set_condition_expression(cond)
            .set_expression_attribute_names(expr.names())
            .set_expression_attribute_values(expr.values())
            .return_values(ReturnValue::AllOld)
            .send()
            .await
            .map_err(store_error)?;
        let old = out.attributes().map(from_dynamo).transpose()?;
        Ok(old.filter(|item| !is_expired(item, now)))
    }

    async fn transact(&self, ops: Vec<TransactOp>) -> Result<(), StoreError> {
        validate_transaction(&ops)?;
        for _ in 0..EXPIRED_RETRIES {
            let items = self.transaction_items(&ops, now_secs())?;
            let result = self
                .client
                .transact_write_items()
                .set_transact_items(Some(items))
                .send()
                .await;
            match result.map_err(|e| transaction_error(e, ops.len())) {
                Ok(_) => return Ok(()),
                Err(StoreError::TransactionCanceled { failed }) => {
                    if !self.clear_expired_in_the_way(&ops, &failed).await? {
                        return Err(StoreError::TransactionCanceled { failed });
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Err(StoreError::Unavailable(
            "an expired item kept reappearing in the way of a transaction".into(),
        ))
    }

    async fn query(&self, query: Query) -> Result<Page, StoreError> {
        if query.limit == 0 {
            return Err(StoreError::Invalid("a query limit must be positive".into()));
        }
        let now = now_secs();
        // One live item more than asked tells whether another page exists. DynamoDB applies
        // `Limit` before anything is filtered out and may stop early (1 MB), so keep reading.
        let wanted = query.limit.saturating_add(1);
        let mut live: Vec<Item> = Vec::new();
        let mut start = match start_after(&query) {
            StartAfter::Beginning => None,
            StartAfter::Key(sk) => Some(key_map(&Key {
                pk: query.pk.clone(),
                sk,
            })),
            StartAfter::PastTheEnd => return Ok(Page::default()),
        };
        loop {
            let mut expr = Expr::default();
            let pk = expr.name(PK);
            let pk_value = expr.value(AttributeValue::S(query.pk.clone()));
            let key_condition = match &query.sk_prefix {
                Some(prefix) if !prefix.is_empty() => {
                    let sk = expr.name(SK);
                    let p = expr.value(AttributeValue::S(prefix.clone()));
                    format!("{pk} = {pk_value} AND begins_with({sk}, {p})")
                }
                _ => format!("{pk} = {pk_value}"),
            };
            let limit = i32::try_from(wanted - live.len()).unwrap_or(i32::MAX);
            let out = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression(key_condition)
                .set_expression_attribute_names(expr.names())
                .set_expression_attribute_values(expr.values())
                .scan_index_forward(!query.descending)
                .consistent_read(true)
                .limit(limit)
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(store_error)?;
            for raw in out.items() {
                let item = from_dynamo(raw)?;
                if !is_expired(&item, now) {
                    live.push(item);
                }
            }
            match out.last_evaluated_key() {
                Some(last) if live.len() < wanted => start = Some(last.clone()),
                _ => break,
            }
        }
        let more = live.len() > query.limit;
        live.truncate(query.limit);
        let last_sk = if more {
            live.last().and_then(|i| i.str_attr(SK)).map(str::to_owned)
        } else {
            None
        };
        Ok(Page {
            items: live,
            last_sk,
        })
    }
}

/// Where a query resumes.
#[derive(Debug, PartialEq, Eq)]
enum StartAfter {
    Beginning,
    Key(String),
    PastTheEnd,
}

/// DynamoDB refuses an `ExclusiveStartKey` outside the key condition's range, which a cursor
/// outside the prefix would be; such a cursor lies wholly before or after the prefix's range.
fn start_after(query: &Query) -> StartAfter {
    let Some(after) = query.after_sk.clone() else {
        return StartAfter::Beginning;
    };
    let prefix = query.sk_prefix.as_deref().unwrap_or_default();
    if after.starts_with(prefix) {
        return StartAfter::Key(after);
    }
    let before_range = after.as_bytes() < prefix.as_bytes();
    if before_range != query.descending {
        StartAfter::Beginning
    } else {
        StartAfter::PastTheEnd
    }
}

fn build_error(e: aws_sdk_dynamodb::error::BuildError) -> StoreError {
    StoreError::Invalid(e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_written_before_format_versions_and_without_new_attributes_read_back() {
        // As an earlier release wrote a job: no format version, none of the newer attributes.
        let old = HashMap::from([
            ("pk".to_owned(), AttributeValue::S("ORG#o".into())),
            ("sk".to_owned(), AttributeValue::S("JOB#video_1".into())),
            ("status".to_owned(), AttributeValue::S("queued".into())),
        ]);
        let item = from_dynamo(&old).expect("an old item reads");
        assert_eq!(item.str_attr("status"), Some("queued"));
        assert!(!item.contains_key(reelgate::ports::store::FORMAT_VERSION_ATTR));
        // What this release writes carries its format, which reading takes off again.
        let written = to_dynamo(&item);
        assert_eq!(
            written.get(reelgate::ports::store::FORMAT_VERSION_ATTR),
            Some(&AttributeValue::N(
                reelgate::ports::store::FORMAT_VERSION.to_string()
            ))
        );
        assert_eq!(from_dynamo(&written).unwrap(), item);
        let mut newer = written.clone();
        newer.insert(
            reelgate::ports::store::FORMAT_VERSION_ATTR.into(),
            AttributeValue::N("99".into()),
        );
        assert!(from_dynamo(&newer).is_err());
    }
    use rust_decimal::Decimal;

    #[test]
    fn conditions_use_placeholders_and_no_arithmetic() {
        let mut expr = Expr::default();
        let c = Condition::Ge("available".into(), Attr::N(Decimal::new(625, 2)))
            .and(Condition::In("status".into(), vec!["a".into(), "b".into()]))
            .and(Condition::Not(Box::new(Condition::Exists)));
        let text = expr.condition(&c).text;
        assert_eq!(
            text,
            "#n0 >= :v0 AND #n1 IN (:v1, :v2) AND NOT attribute_exists(#n2)"
        );
        assert!(!text.contains('+') && !text.contains(" - "));
        let names = expr.names().unwrap_or_default();
        assert_eq!(names.get("#n0").map(String::as_str), Some("available"));
        assert_eq!(names.get("#n2").map(String::as_str), Some(PK));
        let values = expr.values().unwrap_or_default();
        assert_eq!(values.get(":v0"), Some(&AttributeValue::N("6.25".into())));
    }

    #[test]
    fn parentheses_only_where_precedence_needs_them() {
        let eq = |n: &str| Condition::Eq(n.into(), "x".into());
        let c = Condition::And(vec![
            Condition::Or(vec![eq("a"), Condition::And(vec![eq("b"), eq("c")])]),
            Condition::Not(Box::new(Condition::Or(vec![eq("d"), eq("e")]))),
            Condition::And(vec![eq("f")]),
        ]);
        assert_eq!(
            Expr::default().condition(&c).text,
            "(#n0 = :v0 OR #n1 = :v1 AND #n2 = :v2) AND NOT (#n3 = :v3 OR #n4 = :v4) AND #n5 = :v5"
        );
    }

    #[test]
    fn expiry_rewrites_depend_on_the_absent_item() {
        let mut expr = Expr::default();
        let text = expr.condition_seeing_expiry(&Condition::NotExists, 100);
        assert_eq!(text, "attribute_not_exists(#n0) OR #n1 <= :v0");
        let mut expr = Expr::default();
        let text = expr.condition_seeing_expiry(&Condition::Exists, 100);
        assert_eq!(
            text,
            "attribute_exists(#n0) AND (attribute_not_exists(#n1) OR #n1 > :v0)"
        );
    }

    #[test]
    fn updates_become_set_add_remove() {
        let mut expr = Expr::default();
        let u = Update::new()
            .set("a", "x")
            .add("n", Decimal::new(-1, 0))
            .remove("gone");
        assert_eq!(
            expr.update(&u).ok().flatten().as_deref(),
            Some("SET #n0 = :v0, #n1 = :v1 ADD #n2 :v2 REMOVE #n3")
        );
        assert_eq!(Expr::default().update(&Update::new()).ok(), Some(None));
        let twice = Update::new().set("a", "x").add("a", Decimal::ONE);
        assert!(matches!(
            Expr::default().update(&twice),
            Err(StoreError::Invalid(_))
        ));
        let key = Update::new().set(SK, "other");
        assert!(matches!(
            Expr::default().update(&key),
            Err(StoreError::Invalid(_))
        ));
    }

    #[test]
    fn cursors_outside_the_prefix() {
        let q = |after: &str, descending: bool| Query {
            descending,
            ..Query::partition("p")
                .prefix("VIDEO#")
                .after(Some(after.to_owned()))
        };
        assert_eq!(
            start_after(&q("VIDEO#1", false)),
            StartAfter::Key("VIDEO#1".into())
        );
        assert_eq!(start_after(&q("ORG", false)), StartAfter::Beginning);
        assert_eq!(start_after(&q("ORG", true)), StartAfter::PastTheEnd);
        assert_eq!(start_after(&q("WIDGET#1", false)), StartAfter::PastTheEnd);
        assert_eq!(start_after(&q("WIDGET#1", true)), StartAfter::Beginning);
        assert_eq!(start_after(&Query::partition("p")), StartAfter::Beginning);
    }

    #[test]
    fn values_round_trip() {
        let attr = Attr::L(vec![
            Attr::N(Decimal::new(12345, 3)),
            Attr::Null,
            Attr::Bool(false),
            Attr::M(Item::new()),
        ]);
        let back = from_dynamo_value(&to_dynamo_value(&attr)).ok();
        assert_eq!(back, Some(attr));
        assert_eq!(parse_number("1E+2").ok(), Some(Decimal::new(100, 0)));
    }
}
