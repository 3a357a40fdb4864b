//! `#[derive(Originator)]`.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use quote::{format_ident, quote};
use syn::{Data, DeriveInput, Fields, Ident, Index, Member, Type, WherePredicate};

use crate::attrs::{self, Container, FieldAttrs};

/// One field of the type.
struct Field<'a> {
    /// How the type names it (`self.hp`, `self.0`).
    member: Member,
    /// How the memento names it.
    memento_member: Member,
    ty: &'a Type,
    attrs: FieldAttrs,
    /// Its doc comments and serde attributes, carried over to the memento.
    carried: Vec<&'a syn::Attribute>,
    has_doc: bool,
    name: String,
}

pub fn expand(input: &DeriveInput) -> syn::Result<TokenStream> {
    let c = attrs::container(&input.attrs)?;
    let krate = attrs::krate(&c);
    if let Some(lt) = input.generics.lifetimes().next() {
        return Err(syn::Error::new_spanned(
            lt,
            "#[derive(Originator)] needs a type without lifetime parameters: a memento owns its \
             data (keep ids, not references)",
        ));
    }
    if c.self_memento.is_some() {
        return self_memento(input, &c, &krate);
    }
    let data = match &input.data {
        Data::Struct(s) => s,
        Data::Enum(e) => {
            return Err(syn::Error::new_spanned(
                e.enum_token,
                "#[derive(Originator)] on an enum: add #[savegame(self_memento)] (the enum, \
                 Clone + Serialize + Deserialize, is its own memento), or write the impl by hand",
            ));
        }
        Data::Union(u) => {
            return Err(syn::Error::new_spanned(
                u.union_token,
                "#[derive(Originator)] does not support unions",
            ));
        }
    };
    if let Fields::Unit = data.fields {
        return Err(syn::Error::new_spanned(
            &input.ident,
            "#[derive(Originator)] on a unit struct: it has no state to save; add \
             #[savegame(self_memento)] if it must be an originator",
        ));
    }
    let tuple = matches!(data.fields, Fields::Unnamed(_));
    let mut fields = Vec::new();
    let mut saved_index = 0usize;
    for (i, f) in data.fields.iter().enumerate() {
        let a = attrs::field(&f.attrs)?;
        if let (Some(span), true) = (a.originator, a.skip) {
            return Err(syn::Error::new(
                span,
                "a field is either saved as an originator or skipped, not both",
            ));
        }
        let member = match &f.ident {
            Some(id) => Member::Named(id.clone()),
            None => Member::Unnamed(Index::from(i)),
        };
        let memento_member = match &f.ident {
            Some(id) => Member::Named(id.clone()),
            None => Member::Unnamed(Index::from(saved_index)),
        };
        if !a.skip {
            saved_index += 1;
        }
        let carried: Vec<_> = f
            .attrs
            .iter()
            .filter(|at| at.path().is_ident("doc") || at.path().is_ident("serde"))
            .collect();
        let has_doc = f.attrs.iter().any(|at| at.path().is_ident("doc"));
        let name = f
            .ident
            .as_ref()
            .map_or_else(|| i.to_string(), ToString::to_string);
        fields.push(Field {
            member,
            memento_member,
            ty: &f.ty,
            attrs: a,
            carried,
            has_doc,
            name,
        });
    }

    let ident = &input.ident;
    let vis = &input.vis;
    let memento = c
        .memento
        .clone()
        .unwrap_or_else(|| format_ident!("{}Memento", ident));
    let serde = quote!(#krate::__private::serde);
    let serde_path = serde.to_string();
    let saved: Vec<&Field> = fields.iter().filter(|f| !f.attrs.skip).collect();
    let generic = input.generics.type_params().next().is_some();

    // The memento's field types: a copy of the field, or the memento of an originator field.
    let memento_ty = |f: &Field| -> TokenStream {
        let ty = f.ty;
        if f.attrs.originator.is_some() {
            quote!(<#ty as #krate::Originator>::Memento)
        } else {
            quote!(#ty)
        }
    };

    // Type parameters no saved field mentions (a skipped field's, say) need a PhantomData.
    let unused: Vec<&Ident> = input
        .generics
        .type_params()
        .map(|p| &p.ident)
        .filter(|p| !saved.iter().any(|f| mentions(f.ty.to_token_stream(), p)))
        .collect();

    let mut memento_fields = Vec::new();
    for f in &saved {
        let carried = &f.carried;
        let ty = memento_ty(f);
        let doc = if f.has_doc {
            quote!()
        } else {
            let text = format!(" The saved `{}` of `{}`.", f.name, ident);
            quote!(#[doc = #text])
        };
        let name = match &f.memento_member {
            Member::Named(id) => quote!(#id:),
            Member::Unnamed(_) => quote!(),
        };
        memento_fields.push(quote!(#(#carried)* #doc #vis #name #ty));
    }
    let phantom = if unused.is_empty() {
        None
    } else {
        let ty = quote!(::core::marker::PhantomData<fn() -> (#(#unused,)*)>);
        let name = if tuple {
            quote!()
        } else {
            quote!(__savegame_phantom:)
        };
        Some((
            quote!(#[serde(skip)] #[doc(hidden)] #vis #name #ty),
            if tuple {
                Member::Unnamed(Index::from(saved.len()))
            } else {
                Member::Named(format_ident!("__savegame_phantom"))
            },
        ))
    };
    let phantom_field = phantom.as_ref().map(|(f, _)| f);
    let phantom_init = phantom
        .as_ref()
        .map(|(_, m)| quote!(#m: ::core::marker::PhantomData,));

    // The memento's generics: the type's (bounds and all); a projection through an originator
    // field needs that field's type to be an originator.
    let mut memento_generics = input.generics.clone();
    if generic {
        let preds = memento_generics.make_where_clause();
        for f in saved.iter().filter(|f| f.attrs.originator.is_some()) {
            let ty = f.ty;
            preds
                .predicates
                .push(syn::parse_quote!(#ty: #krate::Originator));
        }
    }
    let (_, _, m_where) = memento_generics.split_for_impl();
    let serde_bound = if generic {
        let ser: Vec<String> = saved
            .iter()
            .map(|f| format!("{}: {serde_path}::Serialize", memento_ty(f)))
            .collect();
        let de: Vec<String> = saved
            .iter()
            .map(|f| format!("{}: {serde_path}::de::DeserializeOwned", memento_ty(f)))
            .collect();
        let (ser, de) = (ser.join(", "), de.join(", "));
        quote!(#[serde(bound(serialize = #ser, deserialize = #de))])
    } else {
        quote!()
    };
    let derives = &c.derives;
    let container_serde = c.serde.iter().map(|t| quote!(#[serde(#t)]));
    let struct_doc = format!(
        " The memento of `{ident}`: a copy of its saved fields, generated by \
         `#[derive(Originator)]`."
    );
    let params = &memento_generics.params;
    let lt = (!params.is_empty()).then(|| quote!(<#params>));
    let body = if tuple {
        quote!((#(#memento_fields,)* #phantom_field) #m_where;)
    } else {
        quote!(#m_where { #(#memento_fields,)* #phantom_field })
    };
    let memento_struct = quote! {
        #[doc = #struct_doc]
        #[derive(#serde::Serialize, #serde::Deserialize, #(#derives),*)]
        #[serde(crate = #serde_path)]
        #serde_bound
        #(#container_serde)*
        #vis struct #memento #lt #body
    };

    // The impl's bounds: `bound = "..."`, or what the saved fields need.
    let mut generics = input.generics.clone();
    if generic {
        let preds = generics.make_where_clause();
        match &c.bound {
            Some(bound) => preds.predicates.extend(bound.iter().cloned()),
            None => {
                for p in input.generics.type_params() {
                    let p = &p.ident;
                    preds.predicates.push(syn::parse_quote!(#p: 'static));
                }
                for f in &saved {
                    let ty = f.ty;
                    let pred: WherePredicate = if f.attrs.originator.is_some() {
                        syn::parse_quote!(#ty: #krate::Originator)
                    } else {
                        syn::parse_quote!(
                            #ty: ::core::clone::Clone + #serde::Serialize
                                + #serde::de::DeserializeOwned
                                + ::core::marker::Send + ::core::marker::Sync + 'static
                        )
                    };
                    preds.predicates.push(pred);
                }
            }
        }
    }
    let (impl_g, ty_g, where_c) = generics.split_for_impl();

    let create = saved.iter().map(|f| {
        let (m, mm) = (&f.member, &f.memento_member);
        if f.attrs.originator.is_some() {
            quote!(#mm: #krate::Originator::create_memento(&self.#m))
        } else {
            quote!(#mm: ::core::clone::Clone::clone(&self.#m))
        }
    });
    let validate = c.validate.as_ref().map(|path| quote!(#path(&memento)?;));
    let nested = saved
        .iter()
        .filter(|f| f.attrs.originator.is_some())
        .map(|f| {
            let (m, mm) = (&f.member, &f.memento_member);
            quote!(#krate::Originator::restore_memento(&mut self.#m, memento.#mm)?;)
        });
    let assign = saved
        .iter()
        .filter(|f| f.attrs.originator.is_none())
        .map(|f| {
            let (m, mm) = (&f.member, &f.memento_member);
            quote!(self.#m = memento.#mm;)
        });
    let reset = fields.iter().filter(|f| f.attrs.reset.is_some()).map(|f| {
        let m = &f.member;
        quote!(self.#m = ::core::default::Default::default();)
    });
    let (_, memento_ty_g, _) = input.generics.split_for_impl();
    let view = view(&c, &krate, &memento, tuple, &saved, generic);
    let version = memento_version(&c);

    Ok(quote! {
        #memento_struct

        #[automatically_derived]
        impl #impl_g #krate::Originator for #ident #ty_g #where_c {
            type Memento = #memento #memento_ty_g;

            fn create_memento(&self) -> Self::Memento {
                #memento { #(#create,)* #phantom_init }
            }

            #version

            #view

            fn restore_memento(&mut self, memento: Self::Memento) -> #krate::Result<()> {
                #validate
                #(#nested)*
                #(#assign)*
                #(#reset)*
                ::core::result::Result::Ok(())
            }
        }
    })
}

/// `memento_version` for `#[savegame(version = N)]`; none (the trait's default, 1) without it.
fn memento_version(c: &Container) -> Option<TokenStream> {
    c.version.as_ref().map(|n| {
        quote!(
            fn memento_version(&self) -> u32 {
                #n
            }
        )
    })
}

/// `#[savegame(self_memento)]`: the type is its own memento.
fn self_memento(
    input: &DeriveInput,
    c: &Container,
    krate: &TokenStream,
) -> syn::Result<TokenStream> {
    let misplaced = c
        .memento
        .as_ref()
        .map(|m| m.span())
        .or(c.derives.first().map(syn::spanned::Spanned::span))
        .or(c.serde.first().map(|_| Span::call_site()));
    if let Some(span) = misplaced {
        return Err(syn::Error::new(
            span,
            "with #[savegame(self_memento)] the type is its own memento: `memento`, `derive` and \
             `serde` have nothing to name",
        ));
    }
    let fields: Box<dyn Iterator<Item = &syn::Field>> = match &input.data {
        Data::Struct(s) => Box::new(s.fields.iter()),
        Data::Enum(e) => Box::new(e.variants.iter().flat_map(|v| v.fields.iter())),
        Data::Union(u) => {
            return Err(syn::Error::new_spanned(
                u.union_token,
                "#[derive(Originator)] does not support unions",
            ));
        }
    };
    for f in fields {
        let a = attrs::field(&f.attrs)?;
        let span = a.reset.or(a.originator);
        if a.skip || span.is_some() {
            return Err(syn::Error::new(
                span.unwrap_or_else(Span::call_site),
                "with #[savegame(self_memento)] the whole value is saved: leave a field out with \
                 #[serde(skip)] instead",
            ));
        }
    }
    let ident = &input.ident;
    let serde = quote!(#krate::__private::serde);
    let mut generics = input.generics.clone();
    let preds = generics.make_where_clause();
    match &c.bound {
        Some(bound) => preds.predicates.extend(bound.iter().cloned()),
        None => preds.predicates.push(syn::parse_quote!(
            Self: ::core::clone::Clone + #serde::Serialize + #serde::de::DeserializeOwned
                + ::core::marker::Send + ::core::marker::Sync + 'static
        )),
    }
    let (impl_g, ty_g, where_c) = generics.split_for_impl();
    let validate = c.validate.as_ref().map(|path| quote!(#path(&memento)?;));
    let version = memento_version(c);
    Ok(quote! {
        #[automatically_derived]
        impl #impl_g #krate::Originator for #ident #ty_g #where_c {
            type Memento = Self;

            fn create_memento(&self) -> Self {
                ::core::clone::Clone::clone(self)
            }

            #version

            fn serialize_memento<__S: #serde::Serializer>(
                &self,
                serializer: __S,
            ) -> ::core::result::Result<__S::Ok, __S::Error> {
                #serde::Serialize::serialize(self, serializer)
            }

            fn restore_memento(&mut self, memento: Self) -> #krate::Result<()> {
                #validate
                *self = memento;
                ::core::result::Result::Ok(())
            }
        }
    })
}

/// `serialize_memento` over a view of the saved fields by reference: the memento's shape (its
/// name, its fields' names and serde attributes) with `&T` for each field, so a blocking save
/// encodes the same bytes without cloning the state. None (the trait's default, which clones)
/// for a generic type, one with nothing saved, or a serde attribute whose meaning could differ
/// on a reference (`with`, `serialize_with`, `skip_serializing_if`, `into`, ...).
fn view(
    c: &Container,
    krate: &TokenStream,
    memento: &Ident,
    tuple: bool,
    saved: &[&Field],
    generic: bool,
) -> Option<TokenStream> {
    const FIELD_SAFE: &[&str] = &[
        "rename",
        "alias",
        "default",
        "skip_deserializing",
        "flatten",
    ];
    const CONTAINER_SAFE: &[&str] = &["rename_all", "deny_unknown_fields"];
    if generic || saved.is_empty() {
        return None;
    }
    if !c.serde.iter().all(|t| only(t.clone(), CONTAINER_SAFE)) {
        return None;
    }
    let mut fields = Vec::new();
    let mut inits = Vec::new();
    for f in saved {
        let serde_attrs: Vec<&&syn::Attribute> = f
            .carried
            .iter()
            .filter(|a| a.path().is_ident("serde"))
            .collect();
        for a in &serde_attrs {
            let tokens = match &a.meta {
                syn::Meta::List(list) => list.tokens.clone(),
                _ => return None,
            };
            if !only(tokens, FIELD_SAFE) {
                return None;
            }
        }
        let (ty, init) = if f.attrs.originator.is_some() {
            let ty = f.ty;
            let m = &f.member;
            (
                quote!(#krate::MementoOf<'__savegame_view, #ty>),
                quote!(#krate::MementoOf(&self.#m)),
            )
        } else {
            let ty = f.ty;
            let m = &f.member;
            (quote!(&'__savegame_view #ty), quote!(&self.#m))
        };
        let name = match &f.memento_member {
            Member::Named(id) => quote!(#id:),
            Member::Unnamed(_) => quote!(),
        };
        fields.push(quote!(#(#serde_attrs)* #name #ty));
        inits.push(quote!(#name #init));
    }
    let serde = quote!(#krate::__private::serde);
    let serde_path = serde.to_string();
    let container = c.serde.iter().map(|t| quote!(#[serde(#t)]));
    let name = memento.to_string();
    let (body, value) = if tuple {
        (quote!((#(#fields,)*);), quote!(__SavegameView(#(#inits,)*)))
    } else {
        (
            quote!({ #(#fields,)* }),
            quote!(__SavegameView { #(#inits,)* }),
        )
    };
    Some(quote! {
        fn serialize_memento<__S: #serde::Serializer>(
            &self,
            serializer: __S,
        ) -> ::core::result::Result<__S::Ok, __S::Error> {
            #[derive(#serde::Serialize)]
            #[serde(crate = #serde_path)]
            #[serde(rename = #name)]
            #(#container)*
            struct __SavegameView<'__savegame_view> #body
            #serde::Serialize::serialize(&#value, serializer)
        }
    })
}

/// Is every item of a serde attribute's list (`rename = "x", default`) one of `allowed`?
fn only(tokens: TokenStream, allowed: &[&str]) -> bool {
    let mut first = true;
    for t in tokens {
        match &t {
            proc_macro2::TokenTree::Punct(p) if p.as_char() == ',' => first = true,
            proc_macro2::TokenTree::Ident(i) if first => {
                if !allowed.iter().any(|a| i == a) {
                    return false;
                }
                first = false;
            }
            _ => first = false,
        }
    }
    true
}

/// Does `tokens` (a type) name the identifier `param` anywhere?
fn mentions(tokens: TokenStream, param: &Ident) -> bool {
    tokens.into_iter().any(|t| match t {
        proc_macro2::TokenTree::Ident(i) => &i == param,
        proc_macro2::TokenTree::Group(g) => mentions(g.stream(), param),
        _ => false,
    })
}
