//! The simulator's side of the façade: it owns the served cluster on one
//! thread and answers API requests in the order they arrive, so the model
//! never depends on request timing beyond that order.
//!
//! This is the router; each concept lives in its own part: the change log
//! and resource versions (`super::history`), open watches
//! (`super::watch`), the simulator as API objects (`super::objects`),
//! what the API wrote beside it (`super::written`), the read and write
//! paths (`super::read`, `super::write`) and the `/bench/v1` control
//! endpoints (`super::control`).

use serde_json::{Value, json};

use super::api::{ApiError, ApiResult, Reply, Request};
use super::cluster::Cluster;
use super::control::{self, Clock, answer};
use super::objects::scale_of;
use super::resources::{self, Resource};
use super::{crds, discovery, openapi, read, write};
use drillbench_model::bench_protocol as protocol;
use drillbench_model::drill::Drill;
use drillbench_sim::Simulation;
use drillbench_sim::clock::Time;

/// How many changes a watch can resume from, by default.
pub const DEFAULT_HISTORY_WINDOW: usize = 10_000;

/// The served cluster at time zero: the simulator's own, or, with standby
/// nodes, the one kind and Talos provision (see [`ServeOptions::standby_nodes`]).
///
/// [`ServeOptions::standby_nodes`]: super::ServeOptions::standby_nodes
pub(super) fn provision(
    drill: &Drill,
    seed: u64,
    standby_nodes: Option<u32>,
) -> Result<Simulation, drillbench_sim::SimError> {
    match standby_nodes {
        Some(per_pool) => Simulation::with_standby_nodes(drill, seed, per_pool),
        None => Simulation::new(drill, seed),
    }
}

/// The served cluster and how it is served.
pub(super) struct Facade {
    cluster: Cluster,
    clock: Clock,
    /// How many changes a watch can resume from.
    window: usize,
    /// The drill served, kept so `POST /bench/v1/reset` can provision it
    /// again with other guards (a negative control's re-run).
    drill: Drill,
    /// `--standby-nodes`: a reset provisions the same way.
    standby_nodes: Option<u32>,
    /// The OpenAPI documents, serialised once per set of served types.
    documents: openapi::Documents,
}

impl Facade {
    pub(super) fn new(
        drill: &Drill,
        sim: Simulation,
        clock: Clock,
        window: usize,
        standby_nodes: Option<u32>,
    ) -> Facade {
        Self::with_first_rv(drill, sim, clock, window, standby_nodes, 0)
    }

    /// Like [`Facade::new`], with resourceVersions continuing after `rv`
    /// (a reset must never reuse a version a client has seen).
    fn with_first_rv(
        drill: &Drill,
        sim: Simulation,
        clock: Clock,
        window: usize,
        standby_nodes: Option<u32>,
        rv: u64,
    ) -> Facade {
        Facade {
            cluster: Cluster::new(drill, sim, window, rv),
            clock,
            window,
            drill: drill.clone(),
            standby_nodes,
            documents: openapi::Documents::default(),
        }
    }

    /// See [`super::limits::Limits::max_pods`].
    pub(super) fn set_max_pods(&mut self, max_pods: u64) {
        self.cluster.max_pods = max_pods;
    }

    pub(super) fn simulation(&self) -> &Simulation {
        &self.cluster.sim
    }

    /// See [`Cluster::advance_to`].
    pub(super) fn advance_to(&mut self, until: Time) {
        self.cluster.advance_to(until);
    }

    pub(super) fn clock(&self) -> Clock {
        self.clock
    }

    /// Sends a bookmark to every watcher that asked for them.
    pub(super) fn bookmarks(&mut self) {
        self.cluster.bookmarks();
    }

    /// Answers one request.
    pub(super) fn handle(&mut self, request: Request) -> Reply {
        if matches!(request.method.as_str(), "GET" | "HEAD")
            && request.path.contains("poddisruptionbudgets")
        {
            self.cluster.sim.refresh_budgets();
        }
        match self.route(&request) {
            Ok(reply) => reply,
            Err(error) => error.reply(),
        }
    }

