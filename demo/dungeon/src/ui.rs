//! Drawing the game as lines of text: the same screen in a terminal and in a script's output.

use std::time::{Duration, SystemTime};

use crate::model::{Game, HEIGHT, Pos, Tile, WIDTH};

/// `1h02m03s`.
pub fn playtime(d: Duration) -> String {
    let s = d.as_secs();
    format!("{}h{:02}m{:02}s", s / 3600, s / 60 % 60, s % 60)
}

/// `1:05`: minutes and seconds, for a replay's clock.
pub fn clock(d: Duration) -> String {
    let s = d.as_secs();
    format!("{}:{:02}", s / 60, s % 60)
}

/// `2026-11-29 20:08` (UTC); `-` for a time jiff cannot represent.
pub fn time(t: SystemTime) -> String {
    match jiff::Timestamp::try_from(t) {
        Ok(t) => t.strftime("%Y-%m-%d %H:%M").to_string(),
        Err(_) => "-".into(),
    }
}

/// The map with everything on it; `overlay` cells (an editor's cursor, a room being dragged)
/// are drawn on top.
pub fn map(game: &Game, overlay: &[(Pos, char)]) -> Vec<String> {
    (0..HEIGHT)
        .map(|y| {
            (0..WIDTH)
                .map(|x| {
                    let pos = Pos::new(x, y);
                    if let Some((_, c)) = overlay.iter().rev().find(|(p, _)| *p == pos) {
                        return *c;
                    }
                    if game.player.pos == pos {
                        return '@';
                    }
                    if let Some(i) = game.level.monster_at(pos) {
                        return game.level.monsters[i].glyph();
                    }
                    if let Some(item) = game.level.layout.items.get(&pos) {
                        return item.glyph();
                    }
                    if game.level.tile(pos) == Tile::Wall {
                        '#'
                    } else {
                        '.'
                    }
                })
                .collect()
        })
        .collect()
}

/// A health bar: `[########----] 16/20`.
pub fn health(hp: u32, max: u32) -> String {
    let width = 12;
    let full = (hp as usize * width)
        .div_ceil(max.max(1) as usize)
        .min(width);
    format!(
        "[{}{}] {hp}/{max}",
        "#".repeat(full),
        "-".repeat(width - full)
    )
}

/// What the map's symbols are: the line under every map.
pub const LEGEND: &str = "@ you  r rat  g goblin  ! potion  $ gold  k key  # wall  . floor";

/// What the editor draws over the map.
pub const EDITOR_LEGEND: &str = "X cursor  + room being dragged";

/// A progress bar: `[####--------]`.
pub fn bar(done: u64, total: u64) -> String {
    let width = 12;
    let full = ((done.min(total) * width) / total.max(1)) as usize;
    format!(
        "[{}{}]",
        "#".repeat(full),
        "-".repeat(width as usize - full)
    )
}

/// The whole screen: title, map with a side panel (lines past the map's last row follow
/// it), the legend (with `legend` lines after the usual one), messages, status line.
pub fn screen(
    game: &Game,
    title: &str,
    overlay: &[(Pos, char)],
    side: &[String],
    legend: &[&str],
    status: &str,
) -> Vec<String> {
    let mut panel = vec![
        format!("HP {}", health(game.player.hp, game.player.max_hp)),
        format!("Level {}  Turn {}", game.level.number, game.clock.turn),
        "Inventory:".to_string(),
    ];
    if game.player.inventory.is_empty() {
        panel.push("  (empty)".into());
    }
    for (item, n) in &game.player.inventory {
        panel.push(format!("  {item} x{n}"));
    }
    panel.push(String::new());
    panel.extend(side.iter().cloned());
    let mut lines = vec![format!("== {title} ==")];
    let rows = map(game, overlay);
    let blank = " ".repeat(WIDTH as usize);
    for i in 0..rows.len().max(panel.len()) {
        let row = rows.get(i).unwrap_or(&blank);
        let right = panel.get(i).map(String::as_str).unwrap_or("");
        lines.push(format!("{row}  {right}").trim_end().to_string());
    }
    lines.push(LEGEND.into());
    lines.extend(legend.iter().map(|l| l.to_string()));
    for m in &game.messages {
        lines.push(format!("> {m}"));
    }
    lines.push(format!("[{status}]"));
    lines
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    #[test]
    fn times_are_shown_as_utc_dates_and_minutes() {
        let at = |secs: u64| time(UNIX_EPOCH + Duration::from_secs(secs));
        assert_eq!(at(0), "1970-01-01 00:00");
        assert_eq!(at(1_700_000_000), "2023-11-14 22:13");
        // A leap day, and the last minute before it ends.
        assert_eq!(at(1_709_251_199), "2024-02-29 23:59");
        assert_eq!(
            time(UNIX_EPOCH - Duration::from_secs(86_400)),
            "1969-12-31 00:00"
        );
    }

    #[test]
    fn playtime_counts_hours_minutes_and_seconds() {
        assert_eq!(playtime(Duration::from_secs(3_723)), "1h02m03s");
    }
}
