//! The write path: create, update and patch (with the scale and status
//! subresources), delete, and eviction. Each checks the request as the API
//! server would, acts through the simulator's primitives, and announces
//! what changed.

use serde_json::{Value, json};

use super::api::{ApiError, ApiResult, Reply, Request, status_body};
use super::cluster::Cluster;
use super::commit::{commit, replicas_of, set_replicas};
use super::history::{Key, strip_rv, strip_rv_mut};
use super::managed_fields::{Taken, Writer};
use super::namespaces::delete_namespace;
use super::objects::{scale_of, stamp};
use super::resources::Resource;
use super::written::{DECLARED_KINDS, RUN_DECLARED};
use super::{admit, cluster_ips, crds, defaults, events_v1, names, patch, versions};
use drillbench_model::duration::Duration;
use drillbench_sim::api_ops::Propagation;

pub(super) fn create(
    cluster: &mut Cluster,
    request: &Request,
    resource: &'static Resource,
    namespace: String,
) -> ApiResult {
    let writer = Writer::of(request, resource, None, None)?;
    let mut object = request.json_body()?;
    if !object.is_object() {
        return Err(ApiError::bad_request("the request body is not an object"));
    }
    // An apply that creates the object owns what it applied, as sent.
    let applied = patch::is_apply(&request.content_type).then(|| object.clone());
    // A body without apiVersion or kind is read as the URL's resource, as
    // the API server decodes it with the endpoint's defaults.
    match object.get("kind").and_then(Value::as_str) {
        None => object["kind"] = json!(resource.kind),
        Some(kind) if kind == resource.kind => {}
        Some(_) => {
            return Err(ApiError::bad_request(format!(
                "the body's kind is not {}",
                resource.kind
            )));
        }
    }
    if object.get("apiVersion").and_then(Value::as_str).is_none() {
        object["apiVersion"] = json!(resource.api_version());
    }
    if !object.get("metadata").is_some_and(Value::is_object) {
        object["metadata"] = json!({});
    }
    let mut name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let generate_name = object
        .pointer("/metadata/generateName")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if name.is_empty() && !generate_name.is_empty() {
        let mut seed = cluster.history().rv() + 1;
        name = names::generate(&generate_name, seed);
        while cluster
            .view(resource.key, &namespace, &name, false)
            .is_some()
        {
            seed += 1 << 32;
            name = names::generate(&generate_name, seed);
        }
        object["metadata"]["name"] = json!(name);
    }
    validate(resource, &name, &object)?;
    if resource.namespaced {
        match object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
        {
            Some(ns) if ns != namespace => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            _ => object["metadata"]["namespace"] = json!(namespace),
        }
    }
    // The NamespaceLifecycle admission plugin: nothing is created in a
    // namespace that does not exist or is being deleted. The namespaces
    // that exist are those the drill's objects use and those created
    // through the API.
    if resource.namespaced {
        let exists = cluster.view("Namespace", "", &namespace, false).is_some();
        let deleted = cluster.written.was_deleted(&namespace);
        if exists && deleted {
            return Err(ApiError::new(
                403,
                "Forbidden",
                format!(
                    "{} \"{name}\" is forbidden: unable to create new content in namespace {namespace} because it is being terminated",
                    resource.qualified()
                ),
            ));
        }
        if !exists || deleted {
            return Err(ApiError::new(
                404,
                "NotFound",
                format!("namespaces \"{namespace}\" not found"),
            ));
        }
    }
    if cluster
        .view(resource.key, &namespace, &name, false)
        .is_some()
    {
        return Err(ApiError::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", resource.qualified()),
        ));
    }
    within_pod_budget(cluster, &object)?;
    let key: Key = (resource.key, namespace.clone(), name.clone());
    match resource.key {
        _ if resource.is_custom() => {
            let uid = crds::uid(cluster);
            let now = cluster.sim.now();
            object = crds::admit_object(
                &cluster.written,
                resource,
                &key,
                None,
                object,
                crds::How {
                    created: Some((now, uid)),
                    strict: crds::is_strict(request),
                    ..Default::default()
                },
            )?;
            cluster.written.declare(key.clone(), object.clone());
        }
        crds::CRD_KIND => {
            let uid = crds::uid(cluster);
            object = crds::admit_definition(&name, None, object, cluster.sim.now(), uid)?;
            cluster.written.declare(key.clone(), object.clone());
        }
        "Namespace" => cluster.written.create_namespace(&name),
        "ConfigMap" => {
            created(&mut object, cluster.sim.now(), None);
            cluster
                .written
                .put_config_map(&namespace, &name, object.clone());
        }
        kind if DECLARED_KINDS.contains(&kind) => {
            defaults::default_object(kind, &mut object);
            if kind == "Service" {
                let taken = cluster_ips::taken(cluster.written.declared_of_kind("Service"));
                cluster_ips::allocate(&mut object, &taken)?;
            }
            // A PriorityClass is stored as written and given to the
            // simulator, whose Priority admission resolves the pods
            // created afterwards by it.
            if RUN_DECLARED.contains(&kind) || kind == "PriorityClass" {
                if let Some(refusal) = cluster.admission_refusal(&object) {
                    return Err(admit::denied(&refusal));
                }
                cluster.apply_manifest(object.clone())?;
            }
            // A Service's uid is what its EndpointSlices' owner
            // reference names.
            let uid = crds::uid(cluster);
            created(&mut object, cluster.sim.now(), Some(uid));
            if !namespace.is_empty()
                && let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut)
            {
                meta.insert("namespace".to_owned(), json!(namespace));
            }
            cluster.written.declare(key.clone(), object.clone());
        }
        "Event" => {
            // Written through events.k8s.io/v1, it is stored in the core
            // form the timeline's Events have.
            let strict = events_v1::converts(resource);
            if strict {
                object = events_v1::to_core(&object);
            }
            let errors = events_v1::create_errors(&object, &namespace, strict);
            if !errors.is_empty() {
                return Err(invalid(resource, &name, &errors));
            }
            let uid = crds::uid(cluster);
            created(&mut object, cluster.sim.now(), Some(uid));
            cluster.events_mut().put(&namespace, &name, object.clone());
        }
        "Node" | "StorageClass" | "Lease" => {
            return Err(ApiError::new(
                405,
                "MethodNotAllowed",
                format!(
                    "{} are not created through the API: they come from the drill",
                    resource.qualified()
                ),
            ));
        }
        "PersistentVolume" | "VolumeAttachment" => {
            return Err(ApiError::new(
                405,
                "MethodNotAllowed",
                format!(
                    "{} are not created through the API: the simulator provisions and attaches volumes for the claims and pods that use them",
                    resource.qualified()
                ),
            ));
        }
        _ => {
            if let Some(refusal) = cluster.admission_refusal(&object) {
                return Err(admit::denied(&refusal));
            }
            cluster.apply_manifest(object.clone())?;
        }
    }
    cluster.written.remember_metadata(key.clone(), &object);
    let apply = applied.map(|applied| (Taken::none(), applied));
    record_write(cluster, &key, &writer, &Value::Null, apply);
    cluster.sync();
    cluster.api_change(key.clone(), None);
    let mut created = cluster
        .view(resource.key, &namespace, &name, false)
        .ok_or_else(|| {
            ApiError::invalid(format!(
                "{} \"{name}\" was refused by a guard",
                resource.qualified()
            ))
        })?;
    versions::as_served(resource, &mut created);
    Ok(Reply::Json(201, created))
}

