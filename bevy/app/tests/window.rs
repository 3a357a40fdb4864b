//! The example game as a real Bevy app (`DefaultPlugins`, a window, 2D rendering) opens its
//! window under Xvfb, saves (in full, then incrementally), loads its save back, writes a
//! screenshot and exits. Rendering is on the CPU where there is no GPU (Mesa's lavapipe).
//! scripts/test.sh installs Xvfb and Mesa's Vulkan drivers, and runs this test.

use std::process::{Command, Stdio};

#[test]
fn the_example_runs_as_a_real_app_in_a_window_saves_loads_and_exits() {
    let dir = tempfile::tempdir().unwrap();
    let screenshot = dir.path().join("screenshot.png");
    let saves = dir.path().join("saves");
    // xvfb-run starts a virtual X server for the one command, on a free display.
    let output = Command::new("xvfb-run")
        .args(["-a", "-s", "-screen 0 1024x768x24"])
        .arg(env!("CARGO_BIN_EXE_savegame-bevy-app"))
        .env("SAVEGAME_APP_DIR", &saves)
        .env("SAVEGAME_SCREENSHOT", &screenshot)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("xvfb-run (Debian's xvfb) must be installed: scripts/test.sh installs it");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the app failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    let lines: Vec<&str> = stdout.lines().collect();
    let position = |prefix: &str| {
        lines
            .iter()
            .position(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no line {prefix:?} in:\n{stdout}\n{stderr}"))
    };
    let full = position("saved 1 (full");
    let delta = position("saved 1 (delta");
    let loaded = position("loaded 1 ");
    let shot = position("screenshot written");
    assert!(full < delta && delta < loaded && loaded < shot, "{stdout}");
    assert!(!stdout.contains("failed"), "{stdout}");
    // The load took the world back to the turn of the incremental save.
    let turns = lines[position("turn ")];
    let numbers: Vec<&str> = turns
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .collect();
    assert_eq!(numbers.len(), 2, "{turns}");
    assert_eq!(numbers[0], numbers[1], "{turns}");
    // A whole PNG of the window, which the renderer drew.
    let png = std::fs::read(&screenshot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 1_000,
        "{} bytes",
        png.len()
    );
    if let Some(keep) = std::env::var_os("SAVEGAME_KEEP_SCREENSHOT") {
        std::fs::copy(&screenshot, keep).unwrap();
    }
}
