//! A fixed number of slots for expensive work (the PDF rasterizer's children), shared between
//! tenants in turn: when a slot frees, it goes to the waiting tenant that holds the fewest
//! slots (the longest-waiting such tenant first), never simply to the next request in line, so
//! one tenant's burst cannot keep another tenant's single document waiting behind it. A wait
//! has a deadline; past it the caller is answered in words instead of being held.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;

tokio::task_local! {
    /// The organization whose request the current task serves, for the adapters that share
    /// slots between tenants (set by [`as_tenant`]).
    static TENANT: String;
}

/// Runs `work` as `tenant`'s: the slots it takes are counted against that tenant.
pub async fn as_tenant<F: std::future::Future>(tenant: &str, work: F) -> F::Output {
    TENANT.scope(tenant.to_owned(), work).await
}

/// The tenant the current task serves (`""` outside [`as_tenant`]: one shared tenant).
pub fn current_tenant() -> String {
    TENANT.try_with(Clone::clone).unwrap_or_default()
}

/// The slots. Cheap to clone (one shared state).
#[derive(Clone)]
pub struct FairSlots {
    state: Arc<Mutex<State>>,
}

struct State {
    free: usize,
    /// Slots each tenant holds now.
    held: BTreeMap<String, usize>,
    /// Each tenant's waiters, oldest first, with the order the tenants began waiting in.
    waiting: VecDeque<(String, VecDeque<Waiter>)>,
    next_waiter: u64,
}

struct Waiter {
    id: u64,
    grant: oneshot::Sender<()>,
}

/// A slot held by a tenant; dropping it hands the slot on.
pub struct Slot {
    slots: FairSlots,
    tenant: String,
}

/// The deadline passed with every slot still taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Busy {
    pub waited: Duration,
}

impl FairSlots {
    pub fn new(slots: usize) -> FairSlots {
        FairSlots {
            state: Arc::new(Mutex::new(State {
                free: slots.max(1),
                held: BTreeMap::new(),
                waiting: VecDeque::new(),
                next_waiter: 0,
            })),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A slot for `tenant`, waiting at most `deadline` for one.
    pub async fn acquire(&self, tenant: &str, deadline: Duration) -> Result<Slot, Busy> {
        let (id, granted) = {
            let mut state = self.lock();
            if state.free > 0 && state.waiting.is_empty() {
                state.free -= 1;
                *state.held.entry(tenant.to_owned()).or_default() += 1;
                return Ok(self.slot(tenant));
            }
            let (grant, granted) = oneshot::channel();
            let id = state.next_waiter;
            state.next_waiter += 1;
            let waiter = Waiter { id, grant };
            match state.waiting.iter_mut().find(|(t, _)| t == tenant) {
                Some((_, queue)) => queue.push_back(waiter),
                None => state
                    .waiting
                    .push_back((tenant.to_owned(), VecDeque::from([waiter]))),
            }
            (id, granted)
        };
        match tokio::time::timeout(deadline, granted).await {
            Ok(Ok(())) => Ok(self.slot(tenant)),
            _ => {
                let mut state = self.lock();
                let mut still_waiting = false;
                for (t, queue) in state.waiting.iter_mut() {
                    if t == tenant {
                        let before = queue.len();
                        queue.retain(|w| w.id != id);
                        still_waiting = queue.len() != before;
                    }
                }
                state.waiting.retain(|(_, q)| !q.is_empty());
                if still_waiting {
                    Err(Busy { waited: deadline })
                } else {
                    // Granted as the deadline passed: the slot is ours, and held already.
                    drop(state);
                    Ok(self.slot(tenant))
                }
            }
        }
    }

    fn slot(&self, tenant: &str) -> Slot {
        Slot {
            slots: self.clone(),
            tenant: tenant.to_owned(),
        }
    }

    /// Hands a freed slot to the waiting tenant holding the fewest (the earliest to wait among
    /// equals), or keeps it free.
    fn release(&self, tenant: &str) {
        let mut state = self.lock();
        if let Some(n) = state.held.get_mut(tenant) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                state.held.remove(tenant);
            }
        }
        loop {
            let held = |state: &State, t: &str| state.held.get(t).copied().unwrap_or(0);
            let Some(index) =
                (0..state.waiting.len()).min_by_key(|&i| (held(&state, &state.waiting[i].0), i))
            else {
                state.free += 1;
                return;
            };
            let (next, waiter) = {
                let (t, queue) = &mut state.waiting[index];
                (t.clone(), queue.pop_front())
            };
            if state.waiting[index].1.is_empty() {
                state.waiting.remove(index);
            } else {
                // Served: the tenant goes to the back among equals.
                let entry = state.waiting.remove(index).expect("index in range");
                state.waiting.push_back(entry);
            }
            let Some(waiter) = waiter else { continue };
            *state.held.entry(next.clone()).or_default() += 1;
            if waiter.grant.send(()).is_ok() {
                return;
            }
            // That waiter gave up: undo and try the next.
            if let Some(n) = state.held.get_mut(&next) {
                *n -= 1;
                if *n == 0 {
                    state.held.remove(&next);
                }
            }
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.slots.release(&self.tenant);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_freed_slot_goes_to_the_tenant_holding_fewest() {
        let slots = FairSlots::new(2);
        let a1 = slots
            .acquire("a", Duration::from_secs(1))
            .await
            .expect("a1");
        let a2 = slots
            .acquire("a", Duration::from_secs(1))
            .await
            .expect("a2");
        // Tenant a queues three more, then b asks once.
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut waits = Vec::new();
        for name in ["a3", "a4", "a5", "b1"] {
            let (slots, order) = (slots.clone(), order.clone());
            waits.push(tokio::spawn(async move {
                let slot = slots
                    .acquire(&name[..1], Duration::from_secs(5))
                    .await
                    .expect("granted");
                order.lock().expect("lock").push(name);
                tokio::time::sleep(Duration::from_millis(20)).await;
                drop(slot);
            }));
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        drop(a1);
        tokio::time::sleep(Duration::from_millis(5)).await;
        drop(a2);
        for w in waits {
            w.await.expect("task");
        }
        let order = order.lock().expect("lock").clone();
        assert_eq!(
            order[0], "b1",
            "b holds none, so the first freed slot is b's: {order:?}"
        );
    }

    #[tokio::test]
    async fn a_wait_past_its_deadline_is_busy_and_leaves_no_trace() {
        let slots = FairSlots::new(1);
        let held = slots
            .acquire("a", Duration::from_secs(1))
            .await
            .expect("first");
        let busy = slots.acquire("b", Duration::from_millis(30)).await;
        assert_eq!(
            busy.err(),
            Some(Busy {
                waited: Duration::from_millis(30)
            })
        );
        drop(held);
        // The slot came back free, not to the waiter that left.
        let again = slots.acquire("c", Duration::from_millis(30)).await;
        assert!(again.is_ok());
    }
}
