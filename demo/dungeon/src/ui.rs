//! Drawing the game as lines of text: the same screen in a terminal and in a script's output.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::model::{Game, HEIGHT, Pos, Tile, WIDTH};

/// `1h02m03s`.
pub fn playtime(d: Duration) -> String {
    let s = d.as_secs();
    format!("{}h{:02}m{:02}s", s / 3600, s / 60 % 60, s % 60)
}

/// `2026-11-29 20:08` (UTC), without a date crate: days since 1970 to a civil date.
pub fn time(t: SystemTime) -> String {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}",
        rem / 3600,
        rem / 60 % 60
    )
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

/// The whole screen: title, map with a side panel, messages, status line.
pub fn screen(
    game: &Game,
    title: &str,
    overlay: &[(Pos, char)],
    side: &[String],
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
    for (i, row) in map(game, overlay).into_iter().enumerate() {
        let right = panel.get(i).map(String::as_str).unwrap_or("");
        lines.push(format!("{row}  {right}"));
    }
    for m in &game.messages {
        lines.push(format!("> {m}"));
    }
    lines.push(format!("[{status}]"));
    lines
}
