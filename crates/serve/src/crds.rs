//! CustomResourceDefinitions (`apiextensions.k8s.io/v1`) and the custom
//! resources they serve, as "Extend the Kubernetes API with
//! CustomResourceDefinitions" describes them: a stored definition serves
//! a REST path per served version (namespaced or cluster-scoped, with its
//! short names, categories, `status` and `scale` subresources and
//! printer columns, `super::crd_table`), its objects are
//! stored as written after validation against the version's
//! `openAPIV3Schema` (`super::crd_schema`), and deleting the definition
//! deletes them. Nothing runs them: the simulator gives custom resources
//! no behaviour (a ClusterPolicy written through the API is stored, not
//! enforced; the drill's own policies are what admission runs).

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde_json::{Value, json};

use super::api::ApiError;
use super::cluster::Cluster;
use super::crd_schema;
use super::crd_table;
use super::history::Key;
use super::objects::stamp;
use super::resources::Resource;
use super::written::Written;

/// The kind of the definitions themselves.
pub(super) const CRD_KIND: &str = "CustomResourceDefinition";

/// What one served version of a definition looks like as a `Resource`,
/// owned, so equal definitions share one interned `Resource`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Shape {
    group: String,
    version: String,
    plural: String,
    singular: String,
    kind: String,
    namespaced: bool,
    short: Vec<String>,
    categories: Vec<String>,
    status: bool,
    scale: bool,
}

/// Every shape ever served, leaked once: the façade's resources are
/// `&'static` (watchers and the change log hold them), and a definition
/// applied again, a dry run's copy or a reset finds the one it had, so
/// what is leaked is bounded by the distinct definitions a server saw.
static INTERNED: Mutex<BTreeMap<Shape, &'static Resource>> = Mutex::new(BTreeMap::new());

fn leak(text: &str) -> &'static str {
    Box::leak(text.to_owned().into_boxed_str())
}

fn leak_all(texts: &[String]) -> &'static [&'static str] {
    let leaked: Vec<&'static str> = texts.iter().map(|t| leak(t)).collect();
    Box::leak(leaked.into_boxed_slice())
}

fn intern(shape: Shape) -> &'static Resource {
    let mut interned = INTERNED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(resource) = interned.get(&shape) {
        return resource;
    }
    let resource: &'static Resource = Box::leak(Box::new(Resource {
        group: leak(&shape.group),
        version: leak(&shape.version),
        plural: leak(&shape.plural),
        singular: leak(&shape.singular),
        kind: leak(&shape.kind),
        namespaced: shape.namespaced,
        short: leak_all(&shape.short),
        subresources: match (shape.scale, shape.status) {
            (true, true) => &["scale", "status"],
            (true, false) => &["scale"],
            (false, true) => &["status"],
            (false, false) => &[],
        },
        writable: true,
        key: leak(&format!("{}.{}", shape.kind, shape.group)),
        categories: leak_all(&shape.categories),
    }));
    interned.insert(shape, resource);
    resource
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// The resources a stored definition serves, one per served version, in
/// the order its versions are listed.
pub(super) fn served_by(crd: &Value) -> Vec<&'static Resource> {
    resources_of(crd, true)
}

/// The resources of a definition's versions, all or the served ones.
fn resources_of(crd: &Value, only_served: bool) -> Vec<&'static Resource> {
    let text = |pointer: &str| {
        crd.pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let plural = text("/spec/names/plural");
    let kind = text("/spec/names/kind");
    let singular = match text("/spec/names/singular") {
        s if s.is_empty() => kind.to_lowercase(),
        s => s,
    };
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| !only_served || v.get("served").and_then(Value::as_bool).unwrap_or(false))
        .map(|v| {
            intern(Shape {
                group: text("/spec/group"),
                version: v["name"].as_str().unwrap_or_default().to_owned(),
                plural: plural.clone(),
                singular: singular.clone(),
                kind: kind.clone(),
                namespaced: text("/spec/scope") == "Namespaced",
                short: strings(crd.pointer("/spec/names/shortNames")),
                categories: strings(crd.pointer("/spec/names/categories")),
                status: v.pointer("/subresources/status").is_some(),
                scale: v.pointer("/subresources/scale").is_some(),
            })
        })
        .collect()
}

/// The stored definitions, by name.
pub(super) fn definitions(written: &Written) -> impl Iterator<Item = &Value> {
    written.declared_of_kind(CRD_KIND)
}

/// Every custom resource served, by group, then by the group's version
/// priority (`version_order`), then by plural.
pub(super) fn all(written: &Written) -> Vec<&'static Resource> {
    let mut served: Vec<&'static Resource> = definitions(written).flat_map(served_by).collect();
    served.sort_by(|a, b| {
        (a.group, version_order(a.version), a.plural).cmp(&(
            b.group,
            version_order(b.version),
            b.plural,
        ))
    });
    served
}

/// The custom resource at `/apis/GROUP/VERSION/PLURAL`, if a definition
/// serves it.
pub(super) fn find(
    written: &Written,
    group: &str,
    version: &str,
    plural: &str,
) -> Option<&'static Resource> {
    definitions(written)
        .flat_map(served_by)
        .find(|r| r.group == group && r.version == version && r.plural == plural)
}

/// The groups custom resources are served under, with their versions in
/// priority order (the first is the preferred one).
pub(super) fn groups(written: &Written) -> Vec<(&'static str, Vec<&'static str>)> {
    let mut groups: Vec<(&'static str, Vec<&'static str>)> = Vec::new();
    for r in all(written) {
        match groups.iter_mut().find(|(g, _)| *g == r.group) {
            Some((_, versions)) => {
                if !versions.contains(&r.version) {
                    versions.push(r.version);
                }
            }
            None => groups.push((r.group, vec![r.version])),
        }
    }
    groups
}

