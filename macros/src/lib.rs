//! `embed_migrations!`, re-exported by `savegame`: embeds a folder of declarative migration
//! steps in the game's binary at build time.
//!
//! The macro lists the folder when it expands and includes each `*.json` file with
//! `include_str!`, so editing a step rebuilds the game. Adding or removing a file is noticed on
//! the next build that recompiles the calling crate (as with every macro that lists a folder);
//! the manager's chain check reports a step that is missing.

use proc_macro::{Delimiter, Group, Literal, Punct, Spacing, TokenStream, TokenTree};

/// Embeds every `NNNN_name.json` file of a folder (relative to the calling crate's
/// `Cargo.toml`) and parses them into `savegame::migrate::Migrations`. Use it through
/// `savegame::embed_migrations!`, whose documentation has a tested example:
///
/// ```text
/// let migrations: savegame::Result<savegame::Migrations> =
///     savegame::embed_migrations!("migrations");
/// ```
#[proc_macro]
pub fn embed_migrations(input: TokenStream) -> TokenStream {
    match expand(input) {
        Ok(tokens) => tokens,
        Err(message) => compile_error(&message),
    }
}

fn expand(input: TokenStream) -> Result<TokenStream, String> {
    let mut tokens = input.into_iter();
    let folder = match (tokens.next(), tokens.next()) {
        (Some(TokenTree::Literal(lit)), None) => string_literal(&lit)?,
        _ => return Err("embed_migrations! takes one string literal: the folder".into()),
    };
    let root = std::env::var("CARGO_MANIFEST_DIR")
        .map_err(|_| "embed_migrations!: CARGO_MANIFEST_DIR is not set".to_string())?;
    let dir = std::path::Path::new(&root).join(&folder);
    let mut files = Vec::new();
    let entries = std::fs::read_dir(&dir)
        .map_err(|e| format!("embed_migrations!: cannot read {}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("embed_migrations!: {e}"))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".json") {
            let path = entry.path();
            let path = path
                .to_str()
                .ok_or_else(|| format!("embed_migrations!: {name}: the path is not UTF-8"))?
                .to_owned();
            files.push((name, path));
        }
    }
    files.sort();

    // ::savegame::migrate::Migrations::embedded(&[("name", include_str!("path")), ...])
    let mut pairs = TokenStream::new();
    for (name, path) in files {
        let include: TokenStream = [
            TokenTree::Ident(proc_macro::Ident::new(
                "include_str",
                proc_macro::Span::call_site(),
            )),
            TokenTree::Punct(Punct::new('!', Spacing::Alone)),
            TokenTree::Group(Group::new(
                Delimiter::Parenthesis,
                TokenTree::Literal(Literal::string(&path)).into(),
            )),
        ]
        .into_iter()
        .collect();
        let mut pair = TokenStream::new();
        pair.extend([TokenTree::Literal(Literal::string(&name))]);
        pair.extend([TokenTree::Punct(Punct::new(',', Spacing::Alone))]);
        pair.extend(include);
        pairs.extend([
            TokenTree::Group(Group::new(Delimiter::Parenthesis, pair)),
            TokenTree::Punct(Punct::new(',', Spacing::Alone)),
        ]);
    }
    let call = format!("::savegame::migrate::Migrations::embedded(&[{}])", pairs);
    call.parse()
        .map_err(|e| format!("embed_migrations!: internal error: {e:?}"))
}

/// The value of a plain string literal (no escapes, no raw strings).
fn string_literal(lit: &Literal) -> Result<String, String> {
    let text = lit.to_string();
    let inner = text
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .ok_or("embed_migrations! takes a plain string literal")?;
    if inner.contains('\\') {
        return Err("embed_migrations!: write the folder without escapes".into());
    }
    Ok(inner.to_owned())
}

fn compile_error(message: &str) -> TokenStream {
    format!("::core::compile_error!({message:?})")
        .parse()
        .unwrap_or_default()
}