/// `Kind[.group] "NAME" is invalid: ` and the field errors, as the API
/// server words a 422.
/// What the API server sets on an object it creates: no client
/// `resourceVersion`, its `creationTimestamp`, and a `uid` when given.
fn created(object: &mut Value, now: u64, uid: Option<String>) {
    strip_rv_mut(object);
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("creationTimestamp".to_owned(), json!(stamp(now as i64)));
        if let Some(uid) = uid {
            meta.insert("uid".to_owned(), json!(uid));
        }
    }
}

fn invalid(resource: &Resource, name: &str, errors: &[String]) -> ApiError {
    let kind = if resource.group.is_empty() {
        resource.kind.to_owned()
    } else {
        format!("{}.{}", resource.kind, resource.group)
    };
    let detail = if errors.len() == 1 {
        errors[0].clone()
    } else {
        format!("[{}]", errors.join(", "))
    };
    ApiError::invalid(format!("{kind} \"{name}\" is invalid: {detail}"))
}

/// What the API server's validation refuses of a new object that the
/// simulator would otherwise take: a name that is not a DNS-1123
/// subdomain (a label for a Namespace), a pod without containers, a
/// negative replica count, and the pod spec's scheduling fields as
/// `bench validate` checks them (`pod_spec_rules`).
fn validate(resource: &Resource, name: &str, object: &Value) -> Result<(), ApiError> {
    let mut errors = Vec::new();
    if name.is_empty() {
        errors.push("metadata.name: Required value: name or generateName is required".to_owned());
    } else {
        for problem in names::invalid(name, resource.kind == "Namespace") {
            errors.push(format!(
                "metadata.name: Invalid value: \"{name}\": {problem}"
            ));
        }
    }
    let containers = match resource.kind {
        "Pod" => Some("/spec/containers"),
        "Deployment" | "StatefulSet" | "DaemonSet" | "Job" | "ReplicaSet" => {
            Some("/spec/template/spec/containers")
        }
        _ => None,
    };
    if let Some(pointer) = containers
        && object
            .pointer(pointer)
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty)
    {
        let field = pointer.trim_start_matches('/').replace('/', ".");
        errors.push(format!("{field}: Required value"));
    }
    if let Some(n) = object.pointer("/spec/replicas").and_then(Value::as_i64)
        && n < 0
    {
        errors.push(format!(
            "spec.replicas: Invalid value: {n}: must be greater than or equal to 0"
        ));
    }
    errors.extend(drillbench_model::pod_spec_rules::api_errors(
        resource.kind,
        object,
    ));
    if errors.is_empty() {
        Ok(())
    } else {
        Err(invalid(resource, name, &errors))
    }
}

/// Refuses a workload that asks for more pods than the simulation will
/// hold: a 422 naming the field, before the simulator makes a single pod
/// (`replicas: 2000000000` would otherwise exhaust the memory).
fn within_pod_budget(cluster: &Cluster, object: &Value) -> Result<(), ApiError> {
    for (pointer, field) in [
        ("/spec/replicas", "spec.replicas"),
        ("/spec/parallelism", "spec.parallelism"),
        ("/spec/completions", "spec.completions"),
    ] {
        if let Some(n) = object.pointer(pointer).and_then(Value::as_u64)
            && n > cluster.max_pods
        {
            return Err(ApiError::invalid(format!(
                "{field}: Invalid value: {n}: bench sim serve simulates at most {} pods per workload",
                cluster.max_pods
            )));
        }
    }
    Ok(())
}