/// How the API server orders a group's versions (apimachinery's
/// `version.CompareKubeAwareVersionStrings`): GA before beta before
/// alpha, a higher major and then minor first, and versions that do not
/// look like Kubernetes versions last, alphabetically.
pub(super) fn version_order(
    version: &str,
) -> (u8, std::cmp::Reverse<u64>, std::cmp::Reverse<u64>, String) {
    let parsed = version.strip_prefix('v').and_then(|rest| {
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let major: u64 = digits.parse().ok()?;
        let tail = &rest[digits.len()..];
        if tail.is_empty() {
            return Some((0, major, 0));
        }
        for (stage, name) in [(1, "beta"), (2, "alpha")] {
            if let Some(minor) = tail.strip_prefix(name)
                && let Ok(minor) = minor.parse::<u64>()
            {
                return Some((stage, major, minor));
            }
        }
        None
    });
    match parsed {
        Some((stage, major, minor)) => (
            stage,
            std::cmp::Reverse(major),
            std::cmp::Reverse(minor),
            String::new(),
        ),
        None => (
            3,
            std::cmp::Reverse(0),
            std::cmp::Reverse(0),
            version.to_owned(),
        ),
    }
}

/// The definition that serves a custom resource.
fn definition_of<'a>(written: &'a Written, resource: &Resource) -> Option<&'a Value> {
    written.declared(&(
        CRD_KIND,
        String::new(),
        format!("{}.{}", resource.plural, resource.group),
    ))
}

/// The `openAPIV3Schema` of the version a custom resource is served at.
pub(super) fn schema_of(written: &Written, resource: &Resource) -> Option<Value> {
    version_of(definition_of(written, resource)?, resource.version)?
        .pointer("/schema/openAPIV3Schema")
        .cloned()
}

/// The printer columns of the version a custom resource is served at
/// (`None` for a built-in kind, printed by `super::table`).
pub(super) fn columns_of(written: &Written, resource: &Resource) -> Option<crd_table::Columns> {
    if !resource.is_custom() {
        return None;
    }
    let version = version_of(definition_of(written, resource)?, resource.version)?;
    Some(crd_table::Columns::of_version(version))
}

/// Where a version's `subresources.scale` reads and writes a Scale's
/// fields ("Scale subresource" on the CRD page): `.`-separated paths
/// without array notation.
struct ScalePaths {
    spec_replicas: String,
    status_replicas: String,
    label_selector: String,
}

fn scale_paths(written: &Written, resource: &Resource) -> Option<ScalePaths> {
    let version = version_of(definition_of(written, resource)?, resource.version)?;
    let scale = version.pointer("/subresources/scale")?;
    let text = |field: &str| {
        scale
            .get(field)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    Some(ScalePaths {
        spec_replicas: text("specReplicasPath"),
        status_replicas: text("statusReplicasPath"),
        label_selector: text("labelSelectorPath"),
    })
}

/// Where a custom resource keeps its Scale's `.spec.replicas` (its
/// version's `specReplicasPath`), when it has a scale subresource.
pub(super) fn spec_replicas_path(written: &Written, resource: &Resource) -> Option<String> {
    scale_paths(written, resource).map(|p| p.spec_replicas)
}

/// The fields of a path (`.spec.replicas`), as apiextensions-apiserver's
/// `splitReplicasPath` splits it.
fn fields_of(path: &str) -> Vec<&str> {
    path.strip_prefix('.').unwrap_or(path).split('.').collect()
}

fn nested<'v>(object: &'v Value, path: &str) -> Option<&'v Value> {
    fields_of(path)
        .into_iter()
        .try_fold(object, |value, field| value.get(field))
}

/// apimachinery's `NestedInt64`: absent is `None`, another type an error
/// worded as its accessor's.
fn nested_int(object: &Value, path: &str) -> Result<Option<i64>, ApiError> {
    match nested(object, path) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) if n.is_i64() => Ok(n.as_i64()),
        Some(other) => Err(ApiError::internal(format!(
            "{path} accessor error: {} is of the type {}, expected int64",
            go_print(other),
            go_type(other)
        ))),
    }
}

/// A value as Go's `%v` prints a decoded JSON value.
fn go_print(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A decoded JSON value's Go type, as `%T` names it.
fn go_type(value: &Value) -> &'static str {
    match value {
        Value::String(_) => "string",
        Value::Number(n) if n.is_i64() => "int64",
        Value::Number(_) => "float64",
        Value::Bool(_) => "bool",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
        Value::Null => "<nil>",
    }
}

/// apiextensions-apiserver's `scaleFromCustomResource`: the object's
/// replicas and selector as an `autoscaling/v1` Scale, and whether the
/// spec's replicas were there (a missing status count is 0, a missing
/// selector empty).
fn custom_scale(paths: &ScalePaths, object: &Value) -> Result<(Value, bool), ApiError> {
    let spec = nested_int(object, &paths.spec_replicas)?;
    let status = nested_int(object, &paths.status_replicas)?.unwrap_or(0);
    let selector = if paths.label_selector.is_empty() {
        String::new()
    } else {
        match nested(object, &paths.label_selector) {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                return Err(ApiError::internal(format!(
                    "{} accessor error: {} is of the type {}, expected string",
                    paths.label_selector,
                    go_print(other),
                    go_type(other)
                )));
            }
        }
    };
    let mut metadata = json!({"name": object.pointer("/metadata/name")});
    for field in ["namespace", "uid", "resourceVersion", "creationTimestamp"] {
        if let Some(value) = object
            .pointer(&format!("/metadata/{field}"))
            .filter(|v| !v.is_null() && *v != "")
        {
            metadata[field] = value.clone();
        }
    }
    let scale = json!({
        "kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": metadata,
        "spec": {"replicas": spec.unwrap_or(0)},
        "status": {"replicas": status, "selector": selector},
    });
    Ok((scale, spec.is_some()))
}

