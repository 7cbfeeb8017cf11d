//! The server-side Table of a custom resource, as apiextensions-apiserver's
//! table convertor (`pkg/registry/customresource/tableconvertor`) builds
//! it from the served version's `additionalPrinterColumns` ("Additional
//! printer columns" on the page "Extend the Kubernetes API with
//! CustomResourceDefinitions"): a `Name` column, then each declared
//! column in order, its JSONPath evaluated on the object ([`JsonPath`])
//! and its cell typed by the column's `type`. A version that declares no
//! columns gets the one the API server defaults (`Age`, a `date` of
//! `.metadata.creationTimestamp`); one that declares some gets no `Age`
//! unless it asks for it.

use serde_json::{Value, json};

use super::jsonpath::JsonPath;
use drillbench_sim::EPOCH_SECONDS;

/// `ObjectMeta.name`'s description, which the API server gives the `Name`
/// column (`swaggerMetadataDescriptions["name"]`).
const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

/// `ObjectMeta.creationTimestamp`'s, for the defaulted `Age` column.
const CREATED_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// A version's columns after `Name`.
#[derive(Debug, Clone)]
pub(super) struct Columns {
    columns: Vec<Column>,
}

#[derive(Debug, Clone)]
struct Column {
    /// The column's definition as the Table sends it.
    definition: Value,
    kind: String,
    /// `None` when the path does not parse: the cell is empty.
    path: Option<JsonPath>,
}

impl Columns {
    /// The columns of one `spec.versions[]` entry of a definition.
    pub(super) fn of_version(version: &Value) -> Columns {
        let declared = version
            .get("additionalPrinterColumns")
            .and_then(Value::as_array)
            .filter(|c| !c.is_empty());
        let columns = match declared {
            Some(declared) => declared.iter().map(Column::declared).collect(),
            // apiextensions-apiserver's `serveDefaultColumnsIfEmpty`.
            None => vec![Column {
                definition: json!({"name": "Age", "type": "date", "format": "",
                                   "description": CREATED_DESCRIPTION, "priority": 0}),
                kind: "date".to_owned(),
                path: JsonPath::parse(".metadata.creationTimestamp").ok(),
            }],
        };
        Columns { columns }
    }

    /// `columnDefinitions`: `Name`, then the version's.
    pub(super) fn definitions(&self) -> Vec<Value> {
        let name = json!({"name": "Name", "type": "string", "format": "name",
                          "description": NAME_DESCRIPTION, "priority": 0});
        std::iter::once(name)
            .chain(self.columns.iter().map(|c| c.definition.clone()))
            .collect()
    }

    /// One row's cells: the name, then each column's value (`null` when
    /// the path finds nothing or the value is not of the column's type).
    pub(super) fn cells(&self, object: &Value, now_ms: u64) -> Vec<Value> {
        let name = object
            .pointer("/metadata/name")
            .cloned()
            .unwrap_or_else(|| json!(""));
        std::iter::once(name)
            .chain(self.columns.iter().map(|c| c.cell(object, now_ms)))
            .collect()
    }

    /// A Table of `objects`, at `resource_version`.
    pub(super) fn table(&self, objects: &[Value], resource_version: &str, now_ms: u64) -> Value {
        let rows: Vec<Value> = objects
            .iter()
            .map(|o| json!({"cells": self.cells(o, now_ms), "object": o}))
            .collect();
        json!({
            "kind": "Table", "apiVersion": "meta.k8s.io/v1",
            "metadata": {"resourceVersion": resource_version},
            "columnDefinitions": self.definitions(),
            "rows": rows,
        })
    }
}

impl Column {
    /// `tableconvertor.New`: the declared name, type, format and priority;
    /// the description, or one naming the path.
    fn declared(column: &Value) -> Column {
        let text = |field: &str| column.get(field).and_then(Value::as_str).unwrap_or("");
        let path = text("jsonPath");
        let description = match text("description") {
            "" => format!("Custom resource definition column (in JSONPath format): {path}"),
            given => given.to_owned(),
        };
        Column {
            definition: json!({
                "name": text("name"), "type": text("type"), "format": text("format"),
                "description": description,
                "priority": column.get("priority").and_then(Value::as_i64).unwrap_or(0),
            }),
            kind: text("type").to_owned(),
            path: JsonPath::parse(path).ok(),
        }
    }

