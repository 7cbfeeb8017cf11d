//! Rule `context` entries (kyverno.io/docs/writing-policies/external-data-
//! sources): `variable`, `configMap` and `apiCall`, the last two answered by
//! whatever [`ClusterData`] the caller supplies — the simulator's objects, a
//! test's resources, or nothing.

use serde_json::{Map, Value, json};

use crate::jmes;
use crate::variables::{self, Missing};

/// The API server as a context entry reads it: `GET` of an API path.
pub trait ClusterData {
    /// The object or list at `url_path` (`/api/v1/namespaces/ns/pods/x`,
    /// `/apis/storage.k8s.io/v1/storageclasses`), or why not.
    fn get(&self, url_path: &str) -> Result<Value, String>;
}

/// No cluster: every API call fails, as in `kyverno test` without a context.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoCluster;

impl ClusterData for NoCluster {
    fn get(&self, url_path: &str) -> Result<Value, String> {
        Err(format!("no cluster to serve GET {url_path}"))
    }
}

/// A cluster of objects held in memory, served by API path.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct InMemoryCluster {
    objects: Vec<Value>,
}

impl InMemoryCluster {
    pub fn new(objects: Vec<Value>) -> Self {
        InMemoryCluster { objects }
    }

    pub fn objects(&self) -> &[Value] {
        &self.objects
    }
}

/// The resource (plural) name of a kind, as the API server spells it for
/// the kinds policies look up.
pub fn plural(kind: &str) -> String {
    let lower = kind.to_ascii_lowercase();
    match lower.as_str() {
        "endpoints" => lower,
        _ if lower.ends_with("ss") || lower.ends_with('x') || lower.ends_with("ch") => {
            format!("{lower}es")
        }
        _ if lower.ends_with('y') && !lower.ends_with("ey") => {
            format!("{}ies", &lower[..lower.len() - 1])
        }
        _ => format!("{lower}s"),
    }
}

impl ClusterData for InMemoryCluster {
    fn get(&self, url_path: &str) -> Result<Value, String> {
        let path = url_path.split('?').next().unwrap_or_default();
        let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let (api_version, rest) = match segments.as_slice() {
            ["api", v, rest @ ..] => ((*v).to_owned(), rest),
            ["apis", g, v, rest @ ..] => (format!("{g}/{v}"), rest),
            _ => return Err(format!("GET {url_path}: not an API path")),
        };
        let (namespace, resource, name) = match rest {
            ["namespaces", ns, resource, name] => (Some(*ns), *resource, Some(*name)),
            ["namespaces", ns, resource] => (Some(*ns), *resource, None),
            [resource, name] => (None, *resource, Some(*name)),
            [resource] => (None, *resource, None),
            _ => return Err(format!("GET {url_path}: not an API path")),
        };
        let selected = self.objects.iter().filter(|o| {
            let kind = o.get("kind").and_then(Value::as_str).unwrap_or_default();
            let api = o
                .get("apiVersion")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let ns = o.pointer("/metadata/namespace").and_then(Value::as_str);
            api == api_version
                && plural(kind) == resource
                && namespace.is_none_or(|want| ns == Some(want))
        });
        match name {
            Some(name) => selected
                .into_iter()
                .find(|o| o.pointer("/metadata/name").and_then(Value::as_str) == Some(name))
                .cloned()
                .ok_or_else(|| {
                    format!(
                        "GET {url_path}: the server could not find the requested resource (404)"
                    )
                }),
            None => {
                let mut items: Vec<Value> = selected.cloned().collect();
                items.sort_by_key(|o| {
                    (
                        o.pointer("/metadata/namespace")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                        o.pointer("/metadata/name")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                    )
                });
                Ok(
                    json!({"apiVersion": api_version, "kind": "List", "metadata": {}, "items": items}),
                )
            }
        }
    }
}

/// Why a context entry could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContextError {
    /// The entry failed: the rule errors.
    Failed(String),
    /// The entry is of a kind the engine does not evaluate.
    Unsupported(String),
}

