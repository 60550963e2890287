//! Calendar dates of Unix times, in UTC: the usage report's days, the budgets' months and the
//! webhook payloads' timestamps. A leaf of the domain, so capabilities share it without importing each other.

/// Seconds in a day.
const DAY: i64 = 86_400;

/// The UTC calendar date `(year, month, day)` of a Unix time.
pub fn civil(secs: i64) -> (i64, i64, i64) {
    let days = secs.div_euclid(DAY);
    // Civil-from-days (proleptic Gregorian), as in Howard Hinnant's date algorithms.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// `YYYY-MM-DD` (UTC) of a Unix time.
pub fn day_label(secs: i64) -> String {
    let (year, month, day) = civil(secs);
    format!("{year:04}-{month:02}-{day:02}")
}

/// `2026-11-23T18:30:00Z` for unix seconds (UTC, no leap seconds, as RFC 3339 wants).
pub fn rfc3339(secs: i64) -> String {
    let rem = secs.rem_euclid(DAY);
    format!(
        "{}T{:02}:{:02}:{:02}Z",
        day_label(secs),
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_timestamps_in_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_614_265_330), "2021-02-25T15:02:10Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    }
}
