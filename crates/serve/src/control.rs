//! The `/bench/v1` control endpoints ([`drillbench_model::bench_protocol`]): what a
//! bench driving the served cluster needs beyond the Kubernetes API (virtual
//! time, node faults, the timeline, etcd's members, backups, a reset).

use serde_json::{Value, json};

use super::api::{ApiError, ApiResult, Reply, Request};
use super::cluster::Cluster;
use super::objects::stamp;
use drillbench_model::bench_protocol::{self as protocol, NodeOperation};
use drillbench_model::drill::Drill;
use drillbench_model::duration::Duration;
use drillbench_model::labels::VELERO_SCHEDULE_LABEL;
use drillbench_model::scenario::spec::GuardSpec;

/// How time passes in the served simulator.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Clock {
    /// Virtual time follows the wall clock times this factor.
    Speed(f64),
    /// Virtual time moves only through `POST /bench/v1/advance`.
    Step,
}

/// A bench endpoint's answer.
pub(super) fn answer(value: &impl serde::Serialize) -> Reply {
    Reply::Json(200, serde_json::to_value(value).unwrap_or_default())
}

/// Answers a `/bench/v1` request other than `reset`, which rebuilds the
/// whole façade and is answered by it.
pub(super) fn bench(
    cluster: &mut Cluster,
    clock: Clock,
    drill: &Drill,
    request: &Request,
    rest: &[&str],
) -> ApiResult {
    let query = |name: &str| {
        request
            .query
            .get(name)
            .cloned()
            .ok_or_else(|| ApiError::bad_request(format!("missing query parameter `{name}`")))
    };
    if request.method == "POST"
        && let [endpoint] = rest
        && let Some(operation) = NodeOperation::named(endpoint)
    {
        return on_node(cluster, &query("node")?, operation);
    }
    match (request.method.as_str(), rest) {
        ("POST", ["advance"]) => {
            if clock != Clock::Step {
                return Err(ApiError::new(
                    409,
                    "Conflict",
                    "time follows the wall clock (--speed); advance needs --step",
                ));
            }
            let parse = |s: &str| {
                s.parse::<Duration>()
                    .map_err(|e| ApiError::bad_request(format!("`{s}`: {e}")))
            };
            let target = match (request.query.get("by"), request.query.get("to")) {
                (Some(by), None) => cluster.sim.now() + parse(by)?.as_millis(),
                (None, Some(to)) => parse(to)?.as_millis().max(cluster.sim.now()),
                _ => return Err(ApiError::bad_request("give exactly one of `by` and `to`")),
            };
            cluster.advance_to(target);
            Ok(answer(&protocol::Advanced {
                now_ms: cluster.sim.now(),
                resource_version: cluster.history().rv().to_string(),
            }))
        }
        ("POST", ["fail-backup"]) => {
            let schedule = query("schedule")?;
            let name = cluster.sim.fail_backup(&schedule)?;
            cluster.sync();
            Ok(answer(&protocol::BackupFailed { failed: name }))
        }
        ("GET", ["now"]) => Ok(answer(&protocol::Now {
            now_ms: cluster.sim.now(),
            resource_version: cluster.history().rv().to_string(),
            next_ms: cluster.sim.next_event_time(),
            epoch_seconds: drillbench_sim::EPOCH_SECONDS,
            drill: drill.name().to_owned(),
            step: clock == Clock::Step,
            latest: cluster
                .history()
                .latest()
                .map(|(k, v)| (k.to_owned(), v.to_string()))
                .collect(),
            endpoint_holder: cluster.sim.endpoint_holder(),
            other_control_plane: cluster.sim.other_control_plane(),
        })),
        // etcd's member list needs quorum, as `etcdctl member list` does.
        ("GET", ["etcd"]) if !cluster.sim.control_plane().has_quorum() => Err(ApiError::new(
            503,
            "ServiceUnavailable",
            "etcd has no quorum: the member list cannot be read",
        )),
        ("GET", ["etcd"]) => Ok(answer(&protocol::EtcdMembers {
            voters: cluster.sim.control_plane().voters(),
            learners: cluster.sim.control_plane().learners(),
        })),
        ("GET", ["autoscaler-pick"]) => {
            let pool = query("pool")?;
            Ok(answer(&protocol::AutoscalerPick {
                node: cluster.sim.autoscaler_pick(&pool),
            }))
        }
        ("GET", ["backups"]) => Ok(Reply::Json(200, velero_backups(cluster))),
        ("GET", ["timeline"]) => Ok(Reply::Json(
            200,
            serde_json::to_value(&cluster.sim.observation().events).unwrap_or_default(),
        )),
        _ => Err(ApiError::new(
            404,
            "NotFound",
            "no such bench endpoint; see POST /bench/v1/advance, /crash, /remove, /replace, /recreate-control-plane, /fail-backup, /reset, GET /bench/v1/now, /timeline, /etcd, /autoscaler-pick, /backups",
        )),
    }
}

