//! How an item is a row of the `items` table: its attributes as JSON with the format version
//! stamped on, and its keys and expiry as columns. The item store and the rate-limit windows'
//! snapshot both write rows this way.

use reelgate::ports::store::*;
use rusqlite::params;

pub(crate) fn encode(item: &Item) -> Result<String, rusqlite::Error> {
    serde_json::to_string(&reelgate::ports::store::stamp_format(item))
        .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
}

pub(crate) fn decode(text: &str) -> Result<Item, rusqlite::Error> {
    let conversion = |e: Box<dyn std::error::Error + Send + Sync>| {
        rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, e)
    };
    let item: Item = serde_json::from_str(text).map_err(|e| conversion(Box::new(e)))?;
    reelgate::ports::store::read_format(item).map_err(|e| conversion(Box::new(e)))
}

pub(crate) fn save(tx: &rusqlite::Connection, item: &Item) -> Result<(), rusqlite::Error> {
    let (pk, sk) = match (item.str_attr(PK), item.str_attr(SK)) {
        (Some(pk), Some(sk)) => (pk, sk),
        _ => return Err(rusqlite::Error::InvalidQuery),
    };
    tx.prepare_cached(
        "INSERT INTO items (pk, sk, data, expires_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (pk, sk) DO UPDATE SET data = excluded.data, expires_at = excluded.expires_at",
    )?
    .execute(params![pk, sk, encode(item)?, item.i64_attr(EXPIRES_AT)])?;
    Ok(())
}
