//! The providers the catalog names, by catalog id: chat upstreams and video engines. The
//! assembly fills them from the catalog; tests register fakes with `insert`, and those win.
//! Chat upstreams missing at start-up (a provider that could not be configured) are connected on
//! first use through the [`UpstreamConnector`] the host supplies, so one broken provider does
//! not take the other routes down.

use crate::domain::catalog::{Catalog, UpstreamConfig};
use crate::ports::engine::VideoEngine;
use crate::ports::upstream::{ChatUpstream, UpstreamError};
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// Builds the chat-upstream adapter a catalog entry names by its `kind` (the assembly supplies
/// one that knows every kind the host links).
#[async_trait]
pub trait UpstreamConnector: Send + Sync + 'static {
    async fn connect(
        &self,
        config: &UpstreamConfig,
    ) -> Result<Arc<dyn ChatUpstream>, UpstreamError>;
}

/// Upstreams by id (the catalog's `upstreams[].id`).
#[derive(Default)]
pub struct Upstreams {
    by_id: RwLock<HashMap<String, Arc<dyn ChatUpstream>>>,
    connector: Option<Arc<dyn UpstreamConnector>>,
}

impl Upstreams {
    /// An empty registry that connects catalog upstreams on first use through `connector`.
    pub fn with_connector(connector: Arc<dyn UpstreamConnector>) -> Self {
        Upstreams {
            by_id: RwLock::default(),
            connector: Some(connector),
        }
    }

    pub fn insert(&self, id: &str, upstream: Arc<dyn ChatUpstream>) {
        if let Ok(mut map) = self.by_id.write() {
            map.insert(id.to_owned(), upstream);
        }
    }

    pub fn get(&self, id: &str) -> Option<Arc<dyn ChatUpstream>> {
        self.by_id.read().ok().and_then(|m| m.get(id).cloned())
    }

    /// Connects every upstream the catalog declares. The gateway also connects lazily on first
    /// use (see [`Upstreams::get_or_connect`]), so calling this is optional; it surfaces a bad
    /// configuration at start-up instead of on the first request.
    pub async fn connect_all(&self, catalog: &Catalog) -> Result<(), UpstreamError> {
        let Some(connector) = &self.connector else {
            return Ok(());
        };
        for config in &catalog.upstreams {
            let upstream = connector
                .connect(config)
                .await
                .map_err(|e| UpstreamError::Unreachable(format!("upstream {}: {e}", config.id)))?;
            self.insert(&config.id, upstream);
        }
        Ok(())
    }

    /// The upstream registered under `id`, else one built from the catalog's configuration and
    /// remembered.
    pub async fn get_or_connect(
        &self,
        catalog: &Catalog,
        id: &str,
    ) -> Result<Arc<dyn ChatUpstream>, UpstreamError> {
        if let Some(found) = self.get(id) {
            return Ok(found);
        }
        let config = catalog
            .upstream(id)
            .ok_or_else(|| UpstreamError::Unreachable(format!("no upstream {id} is configured")))?;
        let connector = self.connector.as_ref().ok_or_else(|| {
            UpstreamError::Unreachable(format!("no connector for upstream {id} on this host"))
        })?;
        let upstream = connector.connect(config).await?;
        // Two first requests may race here; both build an equivalent client and the later
        // insert wins, which is harmless.
        self.insert(id, upstream.clone());
        Ok(upstream)
    }
}

/// Engines by catalog id.
#[derive(Default)]
pub struct Engines {
    by_id: RwLock<HashMap<String, Arc<dyn VideoEngine>>>,
}

impl Engines {
    pub fn insert(&self, id: &str, engine: Arc<dyn VideoEngine>) {
        if let Ok(mut m) = self.by_id.write() {
            m.insert(id.to_owned(), engine);
        }
    }
    pub fn get(&self, id: &str) -> Option<Arc<dyn VideoEngine>> {
        self.by_id.read().ok().and_then(|m| m.get(id).cloned())
    }
}
