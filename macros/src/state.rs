//! `#[derive(SaveState)]`.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{Data, DeriveInput, Fields, LitStr};

use crate::attrs;

pub fn expand(input: &DeriveInput) -> syn::Result<TokenStream> {
    let c = attrs::container(&input.attrs)?;
    let krate = attrs::krate(&c);
    let data = match &input.data {
        Data::Struct(s) => s,
        Data::Enum(e) => {
            return Err(syn::Error::new_spanned(
                e.enum_token,
                "#[derive(SaveState)] needs a struct with named fields, one per originator",
            ));
        }
        Data::Union(u) => {
            return Err(syn::Error::new_spanned(
                u.union_token,
                "#[derive(SaveState)] needs a struct with named fields, one per originator",
            ));
        }
    };
    let Fields::Named(named) = &data.fields else {
        return Err(syn::Error::new_spanned(
            &input.ident,
            "#[derive(SaveState)] needs named fields: their names are the originators' ids",
        ));
    };

    let mut capture = Vec::new();
    let mut decode = Vec::new();
    let mut restore = Vec::new();
    let mut required = Vec::new();
    let mut claimed = Vec::new();
    let mut flattened = Vec::new();
    let mut reset = Vec::new();
    let mut members = Vec::new();
    let mut types = Vec::new();
    let mut seen: Vec<(String, proc_macro2::Span)> = Vec::new();
    for (i, f) in named.named.iter().enumerate() {
        let a = attrs::field(&f.attrs)?;
        let Some(name) = &f.ident else { continue };
        if a.skip {
            if a.reset.is_some() {
                reset.push(quote!(self.#name = ::core::default::Default::default();));
            }
            continue;
        }
        if a.flatten.is_some() {
            if let Some(id) = &a.id {
                return Err(syn::Error::new_spanned(
                    id,
                    "a flattened field has no id of its own: its members keep theirs",
                ));
            }
            capture.push(quote!(#krate::SaveState::capture_state(&self.#name, snapshot)?;));
            members.push(quote!(
                if !#krate::SaveState::members(&self.#name, members)? {
                    return ::core::result::Result::Ok(false);
                }
            ));
            types.push(quote!(
                if !#krate::SaveState::memento_types(&self.#name, types)? {
                    return ::core::result::Result::Ok(false);
                }
            ));
            restore.push(quote!(
                report.merge(#krate::SaveState::restore_state(&mut self.#name, snapshot)?);
            ));
            flattened.push(quote!(#krate::SaveState::claims(&self.#name, id)));
            continue;
        }
        let id =
            a.id.clone()
                .unwrap_or_else(|| LitStr::new(&name.to_string(), name.span()));
        let value = id.value();
        if value.is_empty() {
            return Err(syn::Error::new_spanned(&id, "an id must not be empty"));
        }
        if let Some((_, _)) = seen.iter().find(|(s, _)| *s == value) {
            return Err(syn::Error::new_spanned(
                &id,
                format!("two fields have the id {value:?}"),
            ));
        }
        seen.push((value, id.span()));
        let tmp = format_ident!("__savegame_{}", i);
        capture.push(quote!(snapshot.capture(#id, &self.#name)?;));
        members.push(quote!(members.originator(#id, &self.#name)?;));
        types.push(quote!(types.originator(#id, &self.#name)?;));
        claimed.push(id.clone());
        if a.optional {
            decode.push(quote!(
                let #tmp = if snapshot.contains(#id) {
                    ::core::option::Option::Some(
                        snapshot.memento_for(#id, &self.#name)?,
                    )
                } else {
                    report.__not_in_save(#id);
                    ::core::option::Option::None
                };
            ));
            restore.push(quote!(
                if let ::core::option::Option::Some(m) = #tmp {
                    #krate::Originator::restore_memento(&mut self.#name, m)?;
                    report.__restored(1);
                }
            ));
        } else {
            required.push(id.clone());
            decode.push(quote!(
                let #tmp = snapshot.memento_for(#id, &self.#name)?;
            ));
            restore.push(quote!(
                #krate::Originator::restore_memento(&mut self.#name, #tmp)?;
                report.__restored(1);
            ));
        }
    }
    let describe = c.describe.as_ref().map(|path| {
        quote!(
            fn describe(&self, metadata: &mut #krate::Metadata) {
                #path(self, metadata)
            }
        )
    });
    let ident = &input.ident;
    let (impl_g, ty_g, where_c) = input.generics.split_for_impl();
    let mut where_c = where_c.cloned();
    if let Some(bound) = &c.bound {
        let w = where_c.get_or_insert_with(|| syn::parse_quote!(where));
        w.predicates.extend(bound.iter().cloned());
    }
    let claims = if claimed.is_empty() && flattened.is_empty() {
        quote!(false)
    } else {
        let ids = if claimed.is_empty() {
            quote!(false)
        } else {
            quote!(::core::matches!(id, #(#claimed)|*))
        };
        quote!(#ids #(|| #flattened)*)
    };
    Ok(quote! {
        #[automatically_derived]
        impl #impl_g #krate::SaveState for #ident #ty_g #where_c {
            fn capture_state(&self, snapshot: &mut #krate::Snapshot) -> #krate::Result<()> {
                #(#capture)*
                ::core::result::Result::Ok(())
            }

            fn members<'__savegame_s>(
                &'__savegame_s self,
                members: &mut #krate::Members<'__savegame_s>,
            ) -> #krate::Result<bool> {
                let _ = &members;
                #(#members)*
                ::core::result::Result::Ok(true)
            }

            fn memento_types(
                &self,
                types: &mut #krate::MementoTypes,
            ) -> #krate::Result<bool> {
                let _ = &types;
                #(#types)*
                ::core::result::Result::Ok(true)
            }

            fn restore_state(
                &mut self,
                snapshot: &#krate::Snapshot,
            ) -> #krate::Result<#krate::RestoreReport> {
                let mut report = #krate::RestoreReport::default();
                #krate::RestoreReport::__require(snapshot, &[#(#required),*])?;
                #(#decode)*
                #(#restore)*
                #(#reset)*
                report.__finish(snapshot, |id| #krate::SaveState::claims(self, id));
                ::core::result::Result::Ok(report)
            }

            fn claims(&self, id: &str) -> bool {
                #claims
            }

            #describe
        }
    })
}
