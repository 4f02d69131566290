//! Parsing a snapshot element by element: a million-person file is never held as one
//! JSON tree. Each array entry is decoded on its own, so an error names its array,
//! index and field (the path inside the entry, as serde reports it).

use super::{Entry, Snapshot, SnapshotError, FORMAT};
use crate::model::Workspace;
use serde::de::{self, DeserializeOwned, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use std::collections::HashSet;
use std::fmt;

/// Parses a snapshot from a reader.
pub fn parse_reader<R: std::io::Read>(r: R) -> Result<Snapshot, SnapshotError> {
    let mut de = serde_json::Deserializer::from_reader(r);
    parse_with(&mut de)
}

/// Parses a snapshot from bytes in memory.
pub fn parse_slice(b: &[u8]) -> Result<Snapshot, SnapshotError> {
    let mut de = serde_json::Deserializer::from_slice(b);
    parse_with(&mut de)
}

fn parse_with<'de, R: serde_json::de::Read<'de>>(
    de: &mut serde_json::Deserializer<R>,
) -> Result<Snapshot, SnapshotError> {
    let mut first_error: Option<SnapshotError> = None;
    let seed = TopSeed {
        error: &mut first_error,
    };
    let result = seed.deserialize(&mut *de).and_then(|s| de.end().map(|_| s));
    match (result, first_error) {
        (_, Some(e)) => Err(e),
        (Ok(s), None) => Ok(s),
        (Err(e), None) => Err(SnapshotError {
            array: None,
            index: None,
            field: None,
            message: format!("not a valid snapshot document: {e}"),
        }),
    }
}

struct TopSeed<'e> {
    error: &'e mut Option<SnapshotError>,
}

impl<'de> DeserializeSeed<'de> for TopSeed<'_> {
    type Value = Snapshot;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Snapshot, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TopSeed<'_> {
    type Value = Snapshot;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a snapshot object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Snapshot, A::Error> {
        let mut snap = Snapshot::default();
        let mut format: Option<String> = None;
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                *self.error = Some(SnapshotError::top(&key, "appears twice"));
                return Err(de::Error::custom("duplicate key"));
            }
            macro_rules! array {
                ($field:ident) => {{
                    snap.$field = map.next_value_seed(ArraySeed {
                        name: stringify!($field),
                        error: &mut *self.error,
                        _t: std::marker::PhantomData,
                    })?;
                }};
            }
            match key.as_str() {
                "format" => {
                    let v: serde_json::Value = map.next_value()?;
                    match v {
                        serde_json::Value::String(s) => format = Some(s),
                        _ => {
                            *self.error = Some(SnapshotError::top("format", "must be a string"));
                            return Err(de::Error::custom("bad format"));
                        }
                    }
                }
                "workspace" => {
                    let v: serde_json::Value = map.next_value()?;
                    match serde_path_to_error::deserialize::<_, Workspace>(v) {
                        Ok(w) => snap.workspace = Some(w),
                        Err(e) => {
                            *self.error = Some(SnapshotError {
                                array: None,
                                index: None,
                                field: Some(join_path("workspace", &e.path().to_string())),
                                message: e.inner().to_string(),
                            });
                            return Err(de::Error::custom("bad workspace"));
                        }
                    }
                }
                "users" => array!(users),
                "api_keys" => array!(api_keys),
                "pipeline_stages" => array!(pipeline_stages),
                "companies" => array!(companies),
                "contacts" => array!(contacts),
                "jobs" => array!(jobs),
                "candidates" => array!(candidates),
                "notes" => array!(notes),
                "tasks" => array!(tasks),
                "attachments" => array!(attachments),
                other => {
                    *self.error = Some(SnapshotError::top(other, "unknown top-level field"));
                    return Err(de::Error::custom("unknown field"));
                }
            }
        }
        match format.as_deref() {
            Some(FORMAT) => {}
            Some(other) => {
                *self.error = Some(SnapshotError::top(
                    "format",
                    format!("unsupported format {other:?}: expected {FORMAT:?}"),
                ));
                return Err(de::Error::custom("bad format"));
            }
            None => {
                *self.error = Some(SnapshotError::top(
                    "format",
                    format!("missing: expected {FORMAT:?}"),
                ));
                return Err(de::Error::custom("no format"));
            }
        }
        if snap.workspace.is_none() {
            *self.error = Some(SnapshotError::top(
                "workspace",
                "missing: the target workspace is required",
            ));
            return Err(de::Error::custom("no workspace"));
        }
        Ok(snap)
    }
}

