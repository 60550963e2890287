//! Which deployment of a chat model serves a request, and which is tried next when it fails.
//!
//! Every request draws an order over the model's deployments: the weighted ones in a random order
//! where a deployment of weight `w` comes first with probability `w / Σw` (sampling without
//! replacement), then the fallbacks (weight 0), then any deployment that is cooling down, soonest
//! back first — so when all are out, the request still gets a try rather than a refusal. A
//! deployment is taken out for the policy's cool-down after `failures_before_cooldown` retryable
//! failures in a row, and at once when it answers 429 (for its `Retry-After` when it gives one).
//! The table is per process: each Lambda instance learns on its own, which costs at most
//! `failures_before_cooldown` failed tries per instance before it steers away.

use crate::domain::catalog::{Deployment, RoutingPolicy};
use crate::ports::upstream::UpstreamError;
use rand::Rng;
use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Longest cool-down an upstream's `Retry-After` can impose (a bad header must not take a
/// deployment out for a day).
const MAX_RETRY_AFTER: Duration = Duration::from_secs(600);

#[derive(Debug, Default, Clone)]
struct Health {
    failures_in_a_row: u32,
    out_until: Option<Instant>,
}

/// Locks of the table. Every chat request reads its deployments' health and marks the one that
/// answered, so one lock would be a point every core waits at; a deployment's shard is chosen
/// by its label's hash and held for one lookup.
const SHARDS: usize = 16;

/// The health of every deployment this process has used, by [`Deployment::label`].
#[derive(Debug, Default)]
pub struct DeploymentHealth {
    shards: [Mutex<HashMap<String, Health>>; SHARDS],
    hasher: RandomState,
}

impl DeploymentHealth {
    fn shard_of(&self, label: &str) -> usize {
        (self.hasher.hash_one(label) % SHARDS as u64) as usize
    }

    fn shard(&self, label: &str) -> MutexGuard<'_, HashMap<String, Health>> {
        self.shards[self.shard_of(label)]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// The order in which to try `deployments` (indices), drawn with `rng`.
    pub fn order(
        &self,
        model_id: &str,
        deployments: &[Deployment],
        now: Instant,
        rng: &mut impl Rng,
    ) -> Vec<usize> {
        let outs: Vec<Option<Instant>> = deployments
            .iter()
            .map(|d| {
                let label = d.label(model_id);
                self.shard(&label)
                    .get(&label)
                    .and_then(|h| h.out_until)
                    .filter(|until| *until > now)
            })
            .collect();
        let out_until = |i: usize| outs[i];
        let (mut cooling, available): (Vec<usize>, Vec<usize>) =
            (0..deployments.len()).partition(|&i| out_until(i).is_some());
        let (mut weighted, fallbacks): (Vec<usize>, Vec<usize>) = available
            .into_iter()
            .partition(|&i| deployments[i].weight > 0);
        let mut order = Vec::with_capacity(deployments.len());
        while !weighted.is_empty() {
            let total: u64 = weighted
                .iter()
                .map(|&i| u64::from(deployments[i].weight))
                .sum();
            let mut pick = rng.gen_range(0..total);
            let at = weighted
                .iter()
                .position(|&i| {
                    let w = u64::from(deployments[i].weight);
                    if pick < w {
                        true
                    } else {
                        pick -= w;
                        false
                    }
                })
                .unwrap_or(0);
            order.push(weighted.remove(at));
        }
        order.extend(fallbacks);
        cooling.sort_by_key(|&i| out_until(i));
        order.extend(cooling);
        order
    }

    /// A deployment answered: it is healthy again.
    pub fn succeeded(&self, label: &str) {
        let mut table = self.shard(label);
        if let Some(h) = table.get_mut(label) {
            *h = Health::default();
        }
    }

    /// A deployment failed with `error`; returns how long it is now out, if it is.
    pub fn failed(
        &self,
        label: &str,
        error: &UpstreamError,
        policy: &RoutingPolicy,
        now: Instant,
    ) -> Option<Duration> {
        if !error.is_retryable() {
            return None;
        }
        let mut table = self.shard(label);
        let h = table.entry(label.to_owned()).or_default();
        h.failures_in_a_row += 1;
        let cooldown = Duration::from_secs(policy.cooldown_secs);
        let out_for = match error {
            UpstreamError::Rejected {
                status: 429,
                retry_after,
                ..
            } => {
                Some(retry_after.map_or(cooldown, |s| Duration::from_secs(s).min(MAX_RETRY_AFTER)))
            }
            UpstreamError::Rejected {
                retry_after: Some(s),
                ..
            } => Some(Duration::from_secs(*s).min(MAX_RETRY_AFTER)),
            _ if h.failures_in_a_row >= policy.failures_before_cooldown.max(1) => Some(cooldown),
            _ => None,
        };
        if let Some(d) = out_for {
            h.out_until = Some(now + d);
            h.failures_in_a_row = 0;
        }
        out_for
    }

