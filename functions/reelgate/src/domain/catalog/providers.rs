//! The video engines the catalog names, by catalog id. The assembly fills them from the
//! catalog; tests register fakes with `insert`, and those win. (The chat upstreams are
//! `domain::chat::upstreams`.)

use crate::ports::engine::VideoEngine;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

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
