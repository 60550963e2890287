//! The AWS backend for the admin command (the deployed DynamoDB table).

use reelgate::store::ItemStore;
use std::sync::Arc;

pub async fn open_store() -> anyhow::Result<Arc<dyn ItemStore>> {
    anyhow::bail!("the aws backend is not built into this binary yet")
}