/// `GET .../scale` of a custom object (`ScaleREST.Get`): a `500` when the
/// spec's replicas are missing, as the API server answers.
pub(super) fn scale_of(
    written: &Written,
    resource: &Resource,
    object: &Value,
) -> Result<Value, ApiError> {
    let paths = scale_paths(written, resource).ok_or_else(ApiError::no_such_path)?;
    match custom_scale(&paths, object)? {
        (scale, true) => Ok(scale),
        (_, false) => Err(ApiError::internal(format!(
            "the spec replicas field \"{}\" does not exist",
            paths.spec_replicas
        ))),
    }
}

/// The smallest int32: `scaleUpdatedObjectInfo`'s mark for replicas a
/// custom object did not have, so an update that does not set them is
/// refused rather than read as 0.
const UNSET_REPLICAS: i64 = i32::MIN as i64;

/// The Scale a PUT or PATCH of `.../scale` starts from: the object's, with
/// replicas it lacks marked unset.
pub(super) fn scale_to_update(
    written: &Written,
    resource: &Resource,
    object: &Value,
) -> Result<Value, ApiError> {
    let paths = scale_paths(written, resource).ok_or_else(ApiError::no_such_path)?;
    let (mut scale, found) = custom_scale(&paths, object)?;
    if !found {
        scale["spec"]["replicas"] = json!(UNSET_REPLICAS);
    }
    Ok(scale)
}

/// The custom object a Scale update makes of `current`
/// (`scaleUpdatedObjectInfo.UpdatedObject`): its replicas written at the
/// spec's path, after the Scale is checked as `ValidateScale` checks it.
pub(super) fn scaled(
    written: &Written,
    resource: &Resource,
    current: &Value,
    scale: &Value,
) -> Result<Value, ApiError> {
    let paths = scale_paths(written, resource).ok_or_else(ApiError::no_such_path)?;
    let name = current
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let replicas = match scale.pointer("/spec/replicas") {
        None | Some(Value::Null) => 0,
        Some(Value::Number(n)) if n.as_i64().is_some_and(|r| i32::try_from(r).is_ok()) => {
            n.as_i64().unwrap_or(0)
        }
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "Scale in version \"v1\" cannot be handled as a Scale: json: cannot unmarshal {} into Go struct field ScaleSpec.spec.replicas of type int32",
                match other {
                    Value::String(_) => "string",
                    Value::Number(_) => "number",
                    Value::Bool(_) => "bool",
                    Value::Array(_) => "array",
                    _ => "object",
                }
            )));
        }
    };
    if replicas == UNSET_REPLICAS {
        return Err(ApiError::bad_request(format!(
            "the spec replicas field \"{}\" cannot be empty",
            paths.spec_replicas
        )));
    }
    if replicas < 0 {
        return Err(invalid(
            "Scale",
            "autoscaling",
            name,
            &[FieldError::invalid(
                "spec.replicas".to_owned(),
                &json!(replicas),
                "must be greater than or equal to 0",
            )],
        ));
    }
    let mut object = current.clone();
    let fields = fields_of(&paths.spec_replicas);
    let Some((last, parents)) = fields.split_last() else {
        return Err(ApiError::no_such_path());
    };
    let mut at = &mut object;
    for field in parents {
        if !at.get(*field).is_some_and(Value::is_object) {
            at[*field] = json!({});
        }
        at = &mut at[*field];
    }
    at[*last] = json!(replicas);
    if let Some(rv) = scale.pointer("/metadata/resourceVersion") {
        object["metadata"]["resourceVersion"] = rv.clone();
    }
    Ok(object)
}

fn version_of<'a>(crd: &'a Value, version: &str) -> Option<&'a Value> {
    crd.pointer("/spec/versions")?
        .as_array()?
        .iter()
        .find(|v| v["name"] == version)
}

/// A custom object as a client of `resource`'s version reads it: the
/// definitions here convert with the `None` strategy, which changes
/// nothing but `apiVersion`.
pub(super) fn as_version(resource: &Resource, object: &mut Value) {
    if resource.is_custom() && object.is_object() {
        object["apiVersion"] = json!(resource.api_version());
    }
}

/// `Kind.group "NAME" is invalid: ` and the field errors, with the
/// Status details kubectl prints them from (apimachinery's
/// `NewInvalid`).
pub(super) fn invalid(
    resource_kind: &str,
    group: &str,
    name: &str,
    errors: &[FieldError],
) -> ApiError {
    let qualified = if group.is_empty() {
        resource_kind.to_owned()
    } else {
        format!("{resource_kind}.{group}")
    };
    let messages: Vec<String> = errors.iter().map(FieldError::to_string).collect();
    let detail = if messages.len() == 1 {
        messages[0].clone()
    } else {
        format!("[{}]", messages.join(", "))
    };
    let causes: Vec<Value> = errors
        .iter()
        .map(|e| json!({"reason": e.reason, "message": e.message(), "field": e.field}))
        .collect();
    ApiError::invalid(format!("{qualified} \"{name}\" is invalid: {detail}")).with_details(
        json!({"name": name, "group": group, "kind": resource_kind, "causes": causes}),
    )
}

