//! Text for people: times, durations, sizes, tables, and strings from files made safe to print.

use std::fmt::Write as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `s` with control characters escaped (`\n`, `\u{1b}`), so that a label or a path from a
/// hostile file cannot break a line or send escape sequences to the terminal.
pub fn printable(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out
}

/// At most `max` characters of `s`, with `…` at the end when it was cut.
pub fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Milliseconds since 1970-01-01T00:00:00Z (negative before).
pub fn unix_millis(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(e) => i64::try_from(e.duration().as_millis()).map_or(i64::MIN, |ms| -ms),
    }
}

/// The UTC calendar fields of a time: (year, month, day, hour, minute, second, millisecond).
fn civil(ms: i64) -> (i64, u32, u32, u32, u32, u32, u32) {
    let days = ms.div_euclid(86_400_000);
    let in_day = ms.rem_euclid(86_400_000);
    // Howard Hinnant's days-to-civil algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    let secs = in_day / 1000;
    (
        year,
        month,
        day,
        (secs / 3600) as u32,
        (secs / 60 % 60) as u32,
        (secs % 60) as u32,
        (in_day % 1000) as u32,
    )
}

/// RFC 3339 in UTC with milliseconds: `2025-11-29T20:08:00.123Z`.
pub fn rfc3339(t: SystemTime) -> String {
    let (y, mo, d, h, mi, s, ms) = civil(unix_millis(t));
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{ms:03}Z")
}

/// A short UTC time for tables: `2025-11-29 20:08`.
pub fn short_time(t: SystemTime) -> String {
    let (y, mo, d, h, mi, _, _) = civil(unix_millis(t));
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}")
}

/// A playtime: `0s`, `42s`, `10m00s`, `3h02m05s`.
pub fn playtime(d: Duration) -> String {
    let secs = d.as_secs();
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    if h > 0 {
        format!("{h}h{m:02}m{s:02}s")
    } else if m > 0 {
        format!("{m}m{s:02}s")
    } else {
        format!("{s}s")
    }
}

/// Rows of cells as a left-aligned table with a header row; the last column is not padded.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let header: Vec<String> = header.iter().map(|h| (*h).to_owned()).collect();
    for row in std::iter::once(&header).chain(rows) {
        let mut line = String::new();
        for (i, (cell, w)) in row.iter().zip(&widths).enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                let pad = w - cell.chars().count();
                let _ = write!(line, "{cell}{}  ", " ".repeat(pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_utc_calendar_dates() {
        let t = |ms: u64| UNIX_EPOCH + Duration::from_millis(ms);
        assert_eq!(rfc3339(t(0)), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(t(1_700_000_000_123)), "2023-11-14T22:13:20.123Z");
        // 2000-02-29, a leap day in a century year divisible by 400.
        assert_eq!(rfc3339(t(951_782_400_000)), "2000-02-29T00:00:00.000Z");
        assert_eq!(short_time(t(1_700_000_000_123)), "2023-11-14 22:13");
        let before = UNIX_EPOCH - Duration::from_millis(1);
        assert_eq!(rfc3339(before), "1969-12-31T23:59:59.999Z");
    }

    #[test]
    fn playtimes_read_naturally() {
        assert_eq!(playtime(Duration::from_millis(999)), "0s");
        assert_eq!(playtime(Duration::from_secs(42)), "42s");
        assert_eq!(playtime(Duration::from_secs(600)), "10m00s");
        assert_eq!(playtime(Duration::from_secs(3 * 3600 + 125)), "3h02m05s");
    }

    #[test]
    fn control_characters_are_escaped_and_long_text_cut() {
        assert_eq!(printable("a\nb\u{1b}[2J"), "a\\nb\\u{1b}[2J");
        assert_eq!(printable("Niveau 3 — forêt"), "Niveau 3 — forêt");
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("abc", 4), "abc");
    }

    #[test]
    fn tables_align_columns() {
        let t = table(
            &["A", "LONG"],
            &[vec!["xyz".into(), "1".into()], vec!["".into(), "22".into()]],
        );
        assert_eq!(t, "A    LONG\nxyz  1\n     22\n");
    }
}
