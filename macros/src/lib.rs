//! The macros of `savegame`, which re-exports them: `embed_migrations!` embeds a folder of
//! declarative migration steps in the game's binary at build time; `#[derive(Originator)]`
//! and `#[derive(SaveState)]` write a game type's memento and its group's capture and restore.
//! Their documentation, with tested examples, is on the re-exports in `savegame`.
//!
//! # `embed_migrations!`
//!
//! The macro lists the folder when it expands and includes each `*.json` file with
//! `include_str!`, so editing a step rebuilds the game. Adding or removing a file is noticed on
//! the next build that recompiles the calling crate (as with every macro that lists a folder);
//! the manager's chain check reports a step that is missing.
//!
//! # The path to `savegame`
//!
//! The expansions call into `savegame` (`embed_migrations!` calls
//! `savegame::migrate::Migrations::embedded`), through the name the calling
//! crate gives `savegame` in its `Cargo.toml` (found with `proc-macro-crate`), so a renamed
//! dependency (`sg = { package = "savegame", … }`, or through `[workspace.dependencies]`) works.
//! Where the calling crate does not depend on `savegame` directly (a crate that reaches it
//! through an engine crate that re-exports it), or its `Cargo.toml` cannot be read (a build
//! without Cargo), the macro falls back to `::savegame`; name the path yourself with a second
//! argument: `embed_migrations!("migrations", crate = my_engine::savegame)`; for the derives,
//! `#[savegame(crate = "my_engine::savegame")]`.

mod attrs;
mod originator;
mod state;

use proc_macro::{Delimiter, Group, Literal, Punct, Spacing, TokenStream, TokenTree};
use proc_macro_crate::{FoundCrate, crate_name};

/// Embeds every `NNNN_name.json` file of a folder (relative to the calling crate's
/// `Cargo.toml`) and parses them into `savegame::migrate::Migrations`. Use it through
/// `savegame::embed_migrations!`, whose documentation has a tested example:
///
/// ```text
/// let migrations: savegame::Result<savegame::Migrations> =
///     savegame::embed_migrations!("migrations");
/// // Where `savegame` is not a direct dependency, say where it is:
/// let migrations = my_engine::savegame::embed_migrations!(
///     "migrations",
///     crate = my_engine::savegame
/// );
/// ```
#[proc_macro]
pub fn embed_migrations(input: TokenStream) -> TokenStream {
    match expand(input) {
        Ok(tokens) => tokens,
        Err(message) => compile_error(&message),
    }
}

/// Implements `savegame::Originator` for a struct, with a memento struct generated beside it.
/// Use it through `savegame::Originator`, whose documentation lists the attributes and has
/// tested examples.
#[proc_macro_derive(Originator, attributes(savegame, serde))]
pub fn derive_originator(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    originator::expand(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Implements `savegame::SaveState` for a struct of originators, one id per field. Use it
/// through `savegame::SaveState`, whose documentation lists the attributes and has tested
/// examples.
#[proc_macro_derive(SaveState, attributes(savegame))]
pub fn derive_save_state(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    state::expand(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

const USAGE: &str =
    "embed_migrations! takes the folder as a string literal, then optionally `crate = path`";

fn expand(input: TokenStream) -> Result<TokenStream, String> {
    let mut tokens = input.into_iter();
    let folder = match tokens.next() {
        Some(TokenTree::Literal(lit)) => string_literal(&lit)?,
        _ => return Err(USAGE.into()),
    };
    let krate = match tokens.next() {
        None => savegame_path(),
        Some(TokenTree::Punct(p)) if p.as_char() == ',' => crate_argument(tokens)?,
        Some(_) => return Err(USAGE.into()),
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

    // <savegame>::migrate::Migrations::embedded(&[("name", include_str!("path")), ...])
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
    let call = format!("{krate}::migrate::Migrations::embedded(&[{pairs}])");
    call.parse()
        .map_err(|e| format!("embed_migrations!: internal error: {e:?}"))
}

/// The path of `savegame` as the calling crate names it.
fn savegame_path() -> String {
    match crate_name("savegame") {
        Ok(FoundCrate::Name(name)) => format!("::{name}"),
        // `Itself`: a target of savegame's own package. Its tests, benches, examples and
        // doctests are crates of their own that link the library as `savegame`; the library
        // itself does not call the macro (it would need `extern crate self as savegame;`).
        // An error: `savegame` is not a direct dependency, or there is no `Cargo.toml` to read;
        // `::savegame` is the best guess, and `crate = path` the way out.
        Ok(FoundCrate::Itself) | Err(_) => "::savegame".to_owned(),
    }
}

/// The path after `crate =` (a trailing comma is allowed).
fn crate_argument(mut tokens: impl Iterator<Item = TokenTree>) -> Result<String, String> {
    match tokens.next() {
        // No second argument: a trailing comma after the folder.
        None => return Ok(savegame_path()),
        Some(TokenTree::Ident(id)) if id.to_string() == "crate" => {}
        Some(_) => return Err(USAGE.into()),
    }
    match tokens.next() {
        Some(TokenTree::Punct(p)) if p.as_char() == '=' => {}
        _ => return Err(USAGE.into()),
    }
    let mut path: Vec<TokenTree> = tokens.collect();
    if matches!(path.last(), Some(TokenTree::Punct(p)) if p.as_char() == ',') {
        path.pop();
    }
    if path.is_empty() {
        return Err("embed_migrations!: `crate =` needs the path to savegame".into());
    }
    Ok(path.into_iter().collect::<TokenStream>().to_string())
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
