//! Identifiers: a type prefix and an opaque suffix that sorts by creation time (48 bits of
//! milliseconds, then 80 random bits, Crockford base32 in lower case). Sorting by time lets a
//! partition's sort key (`VIDEO#<id>`) list jobs newest first without a secondary index.
//!
//! Within one process the suffixes strictly increase: an id made in the same millisecond as the
//! previous one (a fast client creates several) is that one plus a random step, so two jobs of
//! one caller list in the order they were created. Across processes (Lambdas) the order within a
//! millisecond is arbitrary but fixed.

use rand::RngCore;
use std::sync::Mutex;

/// The last suffix this process made.
static LAST: Mutex<u128> = Mutex::new(0);

const ALPHABET: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";

/// `prefix_` followed by 26 characters.
pub fn new_id(prefix: &str) -> String {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or_default();
    let mut random = [0u8; 10];
    rand::thread_rng().fill_bytes(&mut random);
    let mut value: u128 = (millis as u128 & 0xFFFF_FFFF_FFFF) << 80;
    for (i, b) in random.iter().enumerate() {
        value |= (*b as u128) << (8 * (9 - i));
    }
    {
        let mut last = LAST.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if value <= *last {
            // A random step of up to 2^40 keeps the next id unguessable from this one; a step
            // that carries into the time bits only moves the id into a later millisecond.
            let step = 1 + (rand::thread_rng().next_u64() >> 24) as u128;
            value = last.saturating_add(step);
        }
        *last = value;
    }
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
}