fn join_path(base: &str, sub: &str) -> String {
    if sub.is_empty() || sub == "." {
        base.to_string()
    } else {
        format!("{base}.{sub}")
    }
}

struct ArraySeed<'e, T> {
    name: &'static str,
    error: &'e mut Option<SnapshotError>,
    _t: std::marker::PhantomData<T>,
}

impl<'de, T: DeserializeOwned> DeserializeSeed<'de> for ArraySeed<'_, T> {
    type Value = Vec<Entry<T>>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, T: DeserializeOwned> Visitor<'de> for ArraySeed<'_, T> {
    type Value = Vec<Entry<T>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of records")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        // `null` for an array: treated as absent.
        Ok(Vec::new())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 16));
        let mut index = 0usize;
        while let Some(raw) = seq.next_element::<Box<serde_json::value::RawValue>>()? {
            match entry_from_raw::<T>(&raw) {
                Ok(e) => out.push(e),
                Err((field, message)) => {
                    *self.error = Some(SnapshotError::at(self.name, index, &field, message));
                    return Err(de::Error::custom("invalid record"));
                }
            }
            index += 1;
        }
        Ok(out)
    }

    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
        *self.error = Some(SnapshotError::top(self.name, "must be an array"));
        Err(de::Error::custom("not an array"))
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        *self.error = Some(SnapshotError::top(self.name, "must be an array"));
        Err(E::custom("not an array"))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        *self.error = Some(SnapshotError::top(self.name, "must be an array"));
        Err(E::custom("not an array"))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        self.visit_bool(false)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        self.visit_bool(false)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        self.visit_bool(false)
    }
}

/// One array element, parsed straight into its record type; only an element that does
/// not parse as a record (a removal, `"deleted": false`, or an error to report) is looked
/// at as a JSON tree.
fn entry_from_raw<T: DeserializeOwned>(
    raw: &serde_json::value::RawValue,
) -> Result<Entry<T>, (String, String)> {
    let mut de = serde_json::Deserializer::from_str(raw.get());
    match T::deserialize(&mut de) {
        Ok(r) => Ok(Entry::Upsert(r)),
        Err(_) => {
            let v: serde_json::Value =
                serde_json::from_str(raw.get()).map_err(|e| (String::new(), e.to_string()))?;
            entry_from_value(v)
        }
    }
}

/// One array element: `{"id": …, "deleted": true}` removes, anything else is a record.
fn entry_from_value<T: DeserializeOwned>(
    mut v: serde_json::Value,
) -> Result<Entry<T>, (String, String)> {
    let obj = v
        .as_object_mut()
        .ok_or_else(|| (String::new(), "must be an object".to_string()))?;
    match obj.get("deleted") {
        None => {}
        Some(serde_json::Value::Bool(true)) => {
            return match obj.get("id") {
                Some(serde_json::Value::String(id)) if !id.is_empty() => {
                    Ok(Entry::Delete(id.clone()))
                }
                _ => Err((
                    "id".into(),
                    "a record marked deleted must carry its id (a string)".into(),
                )),
            };
        }
        Some(serde_json::Value::Bool(false)) => {
            obj.remove("deleted");
        }
        Some(_) => return Err(("deleted".into(), "must be true or false".into())),
    }
    serde_path_to_error::deserialize::<_, T>(v)
        .map(Entry::Upsert)
        .map_err(|e| {
            let path = e.path().to_string();
            let path = if path == "." { String::new() } else { path };
            let inner = e.into_inner().to_string();
            // serde names the missing or unknown field in its message; lift it into the
            // location so every error names its field.
            let field = if path.is_empty() {
                field_from_message(&inner).unwrap_or_default()
            } else {
                path
            };
            (field, inner)
        })
}

fn field_from_message(msg: &str) -> Option<String> {
    let start = msg.find('`')? + 1;
    let end = start + msg[start..].find('`')?;
    Some(msg[start..end].to_string())
}
