//! The module tree has no import circles, and its leaves import only what they may.
//!
//! A reading of `src/`: every `use` tree (with nested braces, `crate::`, `self::` and any
//! number of `super::`) and every path written inline in code (`crate::format::parse_header`)
//! is an arrow from the file to the module it names. A file is a module (`src/a/b.rs` and
//! `src/a/b/mod.rs` are `a::b`); `lib.rs`, which re-exports everything, is left out, and so are
//! the unit tests at the end of a file (`#[cfg(test)] mod tests`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Graph = BTreeMap<String, BTreeSet<String>>;

/// Every module of the core's `src/` and its source, without comments and unit tests.
fn modules() -> BTreeMap<String, (bool, String)> {
    modules_in(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

/// Every module of the crate whose sources are in `src` (a folder of the workspace), and its
/// source, without comments and unit tests.
fn modules_in(src: &Path) -> BTreeMap<String, (bool, String)> {
    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(src, &mut files);
    let mut mods = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(src).unwrap().with_extension("");
        let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into()).collect();
        let is_dir_mod = parts.last().is_some_and(|p| p == "mod");
        if is_dir_mod {
            parts.pop();
        }
        if parts == ["lib"] || parts == ["main"] {
            continue;
        }
        let mut text = std::fs::read_to_string(&file).unwrap();
        if let Some(at) = text.find("#[cfg(test)]\nmod tests") {
            text.truncate(at);
        }
        let code: String = without_strings(&text)
            .lines()
            .map(|l| l.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n");
        mods.insert(parts.join("::"), (is_dir_mod, code));
    }
    mods
}

/// `code` with the contents of its string literals (plain and raw) and char literals blanked,
/// so that a message that says "use --key-file" or a `"//"` reads as no code.
fn without_strings(code: &str) -> String {
    let bytes = code.as_bytes();
    let mut out = String::with_capacity(code.len());
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        // A raw string: r"..." or r#"..."# (any number of #).
        if c == b'r' && (i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_'))
        {
            let hashes = bytes[i + 1..].iter().take_while(|b| **b == b'#').count();
            if bytes.get(i + 1 + hashes) == Some(&b'"') {
                let close: String = std::iter::once('"')
                    .chain("#".repeat(hashes).chars())
                    .collect();
                let body = i + 2 + hashes;
                let end = code[body..]
                    .find(&close)
                    .map_or(code.len(), |e| body + e + close.len());
                out.push_str("\"\"");
                i = end;
                continue;
            }
        }
        if c == b'"' {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j] != b'"' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            out.push_str("\"\"");
            // Keep the line breaks, so that `//` comments after a string end where they did.
            out.extend(code[i..j.min(code.len())].chars().filter(|c| *c == '\n'));
            i = j + 1;
            continue;
        }
        // A char literal holding a quote or a backslash: '"', '\'', '\\'.
        if c == b'\'' && matches!(bytes.get(i + 1), Some(b'"')) && bytes.get(i + 2) == Some(&b'\'')
        {
            out.push_str("' '");
            i += 3;
            continue;
        }
        if c == b'\'' && bytes.get(i + 1) == Some(&b'\\') {
            let end = code[i + 2..].find('\'').map_or(code.len(), |e| i + 3 + e);
            out.push_str("' '");
            i = end;
            continue;
        }
        let ch = code[i..].chars().next().unwrap_or(' ');
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

/// The paths a `use` tree names: `a::{b, c::{d}}` is `a::b` and `a::c::d`.
fn expand(prefix: &str, tree: &str, out: &mut Vec<String>) {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let path = tree.split(" as ").next().unwrap_or("").trim();
        out.push(format!("{prefix}{path}"));
        return;
    };
    let head = &tree[..open];
    let body = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let (mut depth, mut start) = (0, 0);
    for (i, ch) in body.char_indices() {
        match ch {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                expand(&format!("{prefix}{head}"), &body[start..i], out);
                start = i + 1;
            }
            _ => {}
        }
    }
    if !body[start..].trim().is_empty() {
        expand(&format!("{prefix}{head}"), &body[start..], out);
    }
}

/// Every `crate::`, `self::` or `super::` path in `code`: in `use` trees and inline.
fn paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    // `use` statements, whole trees.
    while let Some(at) = rest.find("use ") {
        let before = rest[..at].chars().last();
        rest = &rest[at + 4..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let end = rest.find(';').unwrap_or(rest.len());
        let tree: String = rest[..end].split_whitespace().collect::<Vec<_>>().join(" ");
        expand("", &tree, &mut out);
        rest = &rest[end..];
    }
    // Inline paths.
    let bytes = code.as_bytes();
    for root in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(found) = code[from..].find(root) {
            let at = from + found;
            from = at + root.len();
            if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
                continue;
            }
            let len = code[at..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(code.len() - at);
            out.push(code[at..at + len].trim_end_matches(':').to_owned());
        }
    }
    out
}

/// The module arrows of the core's `src/`.
fn graph() -> Graph {
    graph_of(modules())
}

/// The module arrows among `mods`.
fn graph_of(mods: BTreeMap<String, (bool, String)>) -> Graph {
    let mut graph = Graph::new();
    for (module, (is_dir_mod, code)) in &mods {
        let own: Vec<&str> = module.split("::").collect();
        let mut arrows = BTreeSet::new();
        for path in paths(code) {
            let mut segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
            let mut base: Vec<&str> = match segs.first() {
                Some(&"crate") => Vec::new(),
                // The module's own items, as `self::` and `super::` see them.
                Some(&"self" | &"super") if *is_dir_mod => own.clone(),
                Some(&"self" | &"super") => own[..own.len() - 1].to_vec(),
                _ => continue,
            };
            if segs[0] == "self" && !*is_dir_mod {
                base = own.clone();
            }
            if segs[0] == "super" && *is_dir_mod {
                base.pop();
            }
            segs.remove(0);
            while segs.first() == Some(&"super") {
                base.pop();
                segs.remove(0);
            }
            let full: Vec<&str> = base.into_iter().chain(segs).collect();
            let target = (1..=full.len())
                .rev()
                .map(|n| full[..n].join("::"))
                .find(|m| mods.contains_key(m));
            if let Some(target) = target
                && target != *module
            {
                arrows.insert(target);
            }
        }
        graph.insert(module.clone(), arrows);
    }
    graph
}