/// A bench endpoint that acts on one node by name: the operation, the
/// watchers told, and what was done as the answer.
fn on_node(cluster: &mut Cluster, name: &str, operation: NodeOperation) -> ApiResult {
    let node = cluster
        .sim
        .node_id(name)
        .map_err(|e| ApiError::new(404, "NotFound", e.to_string()))?;
    match operation {
        NodeOperation::Crash => cluster.sim.crash_node_api(node),
        // The server goes; the Node object is the caller's (the bench
        // deletes it through the API after its drain).
        NodeOperation::Remove => cluster.sim.delete_node(node, false, Duration::ZERO),
        NodeOperation::Replace => cluster.sim.replace_node(node),
        NodeOperation::RecreateControlPlane => cluster.sim.recreate_control_plane(node, None),
    }
    cluster.sync();
    Ok(answer(&protocol::NodeDone {
        operation,
        node: name.to_owned(),
        now_ms: cluster.sim.now(),
    }))
}

/// The simulator's backups as Velero lists them (`velero.io/v1`
/// Backups in namespace `velero`), for clients that judge a preflight.
fn velero_backups(cluster: &Cluster) -> Value {
    let items: Vec<Value> = cluster
        .sim
        .backups()
        .iter()
        .map(|b| {
            json!({
                "apiVersion": "velero.io/v1", "kind": "Backup",
                "metadata": {"name": b.name, "namespace": "velero",
                             "labels": {VELERO_SCHEDULE_LABEL: b.schedule},
                             "creationTimestamp": stamp(b.started)},
                "status": {"phase": format!("{:?}", b.phase),
                           "startTimestamp": stamp(b.started),
                           "completionTimestamp": b.finished.map(stamp)},
            })
        })
        .collect();
    json!({"apiVersion": "velero.io/v1", "kind": "BackupList", "metadata": {}, "items": items})
}