/// One of apimachinery's `field.Error`s.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FieldError {
    /// The field path (`spec.versions[0].name`).
    pub(super) field: String,
    /// The `CauseType` (`FieldValueRequired`, `FieldValueInvalid`, ...).
    pub(super) reason: &'static str,
    /// What `Error()` says after the field, e.g. `Required value`.
    pub(super) body: String,
}

impl FieldError {
    pub(super) fn required(field: String, detail: &str) -> FieldError {
        let body = if detail.is_empty() {
            "Required value".to_owned()
        } else {
            format!("Required value: {detail}")
        };
        FieldError {
            field,
            reason: "FieldValueRequired",
            body,
        }
    }

    pub(super) fn invalid(field: String, value: &Value, detail: &str) -> FieldError {
        FieldError {
            field,
            reason: "FieldValueInvalid",
            body: format!("Invalid value: {}: {detail}", go_value(value)),
        }
    }

    /// `field.TypeInvalid`: worded like an invalid value.
    pub(super) fn type_invalid(field: String, value: &Value, detail: &str) -> FieldError {
        FieldError {
            reason: "FieldValueTypeInvalid",
            ..FieldError::invalid(field, value, detail)
        }
    }

    pub(super) fn not_supported(field: String, value: &Value, supported: &[String]) -> FieldError {
        let quoted: Vec<String> = supported.iter().map(|s| format!("\"{s}\"")).collect();
        FieldError {
            field,
            reason: "FieldValueNotSupported",
            body: format!(
                "Unsupported value: {}: supported values: {}",
                go_value(value),
                quoted.join(", ")
            ),
        }
    }

    fn message(&self) -> String {
        self.body.clone()
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.body)
    }
}

/// A value as apimachinery's field errors print it (`%#v` of the
/// decoded value): a string quoted, a number or boolean bare, anything
/// else as JSON.
pub(super) fn go_value(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{s:?}"),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".to_owned(),
        other => other.to_string(),
    }
}

