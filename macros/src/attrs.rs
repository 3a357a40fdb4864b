//! The `#[savegame(...)]` attributes of both derives. `Originator` and `SaveState` share the
//! attribute, since a game type may derive both: each derive reads every key, uses its own and
//! leaves the other's alone. A key neither knows is an error.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::{Attribute, Ident, LitStr, Path, Token, WherePredicate, punctuated::Punctuated};

/// The keys on the type.
#[derive(Default)]
pub struct Container {
    /// `memento = "Name"`.
    pub memento: Option<Ident>,
    /// `self_memento`.
    pub self_memento: Option<Span>,
    /// `validate = "path"`.
    pub validate: Option<Path>,
    /// `derive(Debug, Clone, ...)`: added to the memento.
    pub derives: Vec<Path>,
    /// `serde(...)`: container attributes for the memento.
    pub serde: Vec<TokenStream>,
    /// `bound = "T: Trait, ..."`: replaces the generated bounds.
    pub bound: Option<Vec<WherePredicate>>,
    /// `crate = "path"`: where `savegame` is.
    pub krate: Option<Path>,
    /// `describe = "path"`: the `SaveState`'s metadata.
    pub describe: Option<Path>,
    /// `version = N`: the memento's version (`Originator::memento_version`).
    pub version: Option<syn::LitInt>,
}

/// The keys on a field.
#[derive(Default)]
pub struct FieldAttrs {
    /// `skip`.
    pub skip: bool,
    /// `reset` (with `skip`).
    pub reset: Option<Span>,
    /// `originator`: the field is an originator; its memento goes in the memento.
    pub originator: Option<Span>,
    /// `id = "..."` (SaveState).
    pub id: Option<LitStr>,
    /// `optional` (SaveState).
    pub optional: bool,
    /// `flatten` (SaveState): the field is itself a `SaveState`.
    pub flatten: Option<Span>,
}

fn savegame_attrs(attrs: &[Attribute]) -> impl Iterator<Item = &Attribute> {
    attrs.iter().filter(|a| a.path().is_ident("savegame"))
}

/// A string literal value, parsed as `T`.
fn parse_lit<T: syn::parse::Parse>(meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<T> {
    let lit: LitStr = meta.value()?.parse()?;
    lit.parse()
}

pub fn container(attrs: &[Attribute]) -> syn::Result<Container> {
    let mut c = Container::default();
    for attr in savegame_attrs(attrs) {
        attr.parse_nested_meta(|meta| {
            let p = &meta.path;
            if p.is_ident("memento") {
                c.memento = Some(parse_lit(&meta)?);
            } else if p.is_ident("self_memento") {
                c.self_memento = Some(p.segments[0].ident.span());
            } else if p.is_ident("validate") {
                c.validate = Some(parse_lit(&meta)?);
            } else if p.is_ident("derive") {
                meta.parse_nested_meta(|inner| {
                    c.derives.push(inner.path);
                    Ok(())
                })?;
            } else if p.is_ident("serde") {
                let content;
                syn::parenthesized!(content in meta.input);
                c.serde.push(content.parse()?);
            } else if p.is_ident("bound") {
                let lit: LitStr = meta.value()?.parse()?;
                let preds =
                    lit.parse_with(Punctuated::<WherePredicate, Token![,]>::parse_terminated)?;
                c.bound = Some(preds.into_iter().collect());
            } else if p.is_ident("crate") {
                c.krate = Some(parse_lit(&meta)?);
            } else if p.is_ident("describe") {
                c.describe = Some(parse_lit(&meta)?);
            } else if p.is_ident("version") {
                let version: syn::LitInt = meta.value()?.parse()?;
                match version.base10_parse::<u32>() {
                    Ok(0) | Err(_) => {
                        return Err(syn::Error::new_spanned(
                            &version,
                            "a memento version is a u32 from 1",
                        ));
                    }
                    Ok(_) => c.version = Some(version),
                }
            } else if FIELD_KEYS.iter().any(|k| p.is_ident(k)) {
                return Err(meta.error(format!(
                    "`{}` goes on a field, not on the type",
                    p.to_token_stream()
                )));
            } else {
                return Err(meta.error(format!(
                    "unknown savegame attribute `{}`; on a type: memento, self_memento, \
                     version, validate, derive, serde, bound, crate, describe",
                    p.to_token_stream()
                )));
            }
            Ok(())
        })?;
    }
    Ok(c)
}

const FIELD_KEYS: [&str; 6] = ["skip", "reset", "originator", "id", "optional", "flatten"];

pub fn field(attrs: &[Attribute]) -> syn::Result<FieldAttrs> {
    let mut f = FieldAttrs::default();
    for attr in savegame_attrs(attrs) {
        attr.parse_nested_meta(|meta| {
            let p = &meta.path;
            let span = p.segments[0].ident.span();
            if p.is_ident("skip") {
                f.skip = true;
            } else if p.is_ident("reset") {
                f.reset = Some(span);
            } else if p.is_ident("originator") {
                f.originator = Some(span);
            } else if p.is_ident("id") {
                f.id = Some(meta.value()?.parse()?);
            } else if p.is_ident("optional") {
                f.optional = true;
            } else if p.is_ident("flatten") {
                f.flatten = Some(span);
            } else {
                return Err(meta.error(format!(
                    "unknown savegame attribute `{}`; on a field: skip, reset, originator, id, \
                     optional, flatten",
                    p.to_token_stream()
                )));
            }
            Ok(())
        })?;
    }
    if let Some(span) = f.reset
        && !f.skip
    {
        return Err(syn::Error::new(
            span,
            "`reset` applies to fields that are not saved: write #[savegame(skip, reset)]",
        ));
    }
    Ok(f)
}

/// The path of `savegame`: `crate = "..."`, or the name the calling crate's `Cargo.toml`
/// gives it.
pub fn krate(c: &Container) -> TokenStream {
    match &c.krate {
        Some(path) => path.to_token_stream(),
        None => crate::savegame_path()
            .parse()
            .unwrap_or_else(|_| quote::quote!(::savegame)),
    }
}