/// What `POST /bench/v1/reset?seed=N` with `{"guards": [...]}` asks for:
/// the served drill with these guards (and, with `"workloads": false`, its
/// nodes only), and the seed to provision it with.
pub(super) fn reset_drill(drill: &Drill, request: &Request) -> Result<(Drill, u64), ApiError> {
    let seed = request
        .query
        .get("seed")
        .ok_or_else(|| ApiError::bad_request("missing query parameter `seed`"))?
        .parse::<u64>()
        .map_err(|e| ApiError::bad_request(format!("seed: {e}")))?;
    let body: protocol::Reset = if request.body.is_empty() {
        protocol::Reset::default()
    } else {
        serde_json::from_value(request.json_body()?)
            .map_err(|e| ApiError::bad_request(format!("the reset body: {e}")))?
    };
    let mut drill = drill.clone();
    // The guards come as text: their positions make them YAML-shaped
    // (JSON is YAML), and `unlabelledTerms` carries the one ablation
    // their serialised form leaves out.
    if let Some(text) = &body.guards {
        let guards: Vec<drillbench_model::scenario::Located<GuardSpec>> =
            serde_saphyr::from_str(text)
                .map_err(|e| ApiError::bad_request(format!("guards: {e}")))?;
        drill.spec.guards = guards
            .into_iter()
            .map(|mut g| {
                let name = g.value.name.as_str();
                g.value.unlabelled_term = body.unlabelled_terms.iter().any(|t| t == name);
                g
            })
            .collect();
    }
    // The policies admission runs, as the bench's weakened drill has them:
    // a removed policy is gone from the workloads too, a patched one
    // replaced there.
    if let Some(policies) = body.policies {
        let name = |v: &Value| drillbench_model::policy_guard::policy_name(v);
        std::sync::Arc::make_mut(&mut drill.workloads).retain_mut(|doc| match name(&doc.value) {
            None => true,
            Some(n) => match policies.iter().find(|p| name(p).as_deref() == Some(&n)) {
                Some(p) => {
                    doc.value = p.clone();
                    true
                }
                None => false,
            },
        });
        drill.policies = std::sync::Arc::new(
            policies
                .into_iter()
                .enumerate()
                .map(|(index, value)| drillbench_model::manifest::Document {
                    source: "<reset>".to_owned(),
                    index,
                    line: 0,
                    column: 0,
                    value,
                })
                .collect(),
        );
    }
    // `"workloads": false`: an empty cluster, as kind and Talos create
    // one, for the bench to apply the workloads to.
    if body.workloads == Some(false) {
        drill.workloads = Default::default();
    }
    Ok((drill, seed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{self, cluster, drill, request};

    fn call(cluster: &mut Cluster, clock: Clock, method: &str, path: &str) -> (u16, Value) {
        let request = request(method, path, "");
        let rest: Vec<&str> = request.path.split('/').filter(|s| !s.is_empty()).collect();
        let reply = bench(cluster, clock, &drill(), &request, &rest);
        testing::json(reply.unwrap_or_else(ApiError::reply))
    }

    #[test]
    fn advancing_moves_virtual_time_by_or_to_a_duration() {
        let mut cluster = cluster();
        let (code, body) = call(&mut cluster, Clock::Step, "POST", "advance?by=90s");
        assert_eq!(code, 200);
        assert_eq!(body["nowMs"], 90_000);
        assert_eq!(cluster.sim.now(), 90_000);
        assert_eq!(body["resourceVersion"], cluster.history().rv().to_string());
        let (_, body) = call(&mut cluster, Clock::Step, "POST", "advance?to=5m");
        assert_eq!(body["nowMs"], 300_000);
        let (_, body) = call(&mut cluster, Clock::Step, "POST", "advance?to=1m");
        assert_eq!(body["nowMs"], 300_000, "time never runs backwards");
        let (code, _) = call(&mut cluster, Clock::Step, "POST", "advance?by=1m&to=9m");
        assert_eq!(code, 400);
        let (code, _) = call(&mut cluster, Clock::Step, "POST", "advance?by=soon");
        assert_eq!(code, 400);
    }

    #[test]
    fn advancing_needs_a_stepped_clock() {
        let mut cluster = cluster();
        let (code, body) = call(&mut cluster, Clock::Speed(1.0), "POST", "advance?by=1m");
        assert_eq!((code, body["reason"].as_str()), (409, Some("Conflict")));
        assert_eq!(cluster.sim.now(), 0);
    }

    #[test]
    fn now_reports_the_clock_and_the_newest_version_of_each_kind() {
        let mut cluster = cluster();
        let (code, body) = call(&mut cluster, Clock::Step, "GET", "now");
        assert_eq!(code, 200);
        let now: protocol::Now = serde_json::from_value(body).expect("a Now");
        assert_eq!(now.now_ms, 0);
        assert_eq!(now.drill, "serve");
        assert!(now.step);
        assert_eq!(now.resource_version, cluster.history().rv().to_string());
        let newest = now
            .latest
            .values()
            .filter_map(|v| v.parse::<u64>().ok())
            .max();
        assert_eq!(newest, Some(cluster.history().rv()));
        assert!(now.latest.contains_key("Pod"));
    }

    #[test]
    fn a_node_operation_names_the_node_it_acted_on() {
        let mut cluster = cluster();
        let (code, body) = call(
            &mut cluster,
            Clock::Step,
            "POST",
            "crash?node=prod-worker-3",
        );
        assert_eq!(code, 200);
        assert_eq!(body, json!({"crashed": "prod-worker-3", "nowMs": 0}));
        let timeline = cluster.sim.observation().events.len();
        assert!(timeline > 0);
        let (code, _) = call(
            &mut cluster,
            Clock::Step,
            "POST",
            "crash?node=prod-worker-9",
        );
        assert_eq!(code, 404);
        let (code, _) = call(&mut cluster, Clock::Step, "POST", "crash");
        assert_eq!(code, 400, "the node is required");
    }

    #[test]
    fn etcd_members_and_the_timeline_are_read_only_views() {
        let mut cluster = cluster();
        let (code, body) = call(&mut cluster, Clock::Step, "GET", "etcd");
        assert_eq!(code, 200);
        assert_eq!(body["voters"], 3);
        let (code, body) = call(&mut cluster, Clock::Step, "GET", "timeline");
        assert_eq!(code, 200);
        assert_eq!(
            body.as_array().map(Vec::len),
            Some(cluster.sim.observation().events.len())
        );
        let (code, body) = call(&mut cluster, Clock::Step, "GET", "backups");
        assert_eq!(code, 200);
        assert_eq!(body["kind"], "BackupList");
        let (code, _) = call(&mut cluster, Clock::Step, "GET", "advance");
        assert_eq!(code, 404, "advance is a POST");
    }

    #[test]
    fn a_reset_reads_its_seed_and_what_to_keep() {
        let drill = drill();
        let with = |path: &str, body: &str| reset_drill(&drill, &request("POST", path, body));
        assert!(with("reset", "").is_err(), "a seed is required");
        assert!(with("reset?seed=x", "").is_err());
        let (same, seed) = with("reset?seed=9", "").expect("a reset");
        assert_eq!(seed, 9);
        assert_eq!(same.workloads.len(), drill.workloads.len());
        let (empty, _) = with("reset?seed=1", r#"{"workloads": false}"#).expect("a reset");
        assert!(empty.workloads.is_empty());
        assert_eq!(empty.topology.pools.len(), drill.topology.pools.len());
        assert!(with("reset?seed=1", r#"{"workloads": 3}"#).is_err());
    }

    #[test]
    fn a_reset_replaces_the_guards_and_marks_the_ablated_ones() {
        let drill = drill();
        let guard = |name: &str| {
            format!(
                "- name: {name}\n  action: Enforce\n  match: {{mountsClaimOfClass: hcloud}}\n  require:\n    nodeAffinity: {{key: k, operator: In, values: [\"true\"]}}\n"
            )
        };
        let body = json!({"guards": guard("a") + &guard("b"), "unlabelledTerms": ["b"]});
        let (reset, _) = reset_drill(&drill, &request("POST", "reset?seed=1", &body.to_string()))
            .expect("a reset");
        let guards: Vec<(&str, bool)> = reset
            .spec
            .guards
            .iter()
            .map(|g| (g.value.name.as_str(), g.value.unlabelled_term))
            .collect();
        assert_eq!(guards, [("a", false), ("b", true)]);
        let bad = json!({"guards": "- name: [unclosed"});
        assert!(reset_drill(&drill, &request("POST", "reset?seed=1", &bad.to_string())).is_err());
    }
}