/// Loads the entries into `ctx` (a JSON object), in order; entries whose
/// name is in `preset` keep the given value (the CLI's values file).
pub fn load(
    entries: &[Value],
    ctx: &mut Value,
    data: &dyn ClusterData,
    preset: &Map<String, Value>,
) -> Result<(), ContextError> {
    for entry in entries {
        let name = entry
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| ContextError::Failed("context entry without a name".into()))?;
        if preset.contains_key(name) {
            continue;
        }
        let value = entry_value(name, entry, ctx, data)?;
        if let Value::Object(map) = ctx {
            map.insert(name.to_owned(), value);
        }
    }
    Ok(())
}

fn failed(name: &str, why: impl std::fmt::Display) -> ContextError {
    ContextError::Failed(format!("failed to load context entry {name}: {why}"))
}

fn entry_value(
    name: &str,
    entry: &Value,
    ctx: &Value,
    data: &dyn ClusterData,
) -> Result<Value, ContextError> {
    let subst =
        |v: &Value| variables::substitute(v, ctx, Missing::Error).map_err(|e| failed(name, e));
    let default = |entry_part: &Value| -> Result<Option<Value>, ContextError> {
        match entry_part.get("default") {
            Some(d) => Ok(Some(subst(d)?)),
            None => Ok(None),
        }
    };
    if let Some(var) = entry.get("variable") {
        let base = match var.get("value") {
            Some(v) => Some(subst(v)?),
            None => None,
        };
        let result = match var.get("jmesPath").and_then(Value::as_str) {
            Some(path) => {
                let path = subst(&Value::String(path.to_owned()))?;
                let path = crate::scalar::interpolate(&path);
                jmes::search(&path, base.as_ref().unwrap_or(ctx)).unwrap_or(Value::Null)
            }
            None => base.unwrap_or(Value::Null),
        };
        if result.is_null() {
            return default(var)?
                .ok_or_else(|| failed(name, "the variable resolved to null and has no default"));
        }
        return Ok(result);
    }
    if let Some(cm) = entry.get("configMap") {
        let cm = subst(cm)?;
        let cm_name = cm.get("name").and_then(Value::as_str).unwrap_or_default();
        let ns = cm
            .get("namespace")
            .and_then(Value::as_str)
            .unwrap_or("default");
        return data
            .get(&format!("/api/v1/namespaces/{ns}/configmaps/{cm_name}"))
            .map_err(|e| failed(name, e));
    }
    if let Some(call) = entry.get("apiCall") {
        if call.get("service").is_some() {
            return Err(ContextError::Unsupported(
                "apiCall.service (calls to other services) is not evaluated".into(),
            ));
        }
        if call
            .get("method")
            .and_then(Value::as_str)
            .is_some_and(|m| m != "GET")
        {
            return Err(ContextError::Unsupported(
                "apiCall with a method other than GET is not evaluated".into(),
            ));
        }
        let url = call
            .get("urlPath")
            .ok_or_else(|| failed(name, "apiCall without urlPath"))?;
        let url = crate::scalar::interpolate(&subst(url)?);
        let response = match data.get(&url) {
            Ok(r) => r,
            Err(e) => return default(call)?.ok_or_else(|| failed(name, e)),
        };
        return match call.get("jmesPath").and_then(Value::as_str) {
            Some(path) => {
                let path = crate::scalar::interpolate(&subst(&Value::String(path.to_owned()))?);
                match jmes::search(&path, &response) {
                    Ok(v) if !v.is_null() => Ok(v),
                    Ok(_) | Err(_) => default(call)?.ok_or_else(|| {
                        failed(
                            name,
                            format!("JMESPath `{path}` found nothing in the response of {url}"),
                        )
                    }),
                }
            }
            None => Ok(response),
        };
    }
    for (field, why) in [
        (
            "imageRegistry",
            "imageRegistry context entries are not evaluated (no registry)",
        ),
        (
            "globalReference",
            "globalReference context entries are not evaluated",
        ),
    ] {
        if entry.get(field).is_some() {
            return Err(ContextError::Unsupported(why.into()));
        }
    }
    Err(failed(name, "expected variable, configMap or apiCall"))
}