/// An eviction: `201` when the pod goes, `429` when a disruption budget
/// forbids it, as the API server answers.
pub(super) fn evict(
    cluster: &mut Cluster,
    request: &Request,
    resource: &Resource,
    namespace: &str,
    name: &str,
) -> ApiResult {
    let pod = cluster
        .sim
        .pod_id(namespace, name, false)
        .ok_or_else(|| ApiError::not_found(resource, name))?;
    let body = request.json_body_or_empty()?;
    let grace = body
        .pointer("/deleteOptions/gracePeriodSeconds")
        .and_then(Value::as_u64)
        .map(Duration::from_secs);
    let result = cluster.sim.evict_api(pod, grace);
    cluster.sync();
    match result {
        Ok(()) => Ok(Reply::Json(
            201,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
        )),
        Err(message) => {
            let mut status = status_body(
                429,
                "TooManyRequests",
                "Cannot evict pod as it would violate the pod's disruption budget.",
            );
            status["details"] =
                json!({"causes": [{"reason": "DisruptionBudget", "message": message}]});
            Ok(Reply::Json(429, status))
        }
    }
}

/// A PUT or PATCH of an object or its subresource. A server-side apply
/// of an object that does not exist creates it.
pub(super) fn update(
    cluster: &mut Cluster,
    request: &Request,
    resource: &'static Resource,
    namespace: &str,
    name: &str,
    sub: Option<&str>,
) -> ApiResult {
    let apply = request.method == "PATCH" && patch::is_apply(&request.content_type);
    let replicas = (sub == Some("scale") && resource.is_custom())
        .then(|| crds::spec_replicas_path(&cluster.written, resource))
        .flatten();
    let writer = Writer::of(request, resource, sub, replicas.as_deref())?;
    let Some(current) = cluster.view(resource.key, namespace, name, false) else {
        if apply && sub.is_none() {
            return create(cluster, request, resource, namespace.to_owned());
        }
        return Err(ApiError::not_found(resource, name));
    };
    if resource.is_custom()
        && request.method == "PATCH"
        && request
            .content_type
            .starts_with("application/strategic-merge-patch+json")
    {
        // Custom resources carry no patch strategies: the CRD handler
        // accepts JSON, merge and apply patches only, and answers any
        // other with `negotiation.NewUnsupportedMediaTypeError`.
        return Err(ApiError::new(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
        ));
    }
    // An Event is patched and replaced in the form its API serves it.
    let base = if sub == Some("scale") && resource.is_custom() {
        crds::scale_to_update(&cluster.written, resource, &current)?
    } else if sub == Some("scale") {
        scale_of(&current)
    } else if events_v1::converts(resource) {
        events_v1::to_v1(&current)
    } else {
        current.clone()
    };
    let mut applied = None;
    let wanted = if request.method == "PATCH" {
        let mut patched = base.clone();
        patch::apply(&mut patched, &request.content_type, &request.body).map_err(|e| match e {
            patch::PatchError::Unsupported(_) => {
                ApiError::new(415, "UnsupportedMediaType", e.to_string())
            }
            patch::PatchError::TooManyOperations(_) => ApiError::new(
                413,
                "RequestEntityTooLarge",
                format!("Request entity too large: {e}"),
            ),
            other => ApiError::invalid(other.to_string()),
        })?;
        if apply {
            let force = request.query.get("force").is_some_and(|f| f == "true");
            let key: Key = (resource.key, namespace.to_owned(), name.to_owned());
            let taken = cluster
                .written
                .managed_fields(&key)
                .cloned()
                .unwrap_or_default()
                .check_apply(&writer, &current, &patched, force)?;
            applied = Some((taken, request.json_body()?));
        }
        if apply && !crds::is_stored_whole(resource) {
            let mut pruned = patch::prune_to(&patched, &base);
            admit::readmit(&cluster.sim, cluster.guards(), namespace, &mut pruned);
            pruned
        } else {
            patched
        }
    } else {
        request.json_body()?
    };
    let wanted = if events_v1::converts(resource) {
        events_v1::to_core(&wanted)
    } else {
        wanted
    };
    let stale = wanted
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .is_some_and(|rv| {
            Some(rv)
                != base
                    .pointer("/metadata/resourceVersion")
                    .and_then(Value::as_str)
        });
    if stale {
        return Err(ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
                resource.qualified()
            ),
        ));
    }
    if wanted
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .is_some_and(|n| n != name)
    {
        return Err(ApiError::bad_request(
            "the name of the object does not match the name on the URL",
        ));
    }
    let key: Key = (resource.key, namespace.to_owned(), name.to_owned());
    if crds::is_stored_whole(resource) {
        let how = crds::How {
            sub,
            strict: crds::is_strict(request),
            ..Default::default()
        };
        // A Scale is written into the object at the definition's paths,
        // then stored as any update of it is.
        let wanted = match sub {
            Some("scale") => crds::scaled(&cluster.written, resource, &current, &wanted)?,
            _ => wanted,
        };
        crds::store_update(cluster, resource, &key, &current, wanted, how)?;
        record_write(cluster, &key, &writer, &current, applied);
        cluster.sync();
        cluster.api_change(key.clone(), Some(&current));
        let mut after = cluster
            .view(resource.key, namespace, name, false)
            .ok_or_else(|| ApiError::not_found(resource, name))?;
        if sub == Some("scale") {
            return Ok(Reply::Json(
                200,
                crds::scale_of(&cluster.written, resource, &after)?,
            ));
        }
        versions::as_served(resource, &mut after);
        return Ok(Reply::Json(200, after));
    }
    within_pod_budget(cluster, &wanted)?;
    match sub {
        Some("scale") => {
            let replicas = replicas_of(&wanted)?;
            set_replicas(cluster, namespace, resource.kind, name, replicas)?;
            note_spec_change(cluster, &key, &current);
            record_write(cluster, &key, &writer, &current, None);
            cluster.sync();
            let after = cluster
                .view(resource.key, namespace, name, false)
                .unwrap_or(current);
            return Ok(Reply::Json(200, scale_of(&after)));
        }
        Some(_) => {
            if strip_rv(&wanted).get("status") != strip_rv(&current).get("status") {
                return Err(ApiError::invalid(
                    "status is computed by the simulator and cannot be written",
                ));
            }
        }
        None => {
            commit(cluster, resource, namespace, name, &current, &wanted)?;
            note_spec_change(cluster, &key, &current);
            record_write(cluster, &key, &writer, &current, applied);
        }
    }
    cluster.sync();
    cluster.api_change(key, Some(&current));
    let mut after = cluster
        .view(resource.key, namespace, name, false)
        .ok_or_else(|| ApiError::not_found(resource, name))?;
    versions::as_served(resource, &mut after);
    Ok(Reply::Json(200, after))
}

