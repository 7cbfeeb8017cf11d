//! A custom object against its version's `openAPIV3Schema`, as the page
//! "Extend the Kubernetes API with CustomResourceDefinitions" describes
//! a structural schema's use: unknown fields pruned ("Field pruning";
//! kept under `x-kubernetes-preserve-unknown-fields`, and always for
//! `apiVersion`, `kind` and `metadata` at the root), `null` dropped where
//! the schema is not `nullable` and `default`s set ("Defaulting and
//! Nullable"), then validated ("Validation"): `type` (with
//! `x-kubernetes-int-or-string`), `required`, `enum`, `minimum` and
//! `maximum`, `minLength` and `maxLength`, `minItems` and `maxItems`, and
//! `pattern`. Errors are worded as apiextensions-apiserver's
//! `kubeOpenAPIResultToFieldErrors` turns kube-openapi's into field
//! errors. Not checked: CEL `x-kubernetes-validations`, `format`,
//! `oneOf`/`anyOf`/`allOf`/`not`, list and map types.

use serde_json::{Map, Value};

use super::crds::FieldError;

/// What admitting an object found.
#[derive(Debug, Default)]
pub(super) struct Admitted {
    /// What the schema refuses.
    pub(super) errors: Vec<FieldError>,
    /// The paths of the unknown fields pruned (`spec.extra`), which a
    /// request with `fieldValidation=Strict` is refused for.
    pub(super) pruned: Vec<String>,
}

/// Prunes, defaults and validates `object` in place.
pub(super) fn admit(schema: &Value, object: &mut Value) -> Admitted {
    let mut found = Admitted::default();
    if let Some(fields) = object.as_object_mut() {
        let meta = fields.remove("metadata");
        let api_version = fields.remove("apiVersion");
        let kind = fields.remove("kind");
        let mut rest = Value::Object(std::mem::take(fields));
        walk(schema, &mut rest, "", &mut found);
        let Value::Object(mut rest) = rest else {
            return found;
        };
        for (name, value) in [
            ("apiVersion", api_version),
            ("kind", kind),
            ("metadata", meta),
        ] {
            if let Some(value) = value {
                rest.insert(name.to_owned(), value);
            }
        }
        *fields = rest;
    }
    found
}

fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

fn flag(schema: &Value, name: &str) -> bool {
    schema.get(name).and_then(Value::as_bool).unwrap_or(false)
}

/// The JSON type kube-openapi names a value by.
fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_matches(wanted: &str, value: &Value) -> bool {
    match (wanted, value) {
        ("number", Value::Number(_)) => true,
        ("integer", Value::Number(n)) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        (wanted, value) => wanted == type_name(value),
    }
}

