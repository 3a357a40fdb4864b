//! Every source file of the workspace holds one concept, and so stays short: none is over
//! 800 lines (`tests/`, `benches/` and `fuzz/` aside; a unit-test module counts, so a long one
//! lives in a file of its own, `a/tests.rs` beside `a.rs`).

use std::path::{Path, PathBuf};

/// The longest a source file may be.
const MAX_LINES: usize = 800;

/// Every `.rs` file under `dir`, skipping build output and the folders the rule leaves aside.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            let skipped = ["target", "tests", "benches", "fuzz", "node_modules"];
            if !name.starts_with('.') && !skipped.contains(&name.as_str()) {
                sources(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_source_file_of_the_workspace_is_over_800_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(root, &mut files);
    // The crates of the workspace are all in it: a walk that found none of them checked nothing.
    for krate in [
        "src",
        "cli/src",
        "bevy/src",
        "web/src",
        "cloud/src",
        "macros/src",
    ] {
        assert!(
            files.iter().any(|f| f.starts_with(root.join(krate))),
            "no source file found under {krate}"
        );
    }
    let mut long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let lines = std::fs::read_to_string(f).unwrap().lines().count();
            let rel = f.strip_prefix(root).unwrap().display().to_string();
            (lines > MAX_LINES).then(|| format!("{rel}: {lines} lines"))
        })
        .collect();
    long.sort();
    assert!(
        long.is_empty(),
        "over {MAX_LINES} lines; split by concept:\n{}",
        long.join("\n")
    );
}

/// The README is a front page (issue 28): what the crate is, the two commands, the quick start,
/// what is where, the guarantees and links. Every chapter lives in `docs/guide/`.
#[test]
fn the_readme_is_a_front_page_of_at_most_200_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 200,
        "README.md has {lines} lines; move chapters to docs/guide/"
    );
    for chapter in std::fs::read_dir(root.join("docs/guide")).unwrap() {
        let name = chapter.unwrap().file_name().to_string_lossy().into_owned();
        if name != "README.md" {
            assert!(
                readme.contains(&format!("docs/guide/{name}")),
                "the README's table does not link docs/guide/{name}"
            );
        }
    }
}
