//! The committed schema files: one per memento and version, `schemas/player.v2.json`, written
//! one field or variant to a line so that a review reads its diff as the change it is.
//!
//! ```text
//! {
//!   "savegame_schema": 1,
//!   "memento": "player",
//!   "schema_version": 1,
//!   "memento_version": 2,
//!   "type": "PlayerMemento",
//!   "types": {
//!     "Item": {
//!       "enum": [
//!         { "name": "Sword" },
//!         { "name": "Potion", "newtype": "u8" }
//!       ]
//!     },
//!     "PlayerMemento": {
//!       "struct": [
//!         { "name": "health", "type": "u32" },
//!         { "name": "bag", "type": "Vec<Item>" },
//!         { "name": "title", "type": "Option<String>", "default": true }
//!       ]
//!     }
//!   }
//! }
//! ```
//!
//! A struct variant's fields are listed under `"struct"` as a struct's are; a tuple's under
//! `"tuple"`; a unit struct is `"unit"`; a variant index that serde gives no variant is `null`.
//!
//! **File names.** `<id>.v<memento version>.json`, with `.s<schema version>` before the `.v`
//! when the game's schema version is above 1 (`world.s3.v1.json`). In the id, every byte but
//! ASCII letters, digits, `-` and `_` is written `%XX` (`monster/*` is `monster%2F%2A`), so a
//! name is safe on every file system and maps back to one id; a name over 160 bytes is cut and
//! ends in a checksum of the id. The guard finds files by what they hold, not by their names.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value as Json;

use super::shape::{Field, Schema, Type, TypeDef, Variant, VariantBody};

/// The version of the file format, `"savegame_schema"`.
const FILE_FORMAT: u64 = 1;
/// Names longer than this are cut and end in a checksum.
const MAX_NAME: usize = 160;

/// One committed schema: a memento's shape at one schema version and memento version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaFile {
    /// The memento id, or a pattern (`monster/*`) for a [`Registry`](crate::Registry).
    pub id: String,
    /// The game's schema version (of the whole save) it was written at.
    pub schema_version: u32,
    /// The memento's own version.
    pub memento_version: u32,
    /// The shape.
    pub schema: Schema,
}

impl SchemaFile {
    /// The file's text.
    #[must_use]
    pub fn to_json(&self) -> String {
        let mut out = String::new();
        out.push_str("{\n");
        let _ = writeln!(out, "  \"savegame_schema\": {FILE_FORMAT},");
        let _ = writeln!(out, "  \"memento\": {},", quote(&self.id));
        let _ = writeln!(out, "  \"schema_version\": {},", self.schema_version);
        let _ = writeln!(out, "  \"memento_version\": {},", self.memento_version);
        let _ = writeln!(
            out,
            "  \"type\": {},",
            quote(&self.schema.root().to_string())
        );
        out.push_str("  \"types\": {");
        let count = self.schema.types().len();
        for (i, (name, def)) in self.schema.types().enumerate() {
            let _ = write!(out, "\n    {}: ", quote(name));
            write_def(&mut out, def, 4);
            if i + 1 < count {
                out.push(',');
            }
        }
        out.push_str(if count == 0 { "}\n}\n" } else { "\n  }\n}\n" });
        out
    }

    /// Reads a file's text.
    ///
    /// # Errors
    /// A sentence saying what is wrong, and where.
    pub fn from_json(text: &str) -> Result<SchemaFile, String> {
        let json: Json = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let obj = object(&json, "the file")?;
        only(
            obj,
            &[
                "savegame_schema",
                "memento",
                "schema_version",
                "memento_version",
                "type",
                "types",
            ],
            "the file",
        )?;
        match obj.get("savegame_schema").and_then(Json::as_u64) {
            Some(FILE_FORMAT) => {}
            Some(other) => {
                return Err(format!(
                    "savegame_schema {other}: this version of savegame reads format {FILE_FORMAT}"
                ));
            }
            None => return Err("no \"savegame_schema\": not a savegame schema file".into()),
        }
        let text_of = |key: &str| {
            obj.get(key)
                .and_then(Json::as_str)
                .ok_or_else(|| format!("\"{key}\" must be a string"))
        };
        let version_of = |key: &str| {
            obj.get(key)
                .and_then(Json::as_u64)
                .and_then(|v| u32::try_from(v).ok())
                .filter(|v| *v >= 1)
                .ok_or_else(|| format!("\"{key}\" must be a version, from 1"))
        };
        let mut schema = Schema::new(Type::parse(text_of("type")?)?);
        let types = object(obj.get("types").ok_or("no \"types\"")?, "\"types\"")?;
        for (name, def) in types {
            let def = read_def(def).map_err(|e| format!("{name}: {e}"))?;
            schema = schema.with_type(name.clone(), def);
        }
        schema.check()?;
        Ok(SchemaFile {
            id: text_of("memento")?.to_owned(),
            schema_version: version_of("schema_version")?,
            memento_version: version_of("memento_version")?,
            schema,
        })
    }