/// The groups of modules that reach each other (Tarjan's strongly connected components).
fn circles(graph: &Graph) -> Vec<Vec<String>> {
    struct State<'a> {
        graph: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        for w in &s.graph[v] {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.stack.contains(&w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut group = Vec::new();
            while let Some(w) = s.stack.pop() {
                group.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            if group.len() > 1 {
                group.sort();
                s.out.push(group);
            }
        }
    }
    let mut state = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !state.index.contains_key(v.as_str()) {
            visit(&mut state, v);
        }
    }
    state.out
}

#[test]
fn no_module_imports_a_module_that_imports_it_back() {
    let graph = graph();
    assert!(
        graph.len() > 40,
        "{} modules: the reading found too few",
        graph.len()
    );
    assert!(graph["manager::engine"].contains("manager::journal"));
    assert!(graph["manager::engine"].contains("format"));
    assert_eq!(circles(&graph), Vec::<Vec<String>>::new(), "import circles");
}

#[test]
fn the_reading_finds_a_circle_where_there_is_one() {
    let mut graph = graph();
    // A made-up arrow back from the leaf of the format to the replay module, which reaches
    // it through the replay chunks, closes a circle.
    assert!(graph["replay::source"].contains("format::replay"));
    graph
        .get_mut("format::frame")
        .unwrap()
        .insert("replay::source".into());
    assert!(!circles(&graph).is_empty());
}

#[test]
fn the_leaves_import_only_what_they_may() {
    let graph = graph();
    let may = |module: &str, allowed: &[&str]| {
        let outside: Vec<&String> = graph[module]
            .iter()
            .filter(|t| {
                !allowed
                    .iter()
                    .any(|a| t == a || t.starts_with(&format!("{a}::")))
            })
            .collect();
        assert!(outside.is_empty(), "{module} imports {outside:?}");
    };
    may("slot", &[]);
    may("protection", &[]);
    may("threads", &[]);
    may("error", &["slot", "migrate::error", "protection"]);
    may("compression", &["error"]);
    may("storage", &["slot", "storage", "error"]);
    // The schema guard's shapes, files and diff know nothing of saves; its list of memento
    // types (in `state`) reaches only its tracer.
    may("schema::shape", &[]);
    may("schema::file", &["schema::shape", "migrate"]);
    may("schema::diff", &["schema::shape", "codec"]);
    may(
        "state::types",
        &["error", "originator", "snapshot", "schema::trace"],
    );
    // What the format's parts may import.
    const FORMAT_MAY: [&str; 8] = [
        "format",
        "error",
        "codec",
        "compression",
        "crypto",
        "slot",
        "protection",
        "threads",
    ];
    for part in [
        "format",
        "format::frame",
        "format::frame::crc",
        "format::frame::document",
        "format::frame::header",
        "format::frame::open",
        "format::frame::seal",
        "format::frame::toc",
        "format::metadata",
        "format::bytes",
        "format::replay",
        "format::replay::chunk",
        "format::replay::frames",
        "format::replay::meta",
    ] {
        may(part, &FORMAT_MAY);
    }
    // The streamed writer hands its pieces to the storage's sink (`storage::StreamSink`, a
    // leaf): what the format's other parts may import, and that.
    may(
        "format::frame::stream",
        &[&FORMAT_MAY[..], &["storage"]].concat(),
    );
}

/// The workspace's members, as the root manifest lists them (`"."` is the core, read above).
fn members() -> Vec<String> {
    let manifest =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).unwrap();
    let line = manifest
        .lines()
        .find(|l| l.starts_with("members = ["))
        .expect("the root manifest lists the workspace's members on one line");
    line.split('"')
        .skip(1)
        .step_by(2)
        .filter(|m| *m != ".")
        .map(str::to_owned)
        .collect()
}

/// Every other crate of the workspace: none has an import circle either (issue 28). The CLI's
/// commands and the Bevy plugin's events, plugin and world had one each. The list is the
/// manifest's, so a crate added to the workspace is read without a change here.
#[test]
fn no_crate_of_the_workspace_has_an_import_circle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let members = members();
    for krate in [
        "cli",
        "bevy",
        "web",
        "web/demo",
        "cloud",
        "demo/dungeon",
        "testkit",
    ] {
        assert!(
            members.iter().any(|m| m == krate),
            "{krate} is not a member"
        );
    }
    for krate in &members {
        let src = root.join(krate).join("src");
        assert!(src.is_dir(), "{krate} has no src folder");
        let graph = graph_of(modules_in(&src));
        assert_eq!(
            circles(&graph),
            Vec::<Vec<String>>::new(),
            "import circles in {krate}/src"
        );
    }
}

#[test]
fn the_reading_finds_the_cli_commands_and_their_arrows() {
    let graph = graph_of(modules_in(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("cli/src"),
    ));
    assert!(graph.contains_key("commands::inspect"), "{graph:?}");
    assert!(graph["commands::inspect"].contains("commands::replay"));
    assert!(graph["commands::inspect"].contains("commands"));
}