/// Records who wrote what in the object's `managedFields`, before the
/// change is announced: an apply (with the fields it took and its
/// applied configuration) or an update of `before`.
fn record_write(
    cluster: &mut Cluster,
    key: &Key,
    writer: &Writer,
    before: &Value,
    apply: Option<(Taken, Value)>,
) {
    let Some(after) = cluster.view(key.0, &key.1, &key.2, false) else {
        return;
    };
    let now = cluster.sim.now() as i64;
    let managed = cluster.written.managed_fields_mut(key);
    match apply {
        Some((taken, applied)) => {
            managed.record_apply(writer, taken, &applied, (before, &after), now);
        }
        None => managed.update(writer, before, &after, now),
    }
}

/// Increments a workload's `metadata.generation` when a write changed its
/// spec, as the API server's strategies for apps/v1 do
/// (`pkg/registry/apps/deployment/strategy.go` and its StatefulSet and
/// DaemonSet siblings, `PrepareForUpdate`: the generation goes up by one
/// when the old and new spec differ, never for status); a write that left
/// the spec as it was keeps it.
fn note_spec_change(cluster: &mut Cluster, key: &Key, before: &Value) {
    if !matches!(key.0, "Deployment" | "StatefulSet" | "DaemonSet") {
        return;
    }
    let after = cluster.view(key.0, &key.1, &key.2, false);
    if after.as_ref().and_then(|a| a.get("spec")) != before.get("spec") {
        cluster.written.bump_generation(key);
    }
}

