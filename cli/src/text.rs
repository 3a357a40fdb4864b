//! Text for people: times, durations, sizes, tables measured in terminal columns, and strings
//! from files made safe to print.

use std::fmt::Write as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jiff::Timestamp;
use unicode_width::{UnicodeWidthChar as _, UnicodeWidthStr};

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

/// How many terminal columns `s` takes: two for a CJK character, none for a combining mark.
pub fn width(s: &str) -> usize {
    UnicodeWidthStr::width(s)
}

/// At most `max` terminal columns of `s`, with `…` at the end when it was cut.
pub fn truncate(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.to_owned();
    }
    let budget = max.saturating_sub(1);
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > budget {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

/// `s` followed by spaces up to `columns` terminal columns (nothing when it is as wide).
pub fn pad(s: &str, columns: usize) -> String {
    let mut out = s.to_owned();
    out.push_str(&" ".repeat(columns.saturating_sub(width(s))));
    out
}

/// Milliseconds since 1970-01-01T00:00:00Z (negative before).
pub fn unix_millis(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(e) => i64::try_from(e.duration().as_millis()).map_or(i64::MIN, |ms| -ms),
    }
}

/// The time as a timestamp, when it is within the calendar's years -9999 to 9999 (a save
/// file can hold any 64-bit count of milliseconds).
fn timestamp(t: SystemTime) -> Option<Timestamp> {
    Timestamp::from_millisecond(unix_millis(t)).ok()
}

/// What is shown for a time outside the years -9999 to 9999.
fn out_of_range(t: SystemTime) -> String {
    format!("{} ms from 1970-01-01T00:00:00Z", unix_millis(t))
}

/// RFC 3339 in UTC with milliseconds: `2025-11-29T20:08:00.123Z`. (A time outside the years
/// -9999 to 9999, which only a damaged or hand-made file holds, is shown as milliseconds
/// from 1970.)
pub fn rfc3339(t: SystemTime) -> String {
    timestamp(t).map_or_else(|| out_of_range(t), |ts| format!("{ts:.3}"))
}

/// A time written by [`rfc3339`], or any RFC 3339 time with an offset, at millisecond
/// precision; `None` when the text is not one.
pub fn parse_rfc3339(s: &str) -> Option<SystemTime> {
    let ts: Timestamp = s.trim().parse().ok()?;
    let ms = ts.as_millisecond();
    let offset = Duration::from_millis(ms.unsigned_abs());
    if ms >= 0 {
        UNIX_EPOCH.checked_add(offset)
    } else {
        UNIX_EPOCH.checked_sub(offset)
    }
}

/// A short UTC time for tables: `2025-11-29 20:08`.
pub fn short_time(t: SystemTime) -> String {
    timestamp(t).map_or_else(
        || out_of_range(t),
        |ts| ts.strftime("%Y-%m-%d %H:%M").to_string(),
    )
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
/// Columns are measured in terminal columns ([`width`]), so CJK text lines up.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| width(h)).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(width(cell));
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
                let _ = write!(line, "{}  ", pad(cell, *w));
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
    fn rfc3339_times_read_back_to_the_millisecond() {
        let t = |ms: u64| UNIX_EPOCH + Duration::from_millis(ms);
        for time in [
            t(0),
            t(1_700_000_000_123),
            UNIX_EPOCH - Duration::from_millis(1),
        ] {
            assert_eq!(parse_rfc3339(&rfc3339(time)), Some(time));
        }
        assert_eq!(
            parse_rfc3339("2023-11-15T00:13:20.123+02:00"),
            Some(t(1_700_000_000_123))
        );
        assert_eq!(parse_rfc3339("yesterday"), None);
        assert_eq!(parse_rfc3339("2023-11-14"), None, "a date alone is no time");
    }

    #[test]
    fn times_beyond_the_calendar_are_shown_as_milliseconds() {
        let far = UNIX_EPOCH + Duration::from_millis(i64::MAX as u64);
        assert_eq!(
            rfc3339(far),
            format!("{} ms from 1970-01-01T00:00:00Z", i64::MAX)
        );
        assert_eq!(short_time(far), rfc3339(far));
        assert_eq!(parse_rfc3339(&rfc3339(far)), None);
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
    fn widths_are_terminal_columns() {
        assert_eq!(width("森林"), 4);
        assert_eq!(width("forêt"), 5);
        assert_eq!(width("e\u{301}"), 1, "a combining accent takes no column");
        // Cut to at most 5 columns: two wide characters and the ellipsis.
        assert_eq!(truncate("第三关：森林", 5), "第三…");
        assert_eq!(
            truncate("第三关：森林", 6),
            "第三…",
            "no half of a wide character"
        );
        assert_eq!(truncate("第三关", 6), "第三关");
        assert!(width(&truncate("第三关：森林深处", 32)) <= 32);
        assert_eq!(pad("森", 4), "森  ");
        assert_eq!(pad("wide", 2), "wide");
    }

    #[test]
    fn tables_align_columns() {
        let t = table(
            &["A", "LONG"],
            &[vec!["xyz".into(), "1".into()], vec!["".into(), "22".into()]],
        );
        assert_eq!(t, "A    LONG\nxyz  1\n     22\n");
    }

    #[test]
    fn tables_align_cjk_columns() {
        let t = table(
            &["LABEL", "N"],
            &[
                vec!["第三关".into(), "1".into()],
                vec!["Level 3".into(), "2".into()],
            ],
        );
        assert_eq!(t, "LABEL    N\n第三关   1\nLevel 3  2\n");
    }
}