    fn route(&mut self, request: &Request) -> ApiResult {
        if let Some(review) = super::access::answer(request, false) {
            return review;
        }
        let path = request.path.trim_end_matches('/');
        let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let ok = |v| Ok(Reply::Json(200, v));
        let found = |v: Option<_>| {
            v.map(|g| Reply::Json(200, g))
                .ok_or_else(ApiError::no_such_path)
        };
        match segments.as_slice() {
            ["version"] => ok(resources::version()),
            // Readiness follows the modelled API behind the stable
            // endpoint (quorum and a healthy apiserver holding it), so a
            // probe through the façade measures what the simulator models.
            ["readyz"]
                if self.drill.topology.endpoint.is_some() && !self.cluster.sim.api_available() =>
            {
                Err(ApiError::new(
                    503,
                    "ServiceUnavailable",
                    "the modelled API is unavailable: no quorum or no healthy apiserver holds the endpoint",
                ))
            }
            // A simulation that reached its run budget (events, actions)
            // stops while time still passes: the server says so instead
            // of serving a cluster where nothing happens any more.
            ["healthz"] | ["readyz"] | ["livez"] if self.cluster.sim.over_budget().is_some() => {
                Err(ApiError::new(
                    503,
                    "ServiceUnavailable",
                    format!(
                        "the served simulation stopped: {}",
                        self.cluster.sim.over_budget().unwrap_or_default()
                    ),
                ))
            }
            ["healthz"] | ["readyz"] | ["livez"] => ok(json!("ok")),
            ["api"] | ["apis"] if let Some(v) = discovery::wants_aggregated(&request.accept) => ok(
                discovery::aggregated(&self.cluster.written, segments == ["api"], v),
            ),
            ["api"] => ok(resources::core_versions()),
            ["apis"] => ok(discovery::groups(&self.cluster.written)),
            ["api", "v1"] => ok(resources::resource_list("", "v1").unwrap_or_default()),
            ["apis", group] => found(discovery::group(&self.cluster.written, group)),
            ["apis", group, version] => found(discovery::resource_list(
                &self.cluster.written,
                group,
                version,
            )),
            ["openapi", "v3"] => Ok(json_bytes(self.documents.index(&self.cluster.written))),
            ["openapi", "v3", rest @ ..] => self
                .documents
                .group_version(&self.cluster.written, &rest.join("/"))
                .map(json_bytes)
                .ok_or_else(ApiError::no_such_path),
            ["openapi", "v2"] => Ok(match openapi::v2(&request.accept) {
                (Some(media_type), _, body) => Reply::Raw {
                    status: 200,
                    media_type,
                    body,
                },
                (None, json, _) => Reply::Json(200, json),
            }),
            ["bench", "v1", "reset"] if request.method == "POST" => self.reset(request),
            ["bench", "v1", rest @ ..] => {
                control::bench(&mut self.cluster, self.clock, &self.drill, request, rest)
            }
            ["api", "v1", rest @ ..] => self.resource(request, "", "v1", rest),
            ["apis", group, version, rest @ ..] => self.resource(request, group, version, rest),
            _ => Err(ApiError::no_such_path()),
        }
    }

    /// `POST /bench/v1/reset?seed=N` with `{"guards": [...]}`: provisions the
    /// served drill again from nothing with these guards and seed (a real
    /// backend's re-provisioning for a negative control); with
    /// `"workloads": false`, its nodes only. Watches end; the
    /// resourceVersions continue.
    fn reset(&mut self, request: &Request) -> ApiResult {
        let (drill, seed) = control::reset_drill(&self.drill, request)?;
        let sim = provision(&drill, seed, self.standby_nodes)
            .map_err(|e| ApiError::invalid(format!("cannot provision the drill again: {e}")))?;
        let rv = self.cluster.history().rv();
        let max_pods = self.cluster.max_pods;
        *self = Facade::with_first_rv(&drill, sim, self.clock, self.window, self.standby_nodes, rv);
        self.cluster.max_pods = max_pods;
        Ok(answer(&protocol::ResetDone {
            reset: drill.name().to_owned(),
            seed,
            resource_version: self.cluster.history().rv().to_string(),
        }))
    }