/// Checks a definition as the API server's CRD validation does for what
/// the façade relies on (`ValidateCustomResourceDefinition` in
/// apiextensions-apiserver's `validation.go`): the name is
/// `plural.group`, the names and scope are given, at least one version,
/// exactly one of them the storage version, every version has a schema
/// (required in `apiextensions.k8s.io/v1`), and its printer columns and
/// scale subresource name what the table and `/scale` can read
/// (`ValidateCustomResourceColumnDefinition`,
/// `ValidateCustomResourceDefinitionSubresources`).
pub(super) fn validate_definition(name: &str, crd: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let text = |pointer: &str| {
        crd.pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let (group, plural, kind) = (
        text("/spec/group"),
        text("/spec/names/plural"),
        text("/spec/names/kind"),
    );
    if group.is_empty() {
        errors.push(FieldError::required("spec.group".to_owned(), ""));
    } else if !group.contains('.') {
        errors.push(FieldError::invalid(
            "spec.group".to_owned(),
            &json!(group),
            "should be a domain with at least one dot",
        ));
    }
    if plural.is_empty() {
        errors.push(FieldError::required("spec.names.plural".to_owned(), ""));
    }
    if kind.is_empty() {
        errors.push(FieldError::required("spec.names.kind".to_owned(), ""));
    }
    if !plural.is_empty() && !group.is_empty() && name != format!("{plural}.{group}") {
        errors.push(FieldError::invalid(
            "metadata.name".to_owned(),
            &json!(name),
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    let scope = crd.pointer("/spec/scope").cloned().unwrap_or(Value::Null);
    if scope != "Namespaced" && scope != "Cluster" {
        if scope.is_null() {
            errors.push(FieldError::required("spec.scope".to_owned(), ""));
        } else {
            errors.push(FieldError::not_supported(
                "spec.scope".to_owned(),
                &scope,
                &["Cluster".to_owned(), "Namespaced".to_owned()],
            ));
        }
    }
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if versions.is_empty() {
        errors.push(FieldError::invalid(
            "spec.versions".to_owned(),
            &json!([]),
            "must have exactly one version marked as storage version",
        ));
    } else if versions
        .iter()
        .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .count()
        != 1
    {
        errors.push(FieldError::invalid(
            "spec.versions".to_owned(),
            &json!(
                versions
                    .iter()
                    .map(|v| v["name"].clone())
                    .collect::<Vec<_>>()
            ),
            "must have exactly one version marked as storage version",
        ));
    }
    for (i, version) in versions.iter().enumerate() {
        if version
            .get("name")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            errors.push(FieldError::required(format!("spec.versions[{i}].name"), ""));
        }
        match version.pointer("/schema/openAPIV3Schema") {
            None | Some(Value::Null) => errors.push(FieldError::required(
                format!("spec.versions[{i}].schema.openAPIV3Schema"),
                "schemas are required",
            )),
            Some(schema) if schema.get("type").and_then(Value::as_str) != Some("object") => {
                errors.push(FieldError::invalid(
                    format!("spec.versions[{i}].schema.openAPIV3Schema.type"),
                    schema.get("type").unwrap_or(&Value::Null),
                    "must be object at the root",
                ));
            }
            Some(_) => {}
        }
        let columns = version
            .get("additionalPrinterColumns")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for (j, column) in columns.iter().enumerate() {
            validate_column(
                column,
                &format!("spec.versions[{i}].additionalPrinterColumns[{j}]"),
                &mut errors,
            );
        }
        if let Some(scale) = version.pointer("/subresources/scale") {
            validate_scale(
                scale,
                &format!("spec.versions[{i}].subresources"),
                &mut errors,
            );
        }
    }
    errors
}

/// `printerColumnDatatypes` and `customResourceColumnDefinitionFormats`,
/// in the sorted order their messages list them.
const COLUMN_TYPES: [&str; 5] = ["boolean", "date", "integer", "number", "string"];
const COLUMN_FORMATS: [&str; 8] = [
    "byte",
    "date",
    "date-time",
    "double",
    "float",
    "int32",
    "int64",
    "password",
];

/// `ValidateCustomResourceColumnDefinition`. (The internal type names the
/// path field `JSONPath`, and so do the API server's messages.)
fn validate_column(column: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let text = |key: &str| column.get(key).and_then(Value::as_str).unwrap_or_default();
    if text("name").is_empty() {
        errors.push(FieldError::required(format!("{at}.name"), ""));
    }
    let types = format!("must be one of {}", COLUMN_TYPES.join(","));
    match text("type") {
        "" => errors.push(FieldError::required(format!("{at}.type"), &types)),
        kind if !COLUMN_TYPES.contains(&kind) => errors.push(FieldError::invalid(
            format!("{at}.type"),
            &json!(kind),
            &types,
        )),
        _ => {}
    }
    let format = text("format");
    if !format.is_empty() && !COLUMN_FORMATS.contains(&format) {
        errors.push(FieldError::invalid(
            format!("{at}.format"),
            &json!(format),
            &format!("must be one of {}", COLUMN_FORMATS.join(",")),
        ));
    }
    match text("jsonPath") {
        "" => errors.push(FieldError::required(format!("{at}.JSONPath"), "")),
        path => validate_simple_path(path, &format!("{at}.JSONPath"), errors),
    }
}

/// `ValidateCustomResourceDefinitionSubresources` for `scale`: the
/// replicas paths are simple JSON paths under `.spec.` and `.status.`,
/// the selector's (when given) under either.
fn validate_scale(scale: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let text = |key: &str| scale.get(key).and_then(Value::as_str).unwrap_or_default();
    for (key, under, detail) in [
        (
            "specReplicasPath",
            &[".spec."][..],
            "should be a json path under .spec",
        ),
        (
            "statusReplicasPath",
            &[".status."][..],
            "should be a json path under .status",
        ),
        (
            "labelSelectorPath",
            &[".spec.", ".status."][..],
            "should be a json path under either .spec or .status",
        ),
    ] {
        let field = format!("{at}.scale.{key}");
        let path = text(key);
        if path.is_empty() {
            if key != "labelSelectorPath" {
                errors.push(FieldError::required(field, ""));
            }
            continue;
        }
        let before = errors.len();
        validate_simple_path(path, &field, errors);
        if errors.len() == before && !under.iter().any(|u| path.starts_with(u)) {
            errors.push(FieldError::invalid(field, &json!(path), detail));
        }
    }
}

/// `validateSimpleJSONPath`: a path in the dot notation, from `.`.
fn validate_simple_path(path: &str, field: &str, errors: &mut Vec<FieldError>) {
    if !path.starts_with('.') {
        errors.push(FieldError::invalid(
            field.to_owned(),
            &json!(path),
            "must be a simple json path starting with .",
        ));
    }
}

/// What the apiextensions controllers write into a definition's status
/// once its names are accepted and it serves (`NamesAccepted`,
/// `Established`), and the storage versions it ever had.
pub(super) fn with_status(crd: &mut Value, previous: Option<&Value>, now_ms: u64) {
    let since = json!(stamp(now_ms as i64));
    let mut stored: Vec<Value> = previous
        .and_then(|p| p.pointer("/status/storedVersions"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if let Some(storage) = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .and_then(|vs| vs.iter().find(|v| v["storage"] == true))
        .map(|v| v["name"].clone())
        && !stored.contains(&storage)
    {
        stored.push(storage);
    }
    let mut names = crd
        .pointer("/spec/names")
        .cloned()
        .unwrap_or_else(|| json!({}));
    if names.get("singular").is_none()
        && let Some(kind) = names.get("kind").and_then(Value::as_str)
    {
        names["singular"] = json!(kind.to_lowercase());
    }
    if names.get("listKind").is_none()
        && let Some(kind) = names.get("kind").and_then(Value::as_str)
    {
        names["listKind"] = json!(format!("{kind}List"));
    }
    crd["spec"]["names"] = names.clone();
    let condition = |kind: &str, reason: &str, message: &str| {
        json!({"type": kind, "status": "True", "lastTransitionTime": since,
               "reason": reason, "message": message})
    };
    crd["status"] = json!({
        "acceptedNames": names,
        "conditions": [
            condition("NamesAccepted", "NoConflicts", "no conflicts found"),
            condition("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        ],
        "storedVersions": stored,
    });
}

/// How a custom object is written.
#[derive(Debug, Default)]
pub(super) struct How<'a> {
    /// The subresource written (`status`), if any.
    pub(super) sub: Option<&'a str>,
    /// A create's time and uid.
    pub(super) created: Option<(u64, String)>,
    /// `fieldValidation=Strict`: an unknown field is refused rather than
    /// pruned.
    pub(super) strict: bool,
}

/// Whether a request asks for strict field validation (kubectl's
/// default, `--validate=strict`).
pub(super) fn is_strict(request: &super::api::Request) -> bool {
    request
        .query
        .get("fieldValidation")
        .is_some_and(|v| v == "Strict")
}

/// A custom object as the API server stores it: validated against the
/// version's schema, unknown fields pruned and defaults set
/// (`super::crd_schema`); with a status subresource, the main resource
/// keeps the stored status and the status subresource only changes the
/// status. `metadata.generation` goes up on a change of anything but
/// metadata (and status, when it is a subresource), as the custom
/// resource strategy's `PrepareForUpdate` does.
pub(super) fn admit_object(
    written: &Written,
    resource: &Resource,
    key: &Key,
    current: Option<&Value>,
    mut wanted: Value,
    how: How<'_>,
) -> Result<Value, ApiError> {
    let How {
        sub,
        created,
        strict,
    } = how;
    let status_sub = resource.subresources.contains(&"status");
    if let Some(current) = current {
        let kept_status = current.get("status").cloned();
        if sub == Some("status") {
            // Only the status changes through the subresource.
            let status = wanted.get("status").cloned();
            wanted = current.clone();
            match status {
                Some(s) => wanted["status"] = s,
                None => {
                    if let Some(o) = wanted.as_object_mut() {
                        o.remove("status");
                    }
                }
            }
        } else if status_sub {
            match kept_status {
                Some(s) => wanted["status"] = s,
                None => {
                    if let Some(o) = wanted.as_object_mut() {
                        o.remove("status");
                    }
                }
            }
        }
        for field in ["creationTimestamp", "uid", "namespace", "generation"] {
            if let Some(kept) = current.pointer(&format!("/metadata/{field}")) {
                wanted["metadata"][field] = kept.clone();
            }
        }
    } else if status_sub && let Some(o) = wanted.as_object_mut() {
        // A create through the main resource sets no status.
        o.remove("status");
    }
    if let Some(schema) = schema_of(written, resource) {
        let admitted = crd_schema::admit(&schema, &mut wanted);
        if strict && !admitted.pruned.is_empty() {
            // apiserver's `transformDecodeError` around the strict
            // decoder's error, as for a built-in kind.
            let unknown: Vec<String> = admitted
                .pruned
                .iter()
                .map(|p| format!("unknown field \"{p}\""))
                .collect();
            return Err(ApiError::bad_request(format!(
                "{kind} in version \"{version}\" cannot be handled as a {kind}: strict decoding error: {}",
                unknown.join(", "),
                kind = resource.kind,
                version = resource.version,
            )));
        }
        if !admitted.errors.is_empty() {
            return Err(invalid(
                resource.kind,
                resource.group,
                &key.2,
                &admitted.errors,
            ));
        }
    }
    super::history::strip_rv_mut(&mut wanted);
    as_version(resource, &mut wanted);
    match current {
        None => {
            let (now_ms, uid) = created.unwrap_or_default();
            let meta = &mut wanted["metadata"];
            meta["creationTimestamp"] = json!(stamp(now_ms as i64));
            meta["uid"] = json!(uid);
            meta["generation"] = json!(1);
            if !key.1.is_empty() {
                meta["namespace"] = json!(key.1);
            }
        }
        Some(current) => {
            let content = |o: &Value| {
                let mut o = o.clone();
                if let Some(fields) = o.as_object_mut() {
                    fields.remove("metadata");
                    fields.remove("apiVersion");
                    if status_sub {
                        fields.remove("status");
                    }
                }
                o
            };
            if content(current) != content(&wanted) {
                let generation = current
                    .pointer("/metadata/generation")
                    .and_then(Value::as_i64)
                    .unwrap_or(1);
                wanted["metadata"]["generation"] = json!(generation.saturating_add(1));
            }
        }
    }
    Ok(wanted)
}

/// A definition as stored: checked, with the status the apiextensions
/// controllers give it; on update, what the server set at creation
/// stays.
pub(super) fn admit_definition(
    name: &str,
    current: Option<&Value>,
    mut wanted: Value,
    now_ms: u64,
    uid: String,
) -> Result<Value, ApiError> {
    let errors = validate_definition(name, &wanted);
    if !errors.is_empty() {
        return Err(invalid(CRD_KIND, "apiextensions.k8s.io", name, &errors));
    }
    if let Some(current) = current {
        for field in ["group", "names", "scope"] {
            if field != "names"
                && current.pointer(&format!("/spec/{field}"))
                    != wanted.pointer(&format!("/spec/{field}"))
            {
                return Err(invalid(
                    CRD_KIND,
                    "apiextensions.k8s.io",
                    name,
                    &[FieldError::invalid(
                        format!("spec.{field}"),
                        wanted
                            .pointer(&format!("/spec/{field}"))
                            .unwrap_or(&Value::Null),
                        "field is immutable",
                    )],
                ));
            }
        }
        for field in ["creationTimestamp", "uid"] {
            if let Some(kept) = current.pointer(&format!("/metadata/{field}")) {
                wanted["metadata"][field] = kept.clone();
            }
        }
    } else {
        wanted["metadata"]["creationTimestamp"] = json!(stamp(now_ms as i64));
        wanted["metadata"]["uid"] = json!(uid);
    }
    super::history::strip_rv_mut(&mut wanted);
    with_status(&mut wanted, current, now_ms);
    Ok(wanted)
}

/// Whether a resource's objects are stored whole as written (a
/// definition, a custom object), so an update replaces them rather than
/// going through the simulator.
pub(super) fn is_stored_whole(resource: &Resource) -> bool {
    resource.is_custom() || resource.key == CRD_KIND
}

/// A uid for an object created through the API, unique to the change
/// that creates it.
pub(super) fn uid(cluster: &Cluster) -> String {
    let next = cluster.history().rv().saturating_add(1);
    drillbench_sim::view::uid(0x35, usize::try_from(next).unwrap_or(usize::MAX))
}

/// An update (PUT, a patch, an apply) of a definition or a custom object:
/// admitted as a create is, and stored.
pub(super) fn store_update(
    cluster: &mut Cluster,
    resource: &Resource,
    key: &Key,
    current: &Value,
    wanted: Value,
    how: How<'_>,
) -> Result<(), ApiError> {
    let now = cluster.sim.now();
    let stored = if resource.is_custom() {
        admit_object(&cluster.written, resource, key, Some(current), wanted, how)?
    } else {
        // A definition's status is the controllers': neither endpoint
        // writes it.
        admit_definition(&key.2, Some(current), wanted, now, String::new())?
    };
    cluster.written.remember_metadata(key.clone(), &stored);
    cluster.written.declare(key.clone(), stored);
    Ok(())
}

/// Deleting a definition deletes its objects, each deletion announced
/// ("Delete a CustomResourceDefinition": "its custom objects are also
/// deleted").
pub(super) fn delete_instances(cluster: &mut Cluster, crd: &Value) {
    let Some(kind) = resources_of(crd, false).first().map(|r| r.key) else {
        return;
    };
    let keys: Vec<Key> = cluster
        .written
        .declared_of_kind(kind)
        .map(|o| super::history::key_of(kind, o))
        .collect();
    for key in keys {
        let before = cluster.written.undeclare(&key);
        cluster.written.forget_metadata(&key);
        cluster.api_change(key, before.as_ref());
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// The docs page's CronTab, with a status subresource.
    pub(crate) fn crontab() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "crontabs.stable.example.com"},
            "spec": {
                "group": "stable.example.com", "scope": "Namespaced",
                "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab",
                          "shortNames": ["ct"], "categories": ["all"]},
                "versions": [
                    {"name": "v1beta1", "served": true, "storage": false,
                     "schema": {"openAPIV3Schema": {"type": "object"}}},
                    {"name": "v1", "served": true, "storage": true,
                     "subresources": {"status": {}},
                     "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                         "spec": {"type": "object", "required": ["cronSpec"], "properties": {
                             "cronSpec": {"type": "string"},
                             "image": {"type": "string"},
                             "replicas": {"type": "integer"}}}}}}},
                    {"name": "v2", "served": false, "storage": false,
                     "schema": {"openAPIV3Schema": {"type": "object"}}}
                ]
            }
        })
    }

    /// "Create a CustomResourceDefinition": a REST path per served
    /// version, none for a version not served; equal definitions share
    /// one resource. Control: a cluster-scoped definition serves a
    /// cluster-scoped resource.
    #[test]
    fn a_definition_serves_each_served_version() {
        let served = served_by(&crontab());
        let versions: Vec<&str> = served.iter().map(|r| r.version).collect();
        assert_eq!(versions, ["v1beta1", "v1"]);
        let v1 = served[1];
        assert_eq!(
            (v1.group, v1.plural, v1.singular, v1.kind, v1.namespaced),
            ("stable.example.com", "crontabs", "crontab", "CronTab", true)
        );
        assert_eq!(v1.short, ["ct"]);
        assert_eq!(v1.categories, ["all"]);
        assert_eq!(v1.subresources, ["status"]);
        assert!(served[0].subresources.is_empty(), "v1beta1 declares none");
        assert_eq!(v1.key, "CronTab.stable.example.com");
        assert!(v1.is_custom());
        assert!(std::ptr::eq(v1, served_by(&crontab())[1]), "interned");
        let mut cluster_scoped = crontab();
        cluster_scoped["spec"]["scope"] = json!("Cluster");
        assert!(!served_by(&cluster_scoped)[1].namespaced);
    }

    /// apimachinery's `CompareKubeAwareVersionStrings`: v1 > v1beta2 >
    /// v1beta1 > v1alpha1 > non-Kubernetes names; v2 before v1.
    #[test]
    fn versions_sort_as_the_api_server_prefers_them() {
        let mut versions = ["v1alpha1", "foo", "v1beta1", "v1", "v2", "v1beta2", "v10"];
        versions.sort_by_key(|v| version_order(v));
        assert_eq!(
            versions,
            ["v10", "v2", "v1", "v1beta2", "v1beta1", "v1alpha1", "foo"]
        );
    }

    /// `ValidateCustomResourceDefinition`: each broken field is named with
    /// the API server's words; the docs' CronTab (the control) passes.
    #[test]
    fn a_broken_definition_is_refused_field_by_field() {
        let name = "crontabs.stable.example.com";
        assert!(validate_definition(name, &crontab()).is_empty());
        let broken = |edit: &dyn Fn(&mut Value)| {
            let mut crd = crontab();
            edit(&mut crd);
            validate_definition(name, &crd)
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            broken(&|c| c["spec"]["scope"] = json!("Galaxy")),
            [
                "spec.scope: Unsupported value: \"Galaxy\": supported values: \"Cluster\", \"Namespaced\""
            ]
        );
        assert_eq!(
            broken(&|c| c["spec"]["versions"][0]["storage"] = json!(true)),
            [
                "spec.versions: Invalid value: [\"v1beta1\",\"v1\",\"v2\"]: must have exactly one version marked as storage version"
            ]
        );
        assert_eq!(
            broken(&|c| c["spec"]["versions"][1]["schema"] = json!(null)),
            ["spec.versions[1].schema.openAPIV3Schema: Required value: schemas are required"]
        );
        assert_eq!(
            broken(&|c| c["spec"]["names"]["plural"] = json!("crons")),
            [
                "metadata.name: Invalid value: \"crontabs.stable.example.com\": must be spec.names.plural+\".\"+spec.group"
            ]
        );
    }

    /// `ValidateCustomResourceColumnDefinition` and
    /// `ValidateCustomResourceDefinitionSubresources`, each row beside the
    /// docs' columns and a well-formed scale (the controls, which pass).
    #[test]
    fn printer_columns_and_scale_paths_are_refused_as_the_api_server_refuses_them() {
        let name = "crontabs.stable.example.com";
        let with = |edit: &dyn Fn(&mut Value)| {
            let mut crd = crontab();
            crd["spec"]["versions"][1]["additionalPrinterColumns"] = json!([
                {"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"},
                {"name": "Replicas", "type": "integer", "format": "int32", "jsonPath": ".spec.replicas"}
            ]);
            crd["spec"]["versions"][1]["subresources"]["scale"] = json!({
                "specReplicasPath": ".spec.replicas",
                "statusReplicasPath": ".status.replicas",
                "labelSelectorPath": ".status.labelSelector"
            });
            edit(&mut crd);
            validate_definition(name, &crd)
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
        };
        let column = "spec.versions[1].additionalPrinterColumns[0]";
        let scale = "spec.versions[1].subresources.scale";
        assert!(with(&|_| {}).is_empty(), "control: well formed");
        let rows: Vec<(&str, Value, String)> = vec![
            (
                "/spec/versions/1/additionalPrinterColumns/0/jsonPath",
                json!("spec.cronSpec"),
                format!(
                    "{column}.JSONPath: Invalid value: \"spec.cronSpec\": must be a simple json path starting with ."
                ),
            ),
            (
                "/spec/versions/1/additionalPrinterColumns/0/jsonPath",
                json!(""),
                format!("{column}.JSONPath: Required value"),
            ),
            (
                "/spec/versions/1/additionalPrinterColumns/0/type",
                json!("text"),
                format!(
                    "{column}.type: Invalid value: \"text\": must be one of boolean,date,integer,number,string"
                ),
            ),
            (
                "/spec/versions/1/additionalPrinterColumns/1/format",
                json!("uuid"),
                "spec.versions[1].additionalPrinterColumns[1].format: Invalid value: \"uuid\": must be one of byte,date,date-time,double,float,int32,int64,password"
                    .to_owned(),
            ),
            (
                "/spec/versions/1/additionalPrinterColumns/0/name",
                json!(""),
                format!("{column}.name: Required value"),
            ),
            (
                "/spec/versions/1/subresources/scale/specReplicasPath",
                json!(".status.replicas"),
                format!(
                    "{scale}.specReplicasPath: Invalid value: \".status.replicas\": should be a json path under .spec"
                ),
            ),
            (
                "/spec/versions/1/subresources/scale/statusReplicasPath",
                json!(""),
                format!("{scale}.statusReplicasPath: Required value"),
            ),
            (
                "/spec/versions/1/subresources/scale/labelSelectorPath",
                json!(".metadata.labels"),
                format!(
                    "{scale}.labelSelectorPath: Invalid value: \".metadata.labels\": should be a json path under either .spec or .status"
                ),
            ),
        ];
        for (pointer, value, expected) in rows {
            let got = with(&|c| *c.pointer_mut(pointer).expect(pointer) = value.clone());
            assert_eq!(got, [expected], "{pointer} = {value}");
        }
        // Control: a selector path under .spec is as good as one under .status.
        let got = with(&|c| {
            c["spec"]["versions"][1]["subresources"]["scale"]["labelSelectorPath"] =
                json!(".spec.selector")
        });
        assert!(got.is_empty(), "{got:?}");
    }

    /// The controllers' status: names accepted, established, the storage
    /// version recorded (and kept when the storage version moves).
    #[test]
    fn a_stored_definition_is_established() {
        let first = admit_definition(
            "crontabs.stable.example.com",
            None,
            crontab(),
            0,
            "u".to_owned(),
        )
        .expect("valid");
        let types: Vec<&Value> = first["status"]["conditions"]
            .as_array()
            .expect("conditions")
            .iter()
            .map(|c| &c["type"])
            .collect();
        assert_eq!(types, [&json!("NamesAccepted"), &json!("Established")]);
        assert_eq!(first["status"]["acceptedNames"]["listKind"], "CronTabList");
        assert_eq!(first["status"]["storedVersions"], json!(["v1"]));
        let mut moved = crontab();
        moved["spec"]["versions"][1]["storage"] = json!(false);
        moved["spec"]["versions"][2]["storage"] = json!(true);
        let second = admit_definition(
            "crontabs.stable.example.com",
            Some(&first),
            moved,
            0,
            "u".to_owned(),
        )
        .expect("valid");
        assert_eq!(second["status"]["storedVersions"], json!(["v1", "v2"]));
        assert_eq!(second["metadata"]["uid"], "u");
        let mut rescoped = crontab();
        rescoped["spec"]["scope"] = json!("Cluster");
        let refused = admit_definition(
            "crontabs.stable.example.com",
            Some(&first),
            rescoped,
            0,
            "u".to_owned(),
        )
        .expect_err("scope is immutable");
        assert!(refused.status()["message"].as_str().is_some_and(|m| {
            m.contains("spec.scope: Invalid value: \"Cluster\": field is immutable")
        }));
    }
}