    /// The file's name: `player.v2.json`, `world.s3.v1.json`.
    #[must_use]
    pub fn file_name(&self) -> String {
        file_name(&self.id, self.schema_version, self.memento_version)
    }
}

/// The name of the file of memento `id` at these versions.
pub(crate) fn file_name(id: &str, schema_version: u32, memento_version: u32) -> String {
    let mut name = String::new();
    for byte in id.bytes() {
        if byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_' {
            name.push(char::from(byte));
        } else {
            let _ = write!(name, "%{byte:02X}");
        }
    }
    if name.len() > MAX_NAME {
        let mut cut = MAX_NAME;
        // Never inside a %XX.
        while name.as_bytes()[..cut]
            .iter()
            .rev()
            .take(2)
            .any(|b| *b == b'%')
        {
            cut -= 1;
        }
        name.truncate(cut);
        let _ = write!(name, "~{}", crate::migrate::checksum(id.as_bytes()));
    }
    if schema_version > 1 {
        let _ = write!(name, ".s{schema_version}");
    }
    let _ = write!(name, ".v{memento_version}.json");
    name
}

/// Every schema file in `dir` (every `*.json`), with its path; none if `dir` does not exist.
///
/// # Errors
/// `(path, reason)` for a folder or file that cannot be read, or a file that does not parse.
pub(crate) fn read_dir(dir: &Path) -> Result<Vec<(PathBuf, SchemaFile)>, (PathBuf, String)> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err((dir.to_path_buf(), e.to_string())),
    };
    let mut paths = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|e| (dir.to_path_buf(), e.to_string()))?
            .path();
        if path.extension().is_some_and(|e| e == "json") && path.is_file() {
            paths.push(path);
        }
    }
    paths.sort();
    let mut files = Vec::with_capacity(paths.len());
    for path in paths {
        let text = std::fs::read_to_string(&path).map_err(|e| (path.clone(), e.to_string()))?;
        let file = SchemaFile::from_json(&text).map_err(|e| (path.clone(), e))?;
        files.push((path, file));
    }
    Ok(files)
}

fn quote(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
}

fn types_list(types: &[Type]) -> String {
    let items: Vec<String> = types.iter().map(|t| quote(&t.to_string())).collect();
    format!("[{}]", items.join(", "))
}

fn write_fields(out: &mut String, fields: &[Field], indent: usize) {
    if fields.is_empty() {
        out.push_str("[]");
        return;
    }
    out.push('[');
    for (i, f) in fields.iter().enumerate() {
        let _ = write!(
            out,
            "\n{:indent$}  {{ \"name\": {}, \"type\": {}{} }}",
            "",
            quote(&f.name),
            quote(&f.ty.to_string()),
            if f.default { ", \"default\": true" } else { "" },
        );
        if i + 1 < fields.len() {
            out.push(',');
        }
    }
    let _ = write!(out, "\n{:indent$}]", "");
}