    /// A request under a resource's path:
    /// `[namespaces/NS/]PLURAL[/NAME[/SUBRESOURCE]]`.
    fn resource(
        &mut self,
        request: &Request,
        group: &str,
        version: &str,
        rest: &[&str],
    ) -> ApiResult {
        let (namespace, rest) = match rest {
            ["namespaces", ns, tail @ ..] if !tail.is_empty() => (Some(ns.to_string()), tail),
            _ => (None, rest),
        };
        let (plural, name, sub) = match rest {
            [plural] => (*plural, None, None),
            [plural, name] => (*plural, Some(name.to_string()), None),
            [plural, name, sub] => (*plural, Some(name.to_string()), Some(*sub)),
            _ => return Err(ApiError::no_such_path()),
        };
        let resource = resources::find(group, version, plural)
            .or_else(|| crds::find(&self.cluster.written, group, version, plural))
            .ok_or_else(ApiError::no_such_path)?;
        if namespace.is_some() && !resource.namespaced {
            return Err(ApiError::new(
                404,
                "NotFound",
                format!("{} is not namespaced", resource.qualified()),
            ));
        }
        if let Some(sub) = sub
            && !resource.subresources.contains(&sub)
        {
            return Err(ApiError::new(
                404,
                "NotFound",
                format!("{}/{sub} is not served", resource.qualified()),
            ));
        }
        let dry_run = dry_run(request)?;
        if dry_run {
            // Everything a real request does (validation, admission by the
            // guards, the simulator's own refusals) happens on a copy that is
            // thrown away: nothing is kept, announced or advanced.
            let mut scratch = self.cluster.scratch();
            let reply = act(
                &mut scratch,
                request,
                resource,
                namespace,
                name.clone(),
                sub,
            )?;
            return Ok(self.as_stored(reply, resource));
        }
        act(&mut self.cluster, request, resource, namespace, name, sub)
    }

    /// A dry run's answer with the resourceVersion the object really has
    /// (none for one that does not exist): the API server stores nothing,
    /// so it assigns no version.
    fn as_stored(&self, reply: Reply, resource: &'static Resource) -> Reply {
        let Reply::Json(code, mut body) = reply else {
            return reply;
        };
        if body.get("kind").and_then(Value::as_str) == Some("Status") {
            return Reply::Json(code, body);
        }
        let namespace = body
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let name = body
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let stored = self
            .cluster
            .view(resource.key, &namespace, &name, false)
            .and_then(|o| o.pointer("/metadata/resourceVersion").cloned());
        if let Some(meta) = body.get_mut("metadata").and_then(Value::as_object_mut) {
            match stored {
                Some(rv) => {
                    meta.insert("resourceVersion".to_owned(), rv);
                }
                None => {
                    meta.remove("resourceVersion");
                }
            }
        }
        Reply::Json(code, body)
    }
}

/// A JSON document already serialised.
fn json_bytes(body: bytes::Bytes) -> Reply {
    Reply::Raw {
        status: 200,
        media_type: "application/json",
        body,
    }
}

/// Whether a write is a dry run: `dryRun=All` in the query, or
/// `dryRun: ["All"]` in the delete options a DELETE or an eviction
/// carries. `All` is the one value the API server accepts (apimachinery's
/// `ValidateDryRun`: any other is an `Unsupported value`, 422).
fn dry_run(request: &Request) -> Result<bool, ApiError> {
    if !matches!(request.method.as_str(), "POST" | "PUT" | "PATCH" | "DELETE") {
        return Ok(false);
    }
    let mut values: Vec<String> = request.query.get("dryRun").into_iter().cloned().collect();
    if matches!(request.method.as_str(), "POST" | "DELETE")
        && let Ok(body) = request.json_body()
    {
        for pointer in ["/dryRun", "/deleteOptions/dryRun"] {
            if let Some(Value::Array(given)) = body.pointer(pointer) {
                values.extend(given.iter().filter_map(Value::as_str).map(str::to_owned));
            }
        }
    }
    match values.iter().find(|v| v.as_str() != "All") {
        Some(other) => Err(ApiError::invalid(format!(
            "dryRun: Unsupported value: \"{other}\": supported values: \"All\""
        ))),
        None => Ok(!values.is_empty()),
    }
}