    /// Whether a deployment is cooling down at `now`.
    pub fn is_out(&self, label: &str, now: Instant) -> bool {
        let table = self.shard(label);
        table
            .get(label)
            .and_then(|h| h.out_until)
            .is_some_and(|until| until > now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn dep(upstream: &str, weight: u32) -> Deployment {
        Deployment {
            upstream: upstream.into(),
            upstream_model: None,
            weight,
            capabilities: None,
            reasoning_efforts: None,
        }
    }

    fn busy(retry_after: Option<u64>) -> UpstreamError {
        UpstreamError::Rejected {
            status: 429,
            code: None,
            message: "slow down".into(),
            retry_after,
        }
    }

    #[test]
    fn weights_spread_first_choices_and_fallbacks_come_last() {
        let health = DeploymentHealth::default();
        let deployments = [dep("a", 3), dep("b", 1), dep("spare", 0)];
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let now = Instant::now();
        let mut first_a = 0;
        for _ in 0..4000 {
            let order = health.order("m", &deployments, now, &mut rng);
            assert_eq!(order.len(), 3);
            assert_eq!(order[2], 2, "the weight-0 deployment is only a fallback");
            if order[0] == 0 {
                first_a += 1;
            }
        }
        // Expected 3000 of 4000; the bound is many standard deviations (≈27) wide.
        assert!((2800..3200).contains(&first_a), "a first {first_a} times");
    }

    #[test]
    fn a_429_takes_a_deployment_out_for_its_retry_after_then_it_comes_back() {
        let health = DeploymentHealth::default();
        let policy = RoutingPolicy::default();
        let deployments = [dep("a", 1), dep("b", 1)];
        let now = Instant::now();
        let out = health.failed("a/m", &busy(Some(20)), &policy, now);
        assert_eq!(out, Some(Duration::from_secs(20)));
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        for _ in 0..50 {
            assert_eq!(health.order("m", &deployments, now, &mut rng), vec![1, 0]);
        }
        let later = now + Duration::from_secs(21);
        assert!(!health.is_out("a/m", later));
        let firsts: std::collections::HashSet<usize> = (0..50)
            .map(|_| health.order("m", &deployments, later, &mut rng)[0])
            .collect();
        assert_eq!(firsts.len(), 2, "a is back in the rotation");
    }

    #[test]
    fn server_errors_take_a_deployment_out_only_after_the_policys_count_in_a_row() {
        let health = DeploymentHealth::default();
        let policy = RoutingPolicy::default();
        let now = Instant::now();
        let down = UpstreamError::Unreachable("refused".into());
        assert_eq!(health.failed("a/m", &down, &policy, now), None);
        assert_eq!(health.failed("a/m", &down, &policy, now), None);
        health.succeeded("a/m");
        assert_eq!(health.failed("a/m", &down, &policy, now), None);
        assert_eq!(health.failed("a/m", &down, &policy, now), None);
        assert_eq!(
            health.failed("a/m", &down, &policy, now),
            Some(Duration::from_secs(policy.cooldown_secs))
        );
        assert!(health.is_out("a/m", now));
        // A caller's mistake (400) says nothing about the deployment's health.
        let bad = UpstreamError::Rejected {
            status: 400,
            code: None,
            message: "bad".into(),
            retry_after: None,
        };
        assert_eq!(health.failed("b/m", &bad, &policy, now), None);
        assert!(!health.is_out("b/m", now));
    }

    #[test]
    fn when_every_deployment_is_out_the_soonest_back_is_tried_first() {
        let health = DeploymentHealth::default();
        let policy = RoutingPolicy::default();
        let now = Instant::now();
        health.failed("a/m", &busy(Some(300)), &policy, now);
        health.failed("b/m", &busy(Some(5)), &policy, now);
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        assert_eq!(
            health.order("m", &[dep("a", 1), dep("b", 1)], now, &mut rng),
            vec![1, 0]
        );
    }

    /// The contention check of the health table: with one deployment's shard held, a request
    /// for a model whose deployment lies in another shard still gets its order. With one lock
    /// (`SHARDS = 1`) no deployment lies outside the held shard and the test fails; an order
    /// that waited for the held shard fails it by the deadline.
    #[test]
    fn a_held_shard_does_not_stop_another_models_order() {
        let health = DeploymentHealth::default();
        let held = dep("held", 1);
        let held_label = held.label("m");
        let other = (0..1000)
            .map(|i| dep(&format!("up{i}"), 1))
            .find(|d| health.shard_of(&d.label("m")) != health.shard_of(&held_label))
            .expect("a deployment outside the held shard: the table is one lock");
        let guard = health.shards[health.shard_of(&held_label)]
            .lock()
            .expect("lock");
        let (done, answer) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| {
                let order = health.order(
                    "m",
                    std::slice::from_ref(&other),
                    Instant::now(),
                    &mut rand::thread_rng(),
                );
                let _ = done.send(order);
            });
            let order = answer.recv_timeout(Duration::from_secs(5));
            // Released before asserting, so a shared lock fails the test instead of hanging it.
            drop(guard);
            assert_eq!(
                order,
                Ok(vec![0]),
                "another model's order waited for the held shard"
            );
        });
    }
}