fn write_def(out: &mut String, def: &TypeDef, indent: usize) {
    match def {
        TypeDef::Unit => out.push_str("\"unit\""),
        TypeDef::Newtype(t) => {
            let _ = write!(out, "{{ \"newtype\": {} }}", quote(&t.to_string()));
        }
        TypeDef::Tuple(ts) => {
            let _ = write!(out, "{{ \"tuple\": {} }}", types_list(ts));
        }
        TypeDef::Struct(fields) => {
            let _ = write!(out, "{{\n{:indent$}  \"struct\": ", "");
            write_fields(out, fields, indent + 2);
            let _ = write!(out, "\n{:indent$}}}", "");
        }
        TypeDef::Enum(variants) => {
            let _ = write!(out, "{{\n{:indent$}  \"enum\": [", "");
            for (i, v) in variants.iter().enumerate() {
                let _ = write!(out, "\n{:indent$}    ", "");
                match v {
                    None => out.push_str("null"),
                    Some(v) => write_variant(out, v, indent + 4),
                }
                if i + 1 < variants.len() {
                    out.push(',');
                }
            }
            if !variants.is_empty() {
                let _ = write!(out, "\n{:indent$}  ", "");
            }
            let _ = write!(out, "]\n{:indent$}}}", "");
        }
    }
}

fn write_variant(out: &mut String, v: &Variant, indent: usize) {
    let _ = write!(out, "{{ \"name\": {}", quote(&v.name));
    match &v.body {
        VariantBody::Unit => {}
        VariantBody::Newtype(t) => {
            let _ = write!(out, ", \"newtype\": {}", quote(&t.to_string()));
        }
        VariantBody::Tuple(ts) => {
            let _ = write!(out, ", \"tuple\": {}", types_list(ts));
        }
        VariantBody::Struct(fields) => {
            out.push_str(", \"struct\": ");
            write_fields(out, fields, indent);
        }
    }
    out.push_str(" }");
}

type Obj = serde_json::Map<String, Json>;

fn object<'j>(json: &'j Json, what: &str) -> Result<&'j Obj, String> {
    json.as_object()
        .ok_or_else(|| format!("{what} must be an object"))
}

fn only(obj: &Obj, keys: &[&str], what: &str) -> Result<(), String> {
    match obj.keys().find(|k| !keys.contains(&k.as_str())) {
        Some(k) => Err(format!("{what} has an unknown key {k:?}")),
        None => Ok(()),
    }
}

fn read_type(json: &Json) -> Result<Type, String> {
    Type::parse(json.as_str().ok_or("a type must be a string")?)
}

fn read_types(json: &Json) -> Result<Vec<Type>, String> {
    json.as_array()
        .ok_or("\"tuple\" must be a list of types")?
        .iter()
        .map(read_type)
        .collect()
}

fn read_fields(json: &Json) -> Result<Vec<Field>, String> {
    let list = json
        .as_array()
        .ok_or("\"struct\" must be a list of fields")?;
    list.iter()
        .map(|f| {
            let obj = object(f, "a field")?;
            only(obj, &["name", "type", "default"], "a field")?;
            let name = obj
                .get("name")
                .and_then(Json::as_str)
                .ok_or("a field needs a \"name\"")?;
            let ty = read_type(obj.get("type").ok_or("a field needs a \"type\"")?)
                .map_err(|e| format!("field {name}: {e}"))?;
            let default = match obj.get("default") {
                None => false,
                Some(Json::Bool(b)) => *b,
                Some(_) => return Err(format!("field {name}: \"default\" must be true or false")),
            };
            Ok(Field {
                name: name.to_owned(),
                ty,
                default,
            })
        })
        .collect()
}

fn read_def(json: &Json) -> Result<TypeDef, String> {
    if json.as_str() == Some("unit") {
        return Ok(TypeDef::Unit);
    }
    let obj = object(json, "a type")?;
    if obj.len() != 1 {
        return Err("a type is \"unit\" or one of newtype, tuple, struct, enum".into());
    }
    let (kind, body) = obj.iter().next().ok_or("an empty type")?;
    match kind.as_str() {
        "newtype" => Ok(TypeDef::Newtype(read_type(body)?)),
        "tuple" => Ok(TypeDef::Tuple(read_types(body)?)),
        "struct" => Ok(TypeDef::Struct(read_fields(body)?)),
        "enum" => {
            let list = body
                .as_array()
                .ok_or("\"enum\" must be a list of variants")?;
            let variants = list
                .iter()
                .map(|v| {
                    if v.is_null() {
                        Ok(None)
                    } else {
                        read_variant(v).map(Some)
                    }
                })
                .collect::<Result<_, String>>()?;
            Ok(TypeDef::Enum(variants))
        }
        other => Err(format!("unknown kind of type {other:?}")),
    }
}