    fn cell(&self, object: &Value, now_ms: u64) -> Value {
        let Some(value) = self.path.as_ref().and_then(|p| p.first(object)) else {
            return Value::Null;
        };
        match self.kind.as_str() {
            // A string column prints whatever it finds, as the JSONPath
            // printer does (`column.PrintResults`).
            "string" => json!(print(value)),
            kind => typed_cell(kind, value, now_ms),
        }
    }
}

/// `cellForJSONValue`: the value as the column's type, `null` when it is
/// not of it.
fn typed_cell(kind: &str, value: &Value, now_ms: u64) -> Value {
    match (kind, value) {
        ("integer", Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .map_or(Value::Null, |i| json!(i)),
        ("number", Value::Number(n)) => n.as_f64().map_or(Value::Null, go_float_json),
        ("boolean", Value::Bool(b)) => json!(b),
        ("date", Value::String(s)) => json!(human_date(s, now_ms)),
        _ => Value::Null,
    }
}

/// A float64 as Go's `encoding/json` writes it: an integral value without
/// a fraction (`3`, not `3.0`).
fn go_float_json(f: f64) -> Value {
    if f.fract() == 0.0 && f.abs() < 1e21 {
        json!(f as i64)
    } else {
        json!(f)
    }
}

/// A value as client-go's JSONPath printer prints one result: a string
/// bare, a number as Go's `fmt.Fprint` does (an integer as decimal, a
/// float with `%v`), a map or list as JSON.
fn print(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.to_string(),
            None => n.as_f64().map(go_float).unwrap_or_else(|| n.to_string()),
        },
        Value::Bool(b) => b.to_string(),
        Value::Null => "<nil>".to_owned(),
        other => other.to_string(),
    }
}

/// Go's `%v` of a float64 (`%g` with the shortest digits that read
/// back): exponent form when the exponent is below -4 or at least 6.
fn go_float(f: f64) -> String {
    if f == 0.0 {
        return "0".to_owned();
    }
    let exponent = f.abs().log10().floor() as i32;
    if (-4..6).contains(&exponent) {
        format!("{f}")
    } else {
        let text = format!("{f:e}");
        match text.split_once('e') {
            Some((mantissa, exp)) => {
                let exp: i32 = exp.parse().unwrap_or(0);
                let sign = if exp < 0 { '-' } else { '+' };
                format!("{mantissa}e{sign}{:02}", exp.abs())
            }
            None => text,
        }
    }
}

/// `ConvertToHumanReadableDateType`: an RFC 3339 time as its age
/// (`<invalid>` when it does not parse, `<unknown>` when it is empty).
fn human_date(text: &str, now_ms: u64) -> String {
    if text.is_empty() || text == "null" {
        return "<unknown>".to_owned();
    }
    let Ok(created) = text.parse::<jiff::Timestamp>() else {
        return "<invalid>".to_owned();
    };
    let now_ms = EPOCH_SECONDS.saturating_mul(1000) + now_ms as i64;
    human_duration((now_ms - created.as_millisecond()) / 1000)
}