/// A request under a resource's path, on `cluster`.
fn act(
    cluster: &mut Cluster,
    request: &Request,
    resource: &'static Resource,
    namespace: Option<String>,
    name: Option<String>,
    sub: Option<&str>,
) -> ApiResult {
    let namespace_or_default = || namespace.clone().unwrap_or_else(|| "default".to_owned());
    let ns_of = || {
        if resource.namespaced {
            namespace_or_default()
        } else {
            String::new()
        }
    };
    match (request.method.as_str(), name, sub) {
        ("GET", None, None) => {
            if request
                .query
                .get("watch")
                .is_some_and(|w| w == "true" || w == "1")
            {
                read::watch(cluster, request, resource, namespace)
            } else {
                read::list(cluster, request, resource, namespace)
            }
        }
        ("GET", Some(name), None | Some("status")) => {
            if resource.namespaced && namespace.is_none() {
                return Err(ApiError::not_found(resource, &name));
            }
            let object = cluster
                .view(resource.key, &ns_of(), &name, false)
                .ok_or_else(|| ApiError::not_found(resource, &name))?;
            Ok(read::single(cluster, request, resource, object))
        }
        ("GET", Some(name), Some("scale")) => {
            let object = cluster
                .view(resource.key, &ns_of(), &name, false)
                .ok_or_else(|| ApiError::not_found(resource, &name))?;
            let scale = if resource.is_custom() {
                crds::scale_of(&cluster.written, resource, &object)?
            } else {
                scale_of(&object)
            };
            Ok(Reply::Json(200, scale))
        }
        ("POST", None, None) => write::create(cluster, request, resource, ns_of()),
        ("POST", Some(name), Some("eviction")) => {
            write::evict(cluster, request, resource, &ns_of(), &name)
        }
        ("PUT" | "PATCH", Some(name), sub) => {
            write::update(cluster, request, resource, &ns_of(), &name, sub)
        }
        ("DELETE", Some(name), None) => write::delete(cluster, request, resource, &ns_of(), &name),
        _ => Err(ApiError::new(
            405,
            "MethodNotAllowed",
            format!("{} is not supported on this path", request.method),
        )),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::testing::{drill, get, json, request, rv_of, watch};

    fn facade(clock: Clock) -> Facade {
        let drill = drill();
        let sim = provision(&drill, 7, None).expect("the serve drill provisions");
        Facade::new(&drill, sim, clock, DEFAULT_HISTORY_WINDOW, None)
    }

    fn answer(facade: &mut Facade, request: Request) -> (u16, Value) {
        json(facade.handle(request))
    }

    /// A served simulation that ran out of its run budget says so on its
    /// health endpoints rather than serving a cluster where nothing moves;
    /// paired with the same drill within its budget, which answers `ok`.
    #[test]
    fn a_simulation_past_its_run_budget_is_unhealthy_and_says_why() {
        for (events, healthy) in [(None, true), (Some(5), false)] {
            let mut drill = crate::testing::drill();
            drill.spec.budgets = Some(drillbench_model::budget::BudgetSpec {
                events: events.map(drillbench_model::scenario::Located::new),
                ..Default::default()
            });
            let sim = provision(&drill, 7, None).expect("the serve drill provisions");
            let mut facade = Facade::new(&drill, sim, Clock::Step, DEFAULT_HISTORY_WINDOW, None);
            facade.advance_to(60_000);
            for path in ["/healthz", "/livez", "/readyz"] {
                let (code, body) = answer(&mut facade, get(path));
                if healthy {
                    assert_eq!((code, body), (200, json!("ok")), "{path}");
                } else {
                    assert_eq!(code, 503, "{path}: {body}");
                    let message = body["message"].as_str().unwrap_or_default();
                    assert!(
                        message.starts_with("the served simulation stopped:")
                            && message.contains("budgets.events"),
                        "{message}"
                    );
                }
            }
        }
    }

    #[test]
    fn discovery_and_health_answer_without_touching_the_cluster() {
        let mut facade = facade(Clock::Step);
        let (code, body) = answer(&mut facade, get("/version"));
        assert_eq!(code, 200);
        assert!(body["gitVersion"].is_string());
        assert_eq!(answer(&mut facade, get("/readyz")), (200, json!("ok")));
        assert_eq!(answer(&mut facade, get("/apis/apps")).0, 200);
        assert_eq!(
            answer(&mut facade, get("/apis/apps/v1/")).0,
            200,
            "a trailing slash is fine"
        );
        let (code, body) = answer(&mut facade, get("/apis/widgets.example.com"));
        assert_eq!((code, body["reason"].as_str()), (404, Some("NotFound")));
        assert_eq!(answer(&mut facade, get("/nothing/here")).0, 404);
    }

    #[test]
    fn a_resource_path_is_read_as_namespace_plural_name_and_subresource() {
        let mut facade = facade(Clock::Step);
        let (code, pod) = answer(&mut facade, get("/api/v1/namespaces/apps/pods/api-00000"));
        assert_eq!(code, 200);
        assert_eq!(pod["metadata"]["name"], "api-00000");
        let (code, _) = answer(&mut facade, get("/api/v1/pods/api-00000"));
        assert_eq!(code, 404, "a namespaced object needs its namespace");
        let (code, body) = answer(&mut facade, get("/api/v1/namespaces/apps/nodes"));
        assert_eq!(code, 404);
        assert_eq!(body["message"], "nodes is not namespaced");
        let (code, body) = answer(
            &mut facade,
            get("/api/v1/namespaces/apps/pods/api-00000/exec"),
        );
        assert_eq!(code, 404);
        assert_eq!(body["message"], "pods/exec is not served");
        let (code, scale) = answer(
            &mut facade,
            get("/apis/apps/v1/namespaces/apps/deployments/api/scale"),
        );
        assert_eq!((code, scale["spec"]["replicas"].as_u64()), (200, Some(2)));
        let (code, _) = answer(&mut facade, request("PATCH", "/api/v1/pods", "{}"));
        assert_eq!(code, 405);
        let (code, list) = answer(&mut facade, get("/api/v1/namespaces/kube-system/pods"));
        assert_eq!(
            (code, list["items"].as_array().map(Vec::len)),
            (200, Some(3))
        );
    }

    #[test]
    fn a_list_with_watch_set_is_a_watch() {
        let mut facade = facade(Clock::Step);
        let (mut events, _) = watch(facade.handle(get("/api/v1/nodes?watch=1")));
        let mut nodes = 0;
        while let Ok(line) = events.try_recv() {
            let line: Value = serde_json::from_slice(&line).expect("json");
            assert_eq!(line["type"], "ADDED");
            nodes += 1;
        }
        assert_eq!(nodes, 6);
    }

    #[test]
    fn a_reset_provisions_again_and_never_reuses_a_version() {
        let mut facade = facade(Clock::Step);
        let (_, before) = answer(&mut facade, get("/api/v1/namespaces/apps/pods/api-00000"));
        let (code, done) = answer(
            &mut facade,
            request("POST", "/bench/v1/reset?seed=3", r#"{"workloads": false}"#),
        );
        assert_eq!(code, 200);
        assert_eq!(done["reset"], "serve");
        let rv: u64 = done["resourceVersion"]
            .as_str()
            .and_then(|v| v.parse().ok())
            .expect("a version");
        assert!(rv > rv_of(&before), "{rv} after {}", rv_of(&before));
        let (_, pods) = answer(&mut facade, get("/api/v1/pods"));
        assert_eq!(pods["items"].as_array().map(Vec::len), Some(0));
        let (_, nodes) = answer(&mut facade, get("/api/v1/nodes"));
        assert!(nodes["items"].as_array().is_some_and(|n| !n.is_empty()));
        assert!(
            nodes["items"]
                .as_array()
                .into_iter()
                .flatten()
                .all(|n| rv_of(n) > rv_of(&before))
        );
        // The clock and window survive the reset.
        assert_eq!(facade.clock(), Clock::Step);
        let (code, _) = answer(&mut facade, request("POST", "/bench/v1/advance?by=1s", ""));
        assert_eq!(code, 200);
        assert_eq!(facade.simulation().now(), 1000);
    }

    #[test]
    fn a_dry_run_answers_as_the_write_would_and_keeps_nothing() {
        let mut facade = facade(Clock::Step);
        // Ready pods: a Pending one is evicted without asking its budget.
        facade.advance_to(600_000);
        let rv = facade.cluster.history().rv();
        let map = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dry","namespace":"apps"}}"#;
        let (code, created) = answer(
            &mut facade,
            request("POST", "/api/v1/namespaces/apps/configmaps?dryRun=All", map),
        );
        assert_eq!(code, 201);
        assert_eq!(created["metadata"]["name"], "dry");
        assert!(
            created["metadata"].get("resourceVersion").is_none(),
            "nothing stored, no version: {created}"
        );
        let (code, _) = answer(&mut facade, get("/api/v1/namespaces/apps/configmaps/dry"));
        assert_eq!(code, 404);
        // An eviction the budget allows, and one it forbids: the answers
        // are the real ones, and the pods stay.
        let dry_evict = r#"{"deleteOptions": {"dryRun": ["All"]}}"#;
        let (code, _) = answer(
            &mut facade,
            request(
                "POST",
                "/api/v1/namespaces/apps/pods/cache-00000/eviction",
                dry_evict,
            ),
        );
        assert_eq!(code, 201);
        let (code, _) = answer(
            &mut facade,
            request(
                "POST",
                "/api/v1/namespaces/apps/pods/api-00000/eviction",
                dry_evict,
            ),
        );
        assert_eq!(code, 429, "a dry run is still admitted, and refused");
        let (code, pod) = answer(&mut facade, get("/api/v1/namespaces/apps/pods/cache-00000"));
        assert_eq!(code, 200);
        assert!(pod["metadata"].get("deletionTimestamp").is_none(), "{pod}");
        let (code, scale) = answer(
            &mut facade,
            request(
                "PATCH",
                "/apis/apps/v1/namespaces/apps/deployments/cache/scale?dryRun=All",
                r#"{"spec": {"replicas": 7}}"#,
            ),
        );
        assert_eq!((code, scale["spec"]["replicas"].as_u64()), (200, Some(7)));
        let (_, cache) = answer(
            &mut facade,
            get("/apis/apps/v1/namespaces/apps/deployments/cache"),
        );
        assert_eq!(cache["spec"]["replicas"], 2);
        assert_eq!(facade.cluster.history().rv(), rv, "no change was announced");
        // Control: the same scale without the dry run is kept.
        let (code, _) = answer(
            &mut facade,
            request(
                "PATCH",
                "/apis/apps/v1/namespaces/apps/deployments/cache/scale",
                r#"{"spec": {"replicas": 7}}"#,
            ),
        );
        assert_eq!(code, 200);
        let (_, cache) = answer(
            &mut facade,
            get("/apis/apps/v1/namespaces/apps/deployments/cache"),
        );
        assert_eq!(cache["spec"]["replicas"], 7);
        assert!(facade.cluster.history().rv() > rv);
    }

    #[test]
    fn a_dry_run_value_other_than_all_is_refused() {
        let mut facade = facade(Clock::Step);
        let (code, body) = answer(
            &mut facade,
            request(
                "PATCH",
                "/apis/apps/v1/namespaces/apps/deployments/cache/scale?dryRun=Yes",
                r#"{"spec": {"replicas": 7}}"#,
            ),
        );
        assert_eq!(code, 422);
        assert_eq!(
            body["message"],
            "dryRun: Unsupported value: \"Yes\": supported values: \"All\""
        );
        let (_, cache) = answer(
            &mut facade,
            get("/apis/apps/v1/namespaces/apps/deployments/cache"),
        );
        assert_eq!(cache["spec"]["replicas"], 2);
    }

    #[test]
    fn advancing_through_the_facade_moves_the_simulation() {
        let mut facade = facade(Clock::Speed(2.0));
        facade.advance_to(30_000);
        assert_eq!(facade.simulation().now(), 30_000);
        let (code, _) = answer(&mut facade, request("POST", "/bench/v1/advance?by=1s", ""));
        assert_eq!(code, 409, "time follows the wall clock");
    }
}