fn read_variant(json: &Json) -> Result<Variant, String> {
    let obj = object(json, "a variant")?;
    only(obj, &["name", "newtype", "tuple", "struct"], "a variant")?;
    let name = obj
        .get("name")
        .and_then(Json::as_str)
        .ok_or("a variant needs a \"name\"")?;
    if obj.len() > 2 {
        return Err(format!(
            "variant {name}: one of newtype, tuple, struct at most"
        ));
    }
    let body = if let Some(t) = obj.get("newtype") {
        VariantBody::Newtype(read_type(t)?)
    } else if let Some(ts) = obj.get("tuple") {
        VariantBody::Tuple(read_types(ts)?)
    } else if let Some(fs) = obj.get("struct") {
        VariantBody::Struct(read_fields(fs)?)
    } else {
        VariantBody::Unit
    };
    Ok(Variant::new(name, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> SchemaFile {
        let schema = Schema::new(Type::Named("PlayerMemento".into()))
            .with_type(
                "PlayerMemento",
                TypeDef::Struct(vec![
                    Field::new("health", Type::U32),
                    Field::new("bag", Type::parse("Vec<Item>").unwrap()),
                    Field::new("title", Type::parse("Option<String>").unwrap()).with_default(),
                    Field::new("hp", Type::Named("Hp".into())),
                ]),
            )
            .with_type(
                "Item",
                TypeDef::Enum(vec![
                    Some(Variant::new("Sword", VariantBody::Unit)),
                    None,
                    Some(Variant::new("Potion", VariantBody::Newtype(Type::U8))),
                    Some(Variant::new(
                        "Pair",
                        VariantBody::Tuple(vec![Type::U8, Type::U8]),
                    )),
                    Some(Variant::new(
                        "Scroll",
                        VariantBody::Struct(vec![Field::new("spell", Type::String)]),
                    )),
                ]),
            )
            .with_type("Hp", TypeDef::Newtype(Type::U32));
        SchemaFile {
            id: "monster/*".into(),
            schema_version: 1,
            memento_version: 2,
            schema,
        }
    }

    #[test]
    fn files_read_back_as_written() {
        let file = sample();
        let text = file.to_json();
        assert!(
            text.contains(
                "{ \"name\": \"title\", \"type\": \"Option<String>\", \"default\": true }"
            ),
            "{text}"
        );
        assert_eq!(SchemaFile::from_json(&text).unwrap(), file);
        let empty = SchemaFile {
            schema: Schema::new(Type::U32),
            ..file
        };
        assert_eq!(SchemaFile::from_json(&empty.to_json()).unwrap(), empty);
    }

    #[test]
    fn names_are_safe_and_tell_ids_apart() {
        assert_eq!(file_name("player", 1, 2), "player.v2.json");
        assert_eq!(file_name("world", 3, 1), "world.s3.v1.json");
        assert_eq!(file_name("monster/*", 1, 1), "monster%2F%2A.v1.json");
        assert_eq!(file_name("a.v1", 1, 1), "a%2Ev1.v1.json");
        let long = "é".repeat(300);
        let name = file_name(&long, 1, 1);
        assert!(name.len() < 200 && name.ends_with(".v1.json"), "{name}");
        assert_ne!(name, file_name(&"é".repeat(301), 1, 1));
    }

    #[test]
    fn a_file_with_an_unknown_key_or_version_is_refused() {
        let text = sample().to_json();
        let odd = text.replace("\"memento\":", "\"extra\": 1,\n  \"memento\":");
        assert!(
            SchemaFile::from_json(&odd)
                .unwrap_err()
                .contains("unknown key")
        );
        let newer = text.replace("\"savegame_schema\": 1", "\"savegame_schema\": 2");
        assert!(
            SchemaFile::from_json(&newer)
                .unwrap_err()
                .contains("format 1")
        );
    }
}
