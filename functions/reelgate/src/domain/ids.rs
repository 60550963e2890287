//! Identifiers: a type prefix and an opaque suffix that sorts by creation time (48 bits of
//! milliseconds, 20 bits of the nanosecond within it, then 60 random bits, Crockford base32 in
//! lower case). Sorting by time lets a partition's sort key (`VIDEO#<id>`) list jobs newest first
//! without a secondary index.
//!
//! An id made after another one in the same process sorts after it: a fast client that creates
//! several jobs one after the other sees them listed in that order. The nanosecond bits order ids
//! made on different threads (a request answered and the next one received are microseconds
//! apart at the least); within one thread, an id that would not sort after the thread's previous
//! one (the same nanosecond, or the clock stepped back) is that one plus a random step. No state
//! is shared between threads, so making an id takes no lock on the request path (issue 48).
//! Across processes (Lambdas) the order within a nanosecond is arbitrary but fixed.

use rand::RngCore;
use std::cell::Cell;

thread_local! {
    /// The last suffix this thread made.
    static LAST: Cell<u128> = const { Cell::new(0) };
}

const ALPHABET: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";

/// `prefix_` followed by 26 characters.
pub fn new_id(prefix: &str) -> String {
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let millis = since_epoch.as_millis() as u64 & 0xFFFF_FFFF_FFFF;
    // Below 1,000,000 < 2^20.
    let nanos_in_milli = since_epoch.subsec_nanos() % 1_000_000;
    let random = rand::thread_rng().next_u64() >> 4;
    let mut value: u128 =
        ((millis as u128) << 80) | ((nanos_in_milli as u128) << 60) | random as u128;
    LAST.with(|last| {
        if value <= last.get() {
            // A random step of up to 2^40 keeps the next id unguessable from this one; a step
            // that carries into the time bits only moves the id a few nanoseconds later.
            let step = 1 + (rand::thread_rng().next_u64() >> 24) as u128;
            value = last.get().saturating_add(step);
        }
        last.set(value);
    });
    let mut out = String::with_capacity(prefix.len() + 27);
    out.push_str(prefix);
    out.push('_');
    for i in (0..26).rev() {
        out.push(ALPHABET[((value >> (5 * i)) & 31) as usize] as char);
    }
    out
}

/// A random secret of `bytes` bytes, URL-safe base64 without padding.
pub fn new_secret(bytes: usize) -> String {
    use base64::Engine;
    let mut raw = vec![0u8; bytes];
    rand::thread_rng().fill_bytes(&mut raw);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw)
}

/// True when `id` looks like one of ours with this prefix (guards keys built from user input).
pub fn is_valid(id: &str, prefix: &str) -> bool {
    id.strip_prefix(prefix)
        .and_then(|rest| rest.strip_prefix('_'))
        .is_some_and(|s| s.len() == 26 && s.bytes().all(|b| ALPHABET.contains(&b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_sort_by_time_and_validate() {
        let a = new_id("video");
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = new_id("video");
        assert!(a < b);
        assert!(is_valid(&a, "video"));
        assert!(!is_valid(&a, "file"));
        assert!(!is_valid("video_../../etc", "video"));
    }

    #[test]
    fn ids_made_in_the_same_millisecond_still_increase() {
        // Thousands of ids a millisecond: without the step, about half would sort out of order.
        let ids: Vec<String> = (0..20_000).map(|_| new_id("video")).collect();
        for pair in ids.windows(2) {
            assert!(pair[0] < pair[1], "{} then {}", pair[0], pair[1]);
            assert!(is_valid(&pair[1], "video"));
        }
    }

    #[test]
    fn an_id_made_after_another_threads_id_sorts_after_it() {
        // Two threads hand a baton back and forth; each makes its id only after it has seen the
        // other's, so every id must sort after the one it received (what one client making jobs
        // one after another sees when its requests land on different threads).
        use std::sync::mpsc::channel;
        let (to_b, from_a) = channel::<String>();
        let (to_a, from_b) = channel::<String>();
        let b = std::thread::spawn(move || {
            for seen in from_a {
                let mine = new_id("video");
                assert!(seen < mine, "{seen} then {mine}");
                if to_a.send(mine).is_err() {
                    break;
                }
            }
        });
        let mut last = new_id("video");
        for _ in 0..5_000 {
            to_b.send(last.clone()).unwrap();
            let theirs = from_b.recv().expect("the other thread answers");
            assert!(last < theirs, "{last} then {theirs}");
            last = new_id("video");
            assert!(theirs < last, "{theirs} then {last}");
        }
        drop(to_b);
        b.join().expect("the other thread's ids increased");
    }
}
