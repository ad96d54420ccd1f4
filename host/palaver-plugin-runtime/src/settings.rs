//! Plugin settings: the typed list a manifest declares (`[settings.<key>]` with a type, a default and a
//! description), the check of a tenant's values against it, and the merge that gives a call its settings.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The declared settings, by key.
pub type SettingsSchema = BTreeMap<String, SettingSpec>;

/// One declared setting.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SettingSpec {
    #[serde(rename = "type")]
    pub kind: SettingType,
    /// The value a tenant gets without setting one; `None` leaves the key out.
    #[serde(default)]
    pub default: Option<Value>,
    #[serde(default)]
    pub description: String,
    /// For strings: the only values allowed.
    #[serde(default, rename = "one-of")]
    pub one_of: Vec<String>,
}

/// The type of a setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SettingType {
    String,
    Integer,
    Number,
    Boolean,
    StringList,
    /// Any JSON value, passed through unchecked.
    Json,
}

impl SettingType {
    fn accepts(self, v: &Value) -> bool {
        match self {
            SettingType::String => v.is_string(),
            SettingType::Integer => v.is_i64() || v.is_u64(),
            SettingType::Number => v.is_number(),
            SettingType::Boolean => v.is_boolean(),
            SettingType::StringList => v.as_array().is_some_and(|a| a.iter().all(Value::is_string)),
            SettingType::Json => true,
        }
    }
}

fn check(key: &str, spec: &SettingSpec, v: &Value) -> Result<(), String> {
    if !spec.kind.accepts(v) {
        return Err(format!("setting {key:?} must be of type {:?}, not {v}", spec.kind));
    }
    if !spec.one_of.is_empty()
        && let Some(s) = v.as_str()
        && !spec.one_of.iter().any(|o| o == s)
    {
        return Err(format!("setting {key:?} must be one of {:?}, not {s:?}", spec.one_of));
    }
    Ok(())
}

/// Checks that every default fits its declared type.
pub(crate) fn validate_schema(schema: &SettingsSchema) -> Result<(), String> {
    for (key, spec) in schema {
        if let Some(d) = &spec.default {
            check(key, spec, d).map_err(|e| format!("default of {e}"))?;
        }
        if !spec.one_of.is_empty() && spec.kind != SettingType::String {
            return Err(format!("setting {key:?}: one-of applies to strings only"));
        }
    }
    Ok(())
}

/// Checks a tenant's values (a JSON object) against the schema: only declared keys, each of its type.
pub(crate) fn validate_values(schema: &SettingsSchema, values: &Value) -> Result<(), String> {
    let Some(obj) = values.as_object() else {
        return Err("settings must be a JSON object".to_owned());
    };
    for (key, v) in obj {
        let Some(spec) = schema.get(key) else {
            return Err(format!("unknown setting {key:?}"));
        };
        check(key, spec, v)?;
    }
    Ok(())
}

/// The settings a call sees: the defaults, overridden by the tenant's values, as one JSON object.
pub(crate) fn resolve(schema: &SettingsSchema, values: Option<&Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for (key, spec) in schema {
        if let Some(d) = &spec.default {
            out.insert(key.clone(), d.clone());
        }
    }
    if let Some(Value::Object(obj)) = values {
        for (k, v) in obj {
            // Only declared keys: values were validated when set, but a schema may have shrunk since.
            if schema.contains_key(k) {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> SettingsSchema {
        toml::from_str(
            r#"
            [words]
            type = "string-list"
            default = ["forbidden"]
            [max_length]
            type = "integer"
            default = 0
            [links]
            type = "string"
            default = "allow"
            one-of = ["allow", "hold", "reject"]
            [extra]
            type = "json"
            "#,
        )
        .unwrap()
    }

    #[test]
    fn defaults_fill_what_the_tenant_did_not_set() {
        let s = schema();
        validate_schema(&s).unwrap();
        let r = resolve(&s, Some(&json!({ "max_length": 10 })));
        assert_eq!(Value::Object(r), json!({ "words": ["forbidden"], "max_length": 10, "links": "allow" }));
    }

    #[test]
    fn values_are_checked_against_types_and_choices() {
        let s = schema();
        assert!(validate_values(&s, &json!({ "words": ["a", "b"], "extra": { "x": 1 } })).is_ok());
        assert!(validate_values(&s, &json!({ "words": "a" })).is_err());
        assert!(validate_values(&s, &json!({ "links": "maybe" })).is_err());
        assert!(validate_values(&s, &json!({ "nope": 1 })).is_err());
        assert!(validate_values(&s, &json!([1])).is_err());
    }

    #[test]
    fn a_default_of_the_wrong_type_is_refused() {
        let s: SettingsSchema = toml::from_str("[n]\ntype = \"integer\"\ndefault = \"x\"\n").unwrap();
        assert!(validate_schema(&s).is_err());
    }
}