fn walk(schema: &Value, value: &mut Value, path: &str, found: &mut Admitted) {
    let errors = &mut found.errors;
    let shown = if path.is_empty() { "<root>" } else { path };
    if value.is_null() && flag(schema, "nullable") {
        return;
    }
    let int_or_string = flag(schema, "x-kubernetes-int-or-string");
    let wanted = if int_or_string {
        Some("integer,string")
    } else {
        schema.get("type").and_then(Value::as_str)
    };
    if let Some(wanted) = wanted {
        let fits = if int_or_string {
            matches!(value, Value::String(_)) || type_matches("integer", value)
        } else {
            type_matches(wanted, value)
        };
        if !fits {
            let actual = type_name(value);
            errors.push(FieldError::type_invalid(
                path.to_owned(),
                &Value::String(actual.to_owned()),
                &format!("{shown} in body must be of type {wanted}: \"{actual}\""),
            ));
            return;
        }
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        let supported: Vec<String> = allowed
            .iter()
            .map(|a| match a {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect();
        errors.push(FieldError::not_supported(
            path.to_owned(),
            value,
            &supported,
        ));
    }
    match value {
        Value::Object(fields) => object(schema, fields, path, found),
        Value::Array(items) => {
            let count = items.len() as u64;
            bound(
                schema,
                "minItems",
                count,
                path,
                value_of_len(count),
                errors,
                |min| format!("{shown} in body should have at least {min} items"),
            );
            bound(
                schema,
                "maxItems",
                count,
                path,
                value_of_len(count),
                errors,
                |max| format!("{shown} in body should have at most {max} items"),
            );
            if let Some(item_schema) = schema.get("items")
                && let Value::Array(items) = value
            {
                for (i, item) in items.iter_mut().enumerate() {
                    walk(item_schema, item, &format!("{path}[{i}]"), found);
                }
            }
        }
        Value::String(text) => {
            let chars = text.chars().count() as u64;
            let shown_value = Value::String(text.clone());
            if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
                && chars < min
            {
                errors.push(FieldError::invalid(
                    path.to_owned(),
                    &shown_value,
                    &format!("{shown} in body should be at least {min} chars long"),
                ));
            }
            if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
                && chars > max
            {
                errors.push(FieldError {
                    field: path.to_owned(),
                    reason: "FieldValueTooLong",
                    body: format!("Too long: may not be more than {max} bytes"),
                });
            }
            if let Some(pattern) = schema.get("pattern").and_then(Value::as_str)
                && let Ok(re) = regex::Regex::new(pattern)
                && !re.is_match(text)
            {
                errors.push(FieldError::invalid(
                    path.to_owned(),
                    &shown_value,
                    &format!("{shown} in body should match '{pattern}'"),
                ));
            }
        }
        Value::Number(n) => {
            let Some(x) = n.as_f64() else { return };
            let number = Value::Number(n.clone());
            if let Some(min) = schema.get("minimum").and_then(Value::as_f64) {
                let exclusive = flag(schema, "exclusiveMinimum");
                if x < min || (exclusive && x == min) {
                    let word = if exclusive {
                        "greater than"
                    } else {
                        "greater than or equal to"
                    };
                    errors.push(FieldError::invalid(
                        path.to_owned(),
                        &number,
                        &format!("{shown} in body should be {word} {}", trim(min)),
                    ));
                }
            }
            if let Some(max) = schema.get("maximum").and_then(Value::as_f64) {
                let exclusive = flag(schema, "exclusiveMaximum");
                if x > max || (exclusive && x == max) {
                    let word = if exclusive {
                        "less than"
                    } else {
                        "less than or equal to"
                    };
                    errors.push(FieldError::invalid(
                        path.to_owned(),
                        &number,
                        &format!("{shown} in body should be {word} {}", trim(max)),
                    ));
                }
            }
        }
        _ => {}
    }
}

/// A number as Go's `%v` prints a float64 bound: no `.0` when whole.
fn trim(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        x.to_string()
    }
}

fn value_of_len(n: u64) -> Value {
    Value::from(n)
}

fn bound(
    schema: &Value,
    name: &str,
    count: u64,
    path: &str,
    shown: Value,
    errors: &mut Vec<FieldError>,
    message: impl Fn(u64) -> String,
) {
    let Some(limit) = schema.get(name).and_then(Value::as_u64) else {
        return;
    };
    let broken = if name.starts_with("min") {
        count < limit
    } else {
        count > limit
    };
    if broken {
        errors.push(FieldError::invalid(
            path.to_owned(),
            &shown,
            &message(limit),
        ));
    }
}

fn object(schema: &Value, fields: &mut Map<String, Value>, path: &str, found: &mut Admitted) {
    let properties = schema.get("properties").and_then(Value::as_object);
    let additional = schema.get("additionalProperties");
    let preserve = flag(schema, "x-kubernetes-preserve-unknown-fields");
    // Nulls where the schema does not allow them are pruned, then
    // defaults fill what is missing ("Defaulting and Nullable").
    let nulls: Vec<String> = fields
        .iter()
        .filter(|(name, v)| {
            v.is_null()
                && properties
                    .and_then(|p| p.get(*name))
                    .is_some_and(|s| !flag(s, "nullable"))
        })
        .map(|(name, _)| name.clone())
        .collect();
    for name in nulls {
        fields.remove(&name);
    }
    if let Some(properties) = properties {
        for (name, property) in properties {
            if !fields.contains_key(name)
                && let Some(default) = property.get("default")
            {
                fields.insert(name.clone(), default.clone());
            }
        }
    }
    let names: Vec<String> = fields.keys().cloned().collect();
    for name in names {
        let known = properties.and_then(|p| p.get(&name));
        let schema_for = match (known, additional) {
            (Some(s), _) => Some(s),
            (None, Some(a)) if a.is_object() => Some(a),
            _ => None,
        };
        match schema_for {
            Some(s) => {
                if let Some(value) = fields.get_mut(&name) {
                    walk(s, value, &child(path, &name), found);
                }
            }
            None if preserve || additional == Some(&Value::Bool(true)) => {}
            None => {
                fields.remove(&name);
                found.pruned.push(child(path, &name));
            }
        }
    }
    for required in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !fields.contains_key(required) {
            found
                .errors
                .push(FieldError::required(child(path, required), ""));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A HelmRelease-like schema: a required interval, an enum, an
    /// integer with bounds, a map of strings, a list of objects, a
    /// preserved `values` and a default.
    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "spec": {"type": "object", "required": ["interval", "chart"], "properties": {
                "interval": {"type": "string", "pattern": "^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"},
                "chart": {"type": "object", "properties": {"spec": {"type": "object", "properties": {
                    "chart": {"type": "string", "maxLength": 10}}}}},
                "mode": {"type": "string", "enum": ["Install", "Upgrade"]},
                "replicas": {"type": "integer", "minimum": 0, "maximum": 10},
                "port": {"x-kubernetes-int-or-string": true},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "targets": {"type": "array", "maxItems": 2, "items": {"type": "object",
                    "required": ["name"], "properties": {"name": {"type": "string"}}}},
                "values": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "suspend": {"type": "boolean", "default": false},
                "note": {"type": "string", "nullable": true}
            }},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
        }})
    }

    fn release(spec: Value) -> Value {
        json!({"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
               "metadata": {"name": "podinfo", "namespace": "apps", "labels": {"a": "b"}},
               "spec": spec})
    }

    fn errors(spec: Value) -> Vec<String> {
        let mut object = release(spec);
        admit(&schema(), &mut object)
            .errors
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn good() -> Value {
        json!({"interval": "5m", "chart": {"spec": {"chart": "podinfo"}}})
    }

    /// "Validation": each rule broken alone is one error worded as the
    /// API server words it; the good object (the control) has none.
    #[test]
    fn each_rule_of_the_schema_refuses_with_the_api_servers_words() {
        assert_eq!(errors(good()), Vec::<String>::new());
        let with = |field: &str, value: Value| {
            let mut spec = good();
            spec[field] = value;
            errors(spec)
        };
        assert_eq!(
            errors(json!({"chart": {}})),
            ["spec.interval: Required value"]
        );
        assert_eq!(
            with("replicas", json!("three")),
            [
                "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\""
            ]
        );
        assert_eq!(
            with("mode", json!("Delete")),
            [
                "spec.mode: Unsupported value: \"Delete\": supported values: \"Install\", \"Upgrade\""
            ]
        );
        assert_eq!(
            with("replicas", json!(11)),
            [
                "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10"
            ]
        );
        assert_eq!(
            with("replicas", json!(-1)),
            [
                "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0"
            ]
        );
        assert_eq!(
            with("interval", json!("soon")),
            [
                "spec.interval: Invalid value: \"soon\": spec.interval in body should match '^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$'"
            ]
        );
        assert_eq!(
            with("targets", json!([{"name": "a"}, {}])),
            ["spec.targets[1].name: Required value"]
        );
        assert_eq!(
            with(
                "targets",
                json!([{"name": "a"}, {"name": "b"}, {"name": "c"}])
            ),
            ["spec.targets: Invalid value: 3: spec.targets in body should have at most 2 items"]
        );
        assert_eq!(
            with("labels", json!({"team": 7})),
            [
                "spec.labels.team: Invalid value: \"integer\": spec.labels.team in body must be of type string: \"integer\""
            ]
        );
        assert_eq!(
            with("chart", json!({"spec": {"chart": "a-very-long-chart"}})),
            ["spec.chart.spec.chart: Too long: may not be more than 10 bytes"]
        );
        assert_eq!(with("port", json!(80)), Vec::<String>::new());
        assert_eq!(with("port", json!("http")), Vec::<String>::new());
        assert_eq!(
            with("port", json!(true)),
            [
                "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\""
            ]
        );
    }

    /// "Field pruning" and "Defaulting and Nullable": unknown fields go
    /// (but not under `x-kubernetes-preserve-unknown-fields`, nor the
    /// root's apiVersion, kind and metadata), a default fills a missing
    /// field, a `null` goes where not nullable and stays where it is.
    /// Control: a field the schema knows is kept as written.
    #[test]
    fn unknown_fields_are_pruned_and_defaults_set() {
        let mut spec = good();
        spec["surprise"] = json!(1);
        spec["values"] = json!({"anything": {"goes": true}});
        spec["chart"]["spec"]["version"] = json!("6.x");
        spec["mode"] = json!(null);
        spec["note"] = json!(null);
        let mut object = release(spec);
        object["extra"] = json!("top");
        let admitted = admit(&schema(), &mut object);
        assert!(admitted.errors.is_empty());
        assert_eq!(
            admitted.pruned,
            ["spec.chart.spec.version", "spec.surprise", "extra"]
        );
        assert_eq!(object["spec"].get("surprise"), None);
        assert_eq!(object.get("extra"), None);
        assert_eq!(object["spec"]["chart"]["spec"], json!({"chart": "podinfo"}));
        assert_eq!(
            object["spec"]["values"],
            json!({"anything": {"goes": true}})
        );
        assert_eq!(object["spec"]["suspend"], json!(false), "defaulted");
        assert_eq!(object["spec"].get("mode"), None, "null pruned");
        assert_eq!(object["spec"]["note"], Value::Null, "nullable keeps null");
        assert_eq!(object["spec"]["interval"], "5m");
        assert_eq!(object["metadata"]["labels"], json!({"a": "b"}));
        assert_eq!(object["kind"], "HelmRelease");
    }
}