/// A DELETE with its options (grace period, propagation) from the query
/// or the body; the answer is the object as it stands after.
pub(super) fn delete(
    cluster: &mut Cluster,
    request: &Request,
    resource: &'static Resource,
    namespace: &str,
    name: &str,
) -> ApiResult {
    let current = cluster
        .view(resource.key, namespace, name, false)
        .ok_or_else(|| ApiError::not_found(resource, name))?;
    let options = request.json_body_or_empty()?;
    let grace = request
        .query
        .get("gracePeriodSeconds")
        .and_then(|g| g.parse::<u64>().ok())
        .or_else(|| options.get("gracePeriodSeconds").and_then(Value::as_u64))
        .map(Duration::from_secs);
    let propagation = request.query.get("propagationPolicy").cloned().or_else(|| {
        options
            .get("propagationPolicy")
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    let propagation = match propagation.as_deref() {
        None | Some("Background") | Some("Foreground") => Propagation::Cascade,
        Some("Orphan") => Propagation::Orphan,
        Some(other) => {
            return Err(ApiError::invalid(format!(
                "propagationPolicy: Unsupported value: \"{other}\""
            )));
        }
    };
    let key: Key = (resource.key, namespace.to_owned(), name.to_owned());
    match resource.key {
        _ if resource.is_custom() => {
            cluster.written.undeclare(&key);
            cluster.written.forget_metadata(&key);
        }
        crds::CRD_KIND => {
            crds::delete_instances(cluster, &current);
            cluster.written.undeclare(&key);
            cluster.written.forget_metadata(&key);
        }
        "Node" => {
            let node = cluster
                .sim
                .node_id(name)
                .map_err(|_| ApiError::not_found(resource, name))?;
            cluster.sim.delete_node_api(node)?;
        }
        "Pod" => {
            let pod = cluster
                .sim
                .pod_id(namespace, name, false)
                .ok_or_else(|| ApiError::not_found(resource, name))?;
            cluster.sim.delete_pod_api(pod, grace);
        }
        "Deployment" | "StatefulSet" | "DaemonSet" | "Job" => {
            let w = cluster
                .sim
                .workload_id(&format!("{namespace}/{}/{name}", resource.kind))
                .ok_or_else(|| ApiError::not_found(resource, name))?;
            cluster.sim.delete_workload(w, propagation);
            cluster.written.forget_metadata(&key);
        }
        "PodDisruptionBudget" => {
            let index = cluster
                .sim
                .pdb_index(namespace, name)
                .ok_or_else(|| ApiError::not_found(resource, name))?;
            cluster.sim.delete_pdb(index);
            cluster.written.forget_metadata(&key);
        }
        "ConfigMap" => {
            cluster.written.remove_config_map(namespace, name);
            cluster.written.forget_metadata(&key);
        }
        "Event" => {
            cluster.events_mut().remove(namespace, name);
            cluster.written.forget_metadata(&key);
        }
        kind if DECLARED_KINDS.contains(&kind) => {
            if RUN_DECLARED.contains(&kind)
                && let Some(w) = cluster
                    .sim
                    .workload_id(&format!("{namespace}/{kind}/{name}"))
            {
                cluster.sim.delete_workload(w, propagation);
            }
            if kind == "PriorityClass" {
                cluster.sim.delete_priority_class(name);
            }
            cluster.written.undeclare(&key);
            cluster.written.forget_metadata(&key);
        }
        "Namespace" => {
            delete_namespace(cluster, name);
            // Terminating until its pods are gone (no finalizers are
            // modelled beyond that).
            let mut terminating = current;
            terminating["status"] = json!({"phase": "Terminating"});
            let shown = cluster
                .view(resource.key, namespace, name, false)
                .unwrap_or(terminating);
            return Ok(Reply::Json(200, shown));
        }
        _ => {
            return Err(ApiError::new(
                405,
                "MethodNotAllowed",
                format!(
                    "deleting {} is not modelled by the simulator",
                    resource.qualified()
                ),
            ));
        }
    }
    cluster.sync();
    cluster.api_change(key.clone(), Some(&current));
    let mut after = cluster
        .view(resource.key, namespace, name, false)
        .unwrap_or(current);
    versions::as_served(resource, &mut after);
    Ok(Reply::Json(200, after))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::by_kind;
    use crate::testing::{self, cluster, lines, request, rv_of};
    use crate::watch::{WatchFilter, Watcher};

    fn kind(kind: &str) -> &'static Resource {
        by_kind(kind).expect("a served kind")
    }

    fn answer(result: ApiResult) -> (u16, Value) {
        testing::json(result.unwrap_or_else(ApiError::reply))
    }

    fn config_map(namespace: &str, name: &str) -> String {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": name, "namespace": namespace, "labels": {"k": "v"}},
               "data": {"key": "value"}})
        .to_string()
    }

    #[test]
    fn an_eviction_a_budget_forbids_answers_429_and_the_pod_stays() {
        let mut cluster = cluster();
        // A Ready pod: a Pending one is evicted without asking its budget.
        cluster.advance_to(600_000);
        let eviction = request("POST", "/", "");
        let (code, body) = answer(evict(
            &mut cluster,
            &eviction,
            kind("Pod"),
            "apps",
            "api-00000",
        ));
        assert_eq!(code, 429);
        assert_eq!(body["reason"], "TooManyRequests");
        assert_eq!(body["details"]["causes"][0]["reason"], "DisruptionBudget");
        assert!(cluster.sim.pod_id("apps", "api-00000", false).is_some());
    }

    #[test]
    fn an_eviction_without_a_budget_answers_201() {
        let mut cluster = cluster();
        let eviction = request(
            "POST",
            "/",
            r#"{"deleteOptions": {"gracePeriodSeconds": 0}}"#,
        );
        let (code, body) = answer(evict(
            &mut cluster,
            &eviction,
            kind("Pod"),
            "apps",
            "cache-00000",
        ));
        assert_eq!((code, body["status"].as_str()), (201, Some("Success")));
        let (code, _) = answer(evict(&mut cluster, &eviction, kind("Pod"), "apps", "nope"));
        assert_eq!(code, 404);
    }

    #[test]
    fn a_deleted_pod_is_seen_by_watchers_as_deleted() {
        let mut cluster = cluster();
        let (watcher, mut events) = Watcher::new(WatchFilter {
            resource: kind("Pod"),
            namespace: Some("apps".to_owned()),
            labels: crate::select::parse_labels("app=cache").expect("labels"),
            fields: Vec::new(),
            table: false,
            columns: None,
            bookmarks: false,
        });
        cluster.add_watcher(watcher);
        let rv = cluster.history().rv();
        let deletion = request("DELETE", "/?gracePeriodSeconds=0", "");
        let (code, _) = answer(delete(
            &mut cluster,
            &deletion,
            kind("Pod"),
            "apps",
            "cache-00000",
        ));
        assert_eq!(code, 200);
        let seen = lines(&mut events);
        let deleted: Vec<&Value> = seen.iter().filter(|l| l["type"] == "DELETED").collect();
        assert_eq!(deleted.len(), 1, "{seen:?}");
        assert_eq!(deleted[0]["object"]["metadata"]["name"], "cache-00000");
        assert!(rv_of(&deleted[0]["object"]) > rv);
        assert!(cluster.view("Pod", "apps", "cache-00000", false).is_none());
    }

    #[test]
    fn a_deletion_refuses_an_unknown_propagation_policy() {
        let mut cluster = cluster();
        let deletion = request("DELETE", "/", r#"{"propagationPolicy": "Sideways"}"#);
        let (code, body) = answer(delete(
            &mut cluster,
            &deletion,
            kind("Deployment"),
            "apps",
            "api",
        ));
        assert_eq!(code, 422);
        assert_eq!(
            body["message"],
            "propagationPolicy: Unsupported value: \"Sideways\""
        );
        assert!(cluster.view("Deployment", "apps", "api", false).is_some());
    }

    /// Kinds without behaviour are stored as written, like ConfigMaps: a
    /// Secret is created (with its creation time), replaced whole,
    /// deleted, and goes with its namespace; a PriorityClass is
    /// cluster-scoped. Control: a Secret in a namespace that does not
    /// exist is a 404, as for every kind.
    #[test]
    fn kinds_without_behaviour_are_stored_as_written() {
        let mut cluster = cluster();
        let secrets = kind("Secret");
        let secret = |value: &str| {
            json!({"apiVersion": "v1", "kind": "Secret",
                   "metadata": {"name": "db", "namespace": "apps"},
                   "data": {"password": value}})
            .to_string()
        };
        let (code, created) = answer(create(
            &mut cluster,
            &request("POST", "/", &secret("YQ==")),
            secrets,
            "apps".to_owned(),
        ));
        assert_eq!(code, 201, "{created}");
        assert_eq!(created["data"]["password"], "YQ==");
        assert_eq!(
            created["metadata"]["creationTimestamp"],
            "2026-01-01T00:00:00Z"
        );
        let (code, replaced) = answer(update(
            &mut cluster,
            &request("PUT", "/", &secret("Yg==")),
            secrets,
            "apps",
            "db",
            None,
        ));
        assert_eq!(code, 200, "{replaced}");
        assert_eq!(replaced["data"]["password"], "Yg==");
        assert_eq!(
            replaced["metadata"]["creationTimestamp"],
            "2026-01-01T00:00:00Z"
        );
        assert!(rv_of(&replaced) > rv_of(&created));
        let (code, _) = answer(delete(
            &mut cluster,
            &request("DELETE", "/", ""),
            secrets,
            "apps",
            "db",
        ));
        assert_eq!(code, 200);
        assert!(cluster.view("Secret", "apps", "db", false).is_none());
        let elsewhere = secret("YQ==").replace("\"apps\"", "\"nowhere\"");
        let (code, _) = answer(create(
            &mut cluster,
            &request("POST", "/", &elsewhere),
            secrets,
            "nowhere".to_owned(),
        ));
        assert_eq!(code, 404);
        let class = r#"{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                        "metadata": {"name": "critical"}, "value": 1000}"#;
        let (code, created) = answer(create(
            &mut cluster,
            &request("POST", "/", class),
            kind("PriorityClass"),
            String::new(),
        ));
        assert_eq!(code, 201, "{created}");
        assert!(created["metadata"].get("namespace").is_none());
        answer(create(
            &mut cluster,
            &request("POST", "/", &secret("YQ==")),
            secrets,
            "apps".to_owned(),
        ));
        // A CronJob written here is loaded by the simulator, which runs
        // it, and reads as written.
        let cronjob = r#"{"apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": "nightly", "namespace": "apps"},
            "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}}}}"#;
        let (code, _) = answer(create(
            &mut cluster,
            &request("POST", "/", cronjob),
            kind("CronJob"),
            "apps".to_owned(),
        ));
        assert_eq!(code, 201);
        assert!(cluster.sim.workload_id("apps/CronJob/nightly").is_some());
        assert!(cluster.view("CronJob", "apps", "nightly", false).is_some());
        super::super::namespaces::delete_namespace(&mut cluster, "apps");
        assert!(
            cluster.view("Secret", "apps", "db", false).is_none(),
            "gone with its namespace"
        );
    }

    #[test]
    fn a_config_map_is_created_once_and_only_in_a_namespace_that_exists() {
        let mut cluster = cluster();
        let maps = kind("ConfigMap");
        let create_in = |ns: &str| request("POST", "/", &config_map(ns, "settings"));
        let (code, body) = answer(create(
            &mut cluster,
            &create_in("apps"),
            maps,
            "apps".to_owned(),
        ));
        assert_eq!(code, 201);
        assert_eq!(body["metadata"]["labels"]["k"], "v");
        assert_eq!(
            body["metadata"]["creationTimestamp"],
            "2026-01-01T00:00:00Z"
        );
        assert_eq!(rv_of(&body), cluster.history().rv());
        let (code, body) = answer(create(
            &mut cluster,
            &create_in("apps"),
            maps,
            "apps".to_owned(),
        ));
        assert_eq!(
            (code, body["reason"].as_str()),
            (409, Some("AlreadyExists"))
        );
        let (code, body) = answer(create(
            &mut cluster,
            &create_in("nowhere"),
            maps,
            "nowhere".to_owned(),
        ));
        assert_eq!(code, 404);
        assert_eq!(body["message"], "namespaces \"nowhere\" not found");
        let (code, _) = answer(create(
            &mut cluster,
            &create_in("other"),
            maps,
            "apps".to_owned(),
        ));
        assert_eq!(code, 400, "the body's namespace must match the path's");
    }

    #[test]
    fn nothing_is_created_in_a_terminating_namespace() {
        let mut cluster = cluster();
        let deletion = request("DELETE", "/", "");
        let (code, body) = answer(delete(
            &mut cluster,
            &deletion,
            kind("Namespace"),
            "",
            "apps",
        ));
        assert_eq!(code, 200);
        assert_eq!(body["status"]["phase"], "Terminating");
        let creation = request("POST", "/", &config_map("apps", "late"));
        let (code, _) = answer(create(
            &mut cluster,
            &creation,
            kind("ConfigMap"),
            "apps".to_owned(),
        ));
        assert_eq!(code, 403);
    }

    #[test]
    fn nodes_and_volumes_are_not_created_through_the_api() {
        let mut cluster = cluster();
        let node = request(
            "POST",
            "/",
            r#"{"kind": "Node", "metadata": {"name": "extra"}}"#,
        );
        let (code, _) = answer(create(&mut cluster, &node, kind("Node"), String::new()));
        assert_eq!(code, 405);
        let nameless = request("POST", "/", r#"{"kind": "ConfigMap", "metadata": {}}"#);
        let (code, _) = answer(create(
            &mut cluster,
            &nameless,
            kind("ConfigMap"),
            "apps".into(),
        ));
        assert_eq!(code, 422);
        let wrong = request("POST", "/", r#"{"kind": "Pod", "metadata": {"name": "p"}}"#);
        let (code, _) = answer(create(
            &mut cluster,
            &wrong,
            kind("ConfigMap"),
            "apps".into(),
        ));
        assert_eq!(code, 400);
    }

    /// apimachinery's name rules and the API server's 422 wording; each
    /// refusal has a control that is accepted.
    #[test]
    fn names_containers_and_replicas_are_validated_as_the_api_server_does() {
        let mut cluster = cluster();
        let maps = kind("ConfigMap");
        let map = |name: &str| request("POST", "/", &config_map("apps", name));
        for bad in ["a b", "Foo_Bar", &"a".repeat(300)] {
            let (code, body) = answer(create(&mut cluster, &map(bad), maps, "apps".into()));
            assert_eq!(code, 422, "{bad}");
            let message = body["message"].as_str().unwrap_or_default();
            assert!(
                message.starts_with(&format!(
                    "ConfigMap \"{bad}\" is invalid: metadata.name: Invalid value: \"{bad}\": "
                )),
                "{message}"
            );
            assert!(cluster.view("ConfigMap", "apps", bad, false).is_none());
        }
        let (code, _) = answer(create(&mut cluster, &map("a.b-c"), maps, "apps".into()));
        assert_eq!(code, 201, "a valid subdomain");

        let pod = |containers: &str| {
            request(
                "POST",
                "/",
                &format!(
                    r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"bare","namespace":"apps"}},"spec":{{"containers":{containers}}}}}"#
                ),
            )
        };
        let (code, body) = answer(create(&mut cluster, &pod("[]"), kind("Pod"), "apps".into()));
        assert_eq!(code, 422);
        assert_eq!(
            body["message"],
            "Pod \"bare\" is invalid: spec.containers: Required value"
        );
        let (code, _) = answer(create(
            &mut cluster,
            &pod(r#"[{"name":"c","image":"nginx"}]"#),
            kind("Pod"),
            "apps".into(),
        ));
        assert_eq!(code, 201);

        let deployment = |replicas: i64| {
            request(
                "POST",
                "/",
                &format!(
                    r#"{{"metadata":{{"name":"neg"}},"spec":{{"replicas":{replicas},"selector":{{"matchLabels":{{"app":"neg"}}}},
                  "template":{{"metadata":{{"labels":{{"app":"neg"}}}},"spec":{{"containers":[{{"name":"c","image":"nginx"}}]}}}}}}}}"#
                ),
            )
        };
        let (code, body) = answer(create(
            &mut cluster,
            &deployment(-3),
            kind("Deployment"),
            "apps".into(),
        ));
        assert_eq!(code, 422);
        assert_eq!(
            body["message"],
            "Deployment.apps \"neg\" is invalid: spec.replicas: Invalid value: -3: must be greater than or equal to 0"
        );
        // Control: without apiVersion and kind (filled from the URL), 1 replica.
        let (code, created) = answer(create(
            &mut cluster,
            &deployment(1),
            kind("Deployment"),
            "apps".into(),
        ));
        assert_eq!(code, 201, "{created}");
        assert_eq!(created["kind"], "Deployment");
    }

    #[test]
    fn nothing_is_created_in_a_namespace_that_does_not_exist() {
        // NamespaceLifecycle ("Admission Controllers Reference"): a create
        // in a namespace that does not exist is 404, whatever its kind.
        let mut cluster = cluster();
        let deployment = request(
            "POST",
            "/",
            r#"{"metadata":{"name":"web2"},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"w"}},
              "template":{"metadata":{"labels":{"app":"w"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}"#,
        );
        let (code, body) = answer(create(
            &mut cluster,
            &deployment,
            kind("Deployment"),
            "nowhere".into(),
        ));
        assert_eq!(code, 404, "{body}");
        assert_eq!(body["message"], "namespaces \"nowhere\" not found");
        assert!(
            cluster
                .view("Deployment", "nowhere", "web2", false)
                .is_none()
        );
        // Control: the same Deployment in a namespace the drill uses.
        let (code, body) = answer(create(
            &mut cluster,
            &deployment,
            kind("Deployment"),
            "apps".into(),
        ));
        assert_eq!(code, 201, "{body}");
    }

    #[test]
    fn generate_name_makes_a_name() {
        let mut cluster = cluster();
        let body = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"settings-","namespace":"apps"}}"#;
        let (code, first) = answer(create(
            &mut cluster,
            &request("POST", "/", body),
            kind("ConfigMap"),
            "apps".into(),
        ));
        assert_eq!(code, 201, "{first}");
        let (code, second) = answer(create(
            &mut cluster,
            &request("POST", "/", body),
            kind("ConfigMap"),
            "apps".into(),
        ));
        assert_eq!(code, 201);
        let name = |o: &Value| {
            o["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        };
        assert!(
            name(&first).starts_with("settings-") && name(&first).len() == 14,
            "{first}"
        );
        assert_ne!(name(&first), name(&second));
        let nameless = r#"{"kind":"ConfigMap","metadata":{"namespace":"apps"}}"#;
        let (code, refused) = answer(create(
            &mut cluster,
            &request("POST", "/", nameless),
            kind("ConfigMap"),
            "apps".into(),
        ));
        assert_eq!(code, 422);
        assert!(
            refused["message"]
                .as_str()
                .unwrap_or_default()
                .ends_with("name or generateName is required")
        );
    }

    #[test]
    fn an_update_from_a_stale_version_is_a_conflict() {
        let mut cluster = cluster();
        let current = cluster
            .view("Deployment", "apps", "cache", false)
            .expect("cache");
        let mut stale = current.clone();
        stale["metadata"]["resourceVersion"] = json!("1");
        let put = request("PUT", "/", &stale.to_string());
        let (code, _) = answer(update(
            &mut cluster,
            &put,
            kind("Deployment"),
            "apps",
            "cache",
            None,
        ));
        assert_eq!(code, 409);
        let mut wanted = current;
        wanted["metadata"]["labels"] = json!({"tier": "cache"});
        let put = request("PUT", "/", &wanted.to_string());
        let (code, body) = answer(update(
            &mut cluster,
            &put,
            kind("Deployment"),
            "apps",
            "cache",
            None,
        ));
        assert_eq!(code, 200);
        assert_eq!(body["metadata"]["labels"], json!({"tier": "cache"}));
        assert_eq!(rv_of(&body), cluster.history().rv(), "the edit is a change");
    }

    #[test]
    fn a_patch_of_the_scale_subresource_scales_the_workload() {
        let mut cluster = cluster();
        let patch = request("PATCH", "/", r#"{"spec": {"replicas": 3}}"#);
        let (code, scale) = answer(update(
            &mut cluster,
            &patch,
            kind("Deployment"),
            "apps",
            "cache",
            Some("scale"),
        ));
        assert_eq!(code, 200);
        assert_eq!(scale["kind"], "Scale");
        assert_eq!(scale["spec"]["replicas"], 3);
        let cache = cluster
            .view("Deployment", "apps", "cache", false)
            .expect("cache");
        assert_eq!(cache["spec"]["replicas"], 3);
        let negative = request("PATCH", "/", r#"{"spec": {"replicas": -1}}"#);
        let (code, _) = answer(update(
            &mut cluster,
            &negative,
            kind("Deployment"),
            "apps",
            "cache",
            Some("scale"),
        ));
        assert_eq!(code, 422);
    }

    // pkg/registry/apps/deployment/strategy.go, PrepareForUpdate: a spec
    // change increments metadata.generation, a metadata-only change does
    // not; the controller's observedGeneration follows once it acted.
    #[test]
    fn a_spec_change_increments_the_generation_and_a_label_change_does_not() {
        let mut cluster = cluster();
        // A PATCH of Deployment apps/cache (or of its scale subresource).
        let patch_cache = |cluster: &mut Cluster, req: &_, sub: Option<&str>| {
            answer(update(
                cluster,
                req,
                kind("Deployment"),
                "apps",
                "cache",
                sub,
            ))
        };
        let generation = |cluster: &Cluster| {
            let cache = cluster
                .view("Deployment", "apps", "cache", false)
                .expect("cache");
            (
                cache["metadata"]["generation"].as_i64(),
                cache["status"]["observedGeneration"].as_i64(),
            )
        };
        assert_eq!(generation(&cluster), (Some(1), Some(1)));
        let labels = request("PATCH", "/", r#"{"metadata": {"labels": {"x": "y"}}}"#);
        let (code, _) = patch_cache(&mut cluster, &labels, None);
        assert_eq!(code, 200);
        assert_eq!(generation(&cluster), (Some(1), Some(1)));
        let scale = request("PATCH", "/", r#"{"spec": {"replicas": 3}}"#);
        let (code, _) = patch_cache(&mut cluster, &scale, Some("scale"));
        assert_eq!(code, 200);
        assert_eq!(generation(&cluster), (Some(2), Some(2)));
        let replicas = request("PATCH", "/", r#"{"spec": {"replicas": 4}}"#);
        let (code, body) = patch_cache(&mut cluster, &replicas, None);
        assert_eq!(code, 200);
        assert_eq!(body["metadata"]["generation"], 3);
        // The same replicas again is no spec change.
        let (code, body) = patch_cache(&mut cluster, &replicas, None);
        assert_eq!(code, 200);
        assert_eq!(body["metadata"]["generation"], 3);
    }

    #[test]
    fn status_is_the_simulators_and_cannot_be_written() {
        let mut cluster = cluster();
        let patch = request("PATCH", "/", r#"{"status": {"replicas": 9}}"#);
        let (code, body) = answer(update(
            &mut cluster,
            &patch,
            kind("Deployment"),
            "apps",
            "cache",
            Some("status"),
        ));
        assert_eq!(code, 422);
        assert_eq!(
            body["message"],
            "status is computed by the simulator and cannot be written"
        );
        let mut unsupported = request("PATCH", "/", "{}");
        unsupported.content_type = "text/plain".to_owned();
        let (code, _) = answer(update(
            &mut cluster,
            &unsupported,
            kind("Deployment"),
            "apps",
            "cache",
            None,
        ));
        assert_eq!(code, 415);
    }
}