/// apimachinery's `duration.HumanDuration` of whole seconds (the
/// seconds truncated, as `int(d.Seconds())` is).
pub(super) fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".to_owned();
    }
    if seconds < 0 {
        return "0s".to_owned();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        return match seconds % 60 {
            0 => format!("{minutes}m"),
            s => format!("{minutes}m{s}s"),
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        return match minutes % 60 {
            0 => format!("{hours}h"),
            m => format!("{hours}h{m}m"),
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        return match hours % 24 {
            0 => format!("{}d", hours / 24),
            h => format!("{}d{h}h", hours / 24),
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        return match (hours / 24) % 365 {
            0 => format!("{}y", hours / 24 / 365),
            d => format!("{}y{d}d", hours / 24 / 365),
        };
    }
    format!("{}y", hours / 24 / 365)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The docs page's CronTab columns (`Spec`, `Replicas`, `Age`) and
    /// Flux's Ready condition; each cell paired with an object that lacks
    /// the field (a `null` cell).
    #[test]
    fn declared_columns_are_typed_as_the_api_server_types_them() {
        let version = json!({"name": "v1", "additionalPrinterColumns": [
            {"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"},
            {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
            {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status",
             "description": "whether it is ready", "priority": 1},
            {"name": "Ratio", "type": "number", "jsonPath": ".spec.ratio"},
            {"name": "Suspended", "type": "boolean", "jsonPath": ".spec.suspend"},
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
            {"name": "Image", "type": "string", "jsonPath": ".spec.image"}
        ]});
        let columns = Columns::of_version(&version);
        let definitions = columns.definitions();
        let names: Vec<&str> = definitions
            .iter()
            .map(|d| d["name"].as_str().unwrap_or_default())
            .collect();
        assert_eq!(
            names,
            [
                "Name",
                "Spec",
                "Replicas",
                "Ready",
                "Ratio",
                "Suspended",
                "Age",
                "Image"
            ]
        );
        assert_eq!(definitions[0]["format"], "name");
        assert_eq!(
            definitions[1]["description"],
            "Custom resource definition column (in JSONPath format): .spec.cronSpec"
        );
        assert_eq!(definitions[3]["description"], "whether it is ready");
        assert_eq!(definitions[3]["priority"], 1);
        let object = json!({
            "metadata": {"name": "my-new-cron-object", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"cronSpec": "* * * * */5", "replicas": 3, "ratio": 2.0, "suspend": false,
                     "image": 7},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}
        });
        let cells = columns.cells(&object, 90 * 60_000);
        assert_eq!(
            cells,
            [
                json!("my-new-cron-object"),
                json!("* * * * */5"),
                json!(3),
                json!("True"),
                json!(2),
                json!(false),
                json!("90m"),
                json!("7")
            ]
        );
        let bare = json!({"metadata": {"name": "bare"}, "spec": {"replicas": "three"}});
        let cells = columns.cells(&bare, 0);
        assert_eq!(cells[0], "bare");
        assert!(cells[1..].iter().all(Value::is_null), "{cells:?}");
    }

    /// No declared columns: `Age` alone (the API server's default).
    /// Control: declared columns bring no `Age` of their own.
    #[test]
    fn a_version_without_columns_gets_age() {
        let columns = Columns::of_version(&json!({"name": "v1"}));
        let definitions = columns.definitions();
        assert_eq!(definitions.len(), 2);
        assert_eq!(
            (&definitions[1]["name"], &definitions[1]["type"]),
            (&json!("Age"), &json!("date"))
        );
        let object =
            json!({"metadata": {"name": "a", "creationTimestamp": "2026-01-01T00:00:00Z"}});
        assert_eq!(columns.cells(&object, 300_000)[1], "5m");
        let declared = Columns::of_version(&json!({"additionalPrinterColumns": [
            {"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"}]}));
        assert_eq!(declared.definitions().len(), 2);
        assert_eq!(declared.definitions()[1]["name"], "Spec");
    }

    #[test]
    fn dates_read_as_human_durations() {
        assert_eq!(human_date("not a time", 0), "<invalid>");
        assert_eq!(human_date("", 0), "<unknown>");
        for (seconds, text) in [
            (-5, "<invalid>"),
            (-1, "0s"),
            (119, "119s"),
            (300, "5m"),
            (301, "5m1s"),
            (3 * 3600 + 60, "3h1m"),
            (10 * 3600, "10h"),
            (3 * 86_400 + 3600, "3d1h"),
            (30 * 86_400, "30d"),
            (3 * 365 * 86_400 + 86_400, "3y1d"),
            (9 * 365 * 86_400, "9y"),
        ] {
            assert_eq!(human_duration(seconds), text, "{seconds}");
        }
    }

    #[test]
    fn numbers_print_as_go_prints_them() {
        assert_eq!(print(&json!(1.5)), "1.5");
        assert_eq!(print(&json!(100_000.0)), "100000");
        assert_eq!(print(&json!(100_000_000.0)), "1e+08");
        assert_eq!(print(&json!(2_500_000.5)), "2.5000005e+06");
        assert_eq!(print(&json!(1e21)), "1e+21");
        assert_eq!(print(&json!(0.00001)), "1e-05");
        assert_eq!(print(&json!({"a": 1})), "{\"a\":1}");
    }
}
