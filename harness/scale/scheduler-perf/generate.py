#!/usr/bin/env python3
# Writes the drill files of this directory: `python3 harness/scale/scheduler-perf/generate.py .`
# from the repository root. The shapes, counts and thresholds are transcribed from
# kube-scheduler's scheduler_perf configs (paths in each drill file).
# Generates harness/scale/scheduler-perf/: kube-scheduler scheduler_perf workload shapes.
import os, sys
root = sys.argv[1]
out = os.path.join(root, "harness/scale/scheduler-perf")
UP = "kubernetes/kubernetes test/integration/scheduler_perf/"
RES = "resources: {requests: {cpu: 100m, memory: 500Mi}, limits: {cpu: 100m, memory: 500Mi}}"

# name, source, upstream workload at 5000 nodes, threshold, zones, per size (init, measure), describe
W = [
 dict(name="scheduling-basic", up="SchedulingBasic", src="misc/performance-config.yaml", wl="5000Nodes_50000Pods", thr=810,
      zones=["zone1","zone2","zone3"], sizes={500:(500,1000),5000:(5000,50000),10000:(10000,100000)},
      init=("default","default"), measure=("default","default"),
      tmpl="templates/pod-default.yaml",
      text="pods requesting 100m CPU and 500Mi, no placement rules"),
 dict(name="node-affinity", up="SchedulingNodeAffinity", src="affinity/performance-config.yaml", wl="5000Nodes_10000Pods", thr=220,
      zones=["zone1","zone2","zone3"], sizes={500:(500,1000),5000:(5000,10000),10000:(10000,20000)},
      init=("node-affinity","default"), measure=("node-affinity","default"),
      tmpl="templates/pod-with-node-affinity.yaml",
      text="pods requiring topology.kubernetes.io/zone In [zone1, zone2]"),
 dict(name="pod-anti-affinity", up="SchedulingPodAntiAffinity", src="affinity/performance-config.yaml", wl="5000Nodes_2000Pods", thr=60,
      zones=["zone1","zone2","zone3"], sizes={500:(100,400),5000:(1000,2000),10000:(2000,4000)},
      init=("anti-affinity","sched-0"), measure=("anti-affinity","sched-1"),
      tmpl="templates/pod-with-pod-anti-affinity.yaml",
      text="pods labelled color: green, each repelling every other green pod of sched-0 and sched-1 by hostname"),
 dict(name="pod-affinity", up="SchedulingPodAffinity", src="affinity/performance-config.yaml", wl="5000Nodes_5000Pods", thr=35,
      zones=["zone1","zone2","zone3"], sizes={500:(500,1000),5000:(5000,5000),10000:(10000,10000)},
      init=("affinity","sched-0"), measure=("affinity","sched-1"),
      tmpl="templates/pod-with-pod-affinity.yaml",
      text="pods labelled color: blue, each requiring a blue pod of sched-0 or sched-1 in its zone"),
 dict(name="topology-spreading", up="TopologySpreading", src="topology_spreading/performance-config.yaml", wl="5000Nodes_5000Pods", thr=460,
      zones=["moon-1","moon-2","moon-3"], sizes={500:(1000,1000),5000:(5000,5000),10000:(10000,10000)},
      init=("default","default"), measure=("spread","default"),
      tmpl="templates/pod-with-topology-spreading.yaml",
      text="plain pods, then pods labelled color: blue spread over zones with maxSkew 5, DoNotSchedule"),
 dict(name="preemption", up="PreemptionAsync", src="misc/performance-config.yaml", wl="5000Nodes", thr=570,
      zones=["zone1","zone2","zone3"], sizes={500:(2000,500),5000:(20000,5000),10000:(40000,10000)},
      init=("low-priority","default"), measure=("default","default"),
      tmpl="templates/pod-low-priority.yaml, templates/pod-high-priority.yaml, templates/pod-default.yaml",
      # Upstream's churn creates a high-priority pod every 200 ms while the
      # measured pods are scheduled: at the threshold rate that is about one
      # per 114 measured pods (5000 pods in ~8.8 s: 44 pods).
      preemptors={500:5,5000:44,10000:88},
      text="{init} low-priority pods filling 3.6 of each node's 4 CPU, then {pre} high-priority pods (3 CPU) that each preempt three of them, then {measure} plain pods"),
 dict(name="mixed-churn", up="SchedulingWithMixedChurn", src="misc/performance-config.yaml", wl="5000Nodes_10000Pods", thr=710,
      zones=["zone1","zone2","zone3"], sizes={500:(0,1000),5000:(0,10000),10000:(0,20000)},
      init=("default","default"), measure=("default","default"),
      tmpl="templates/pod-default.yaml, templates/pod-high-priority-large-cpu.yaml",
      # Upstream's churn op (mode recreate, number 1) replaces a node, a
      # high-priority 9-CPU pod and a Service every second while the
      # measured pods are scheduled: at the threshold rate that is one
      # round per 710 measured pods. Only the pod is churned here: a drill
      # step cannot create a Node object (replaceNode brings a server back
      # under its old Node, which the scheduler never sees leave), and a
      # Service changes nothing the simulator's scheduler reads.
      churn=710,
      text="{measure} plain pods, {per} a second, and each second the 9-CPU high-priority churn pod (which fits no node) deleted and created again"),
 dict(name="preferred-topology-spreading", up="PreferredTopologySpreading", src="topology_spreading/performance-config.yaml", wl="5000Nodes_5000Pods", thr=340,
      zones=["moon-1","moon-2","moon-3"], sizes={500:(1000,1000),5000:(5000,5000),10000:(10000,10000)},
      init=("default","default"), measure=("preferred-spread","default"),
      tmpl="templates/pod-with-preferred-topology-spreading.yaml",
      text="plain pods, then pods labelled color: blue spread over zones with maxSkew 5, ScheduleAnyway (the simulator does not score it yet: the constraint is parsed and ignored)"),
]

def spec(kind):
    if kind == "default":
        return ("{app: plain}", "")
    if kind == "low-priority":
        # templates/pod-low-priority.yaml: no priority, gone at once when preempted.
        return ("{app: low-priority}", "      terminationGracePeriodSeconds: 0\n")
    if kind == "high-priority":
        # templates/pod-high-priority.yaml sets `priority: 10` itself, which
        # the Priority admission plugin refuses without a class: a
        # PriorityClass of that value gives the scheduler the same pod.
        return ("{app: high-priority}", "      priorityClassName: perf-high\n")
    if kind == "node-affinity":
        return ("{app: node-affinity}", """      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
              - matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [zone1, zone2]}]
""")
    if kind == "anti-affinity":
        return ("{color: green}", """      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {matchLabels: {color: green}}
              topologyKey: kubernetes.io/hostname
              namespaces: [sched-1, sched-0]
""")
    if kind == "affinity":
        return ("{color: blue}", """      affinity:
        podAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {matchLabels: {color: blue}}
              topologyKey: topology.kubernetes.io/zone
              namespaces: [sched-1, sched-0]
""")
    if kind in ("spread", "preferred-spread"):
        when = "DoNotSchedule" if kind == "spread" else "ScheduleAnyway"
        return ("{color: blue}", f"""      topologySpreadConstraints:
        - maxSkew: 5
          topologyKey: topology.kubernetes.io/zone
          whenUnsatisfiable: {when}
          labelSelector: {{matchLabels: {{color: blue}}}}
""")
    raise KeyError(kind)

CPU = {"low-priority": "900m", "high-priority": "3000m"}

def deployment(name, ns, replicas, kind):
    labels, extra = spec(kind)
    res = RES.replace("100m", CPU[kind]) if kind in CPU else RES
    # Each Deployment owns its pods by a label of its own, which no rule reads.
    labels = labels[:-1] + f", perf-step: {name}}}"
    # A Deployment's selector: the template labels.
    return f"""---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: {ns}}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {labels}}}
  template:
    metadata: {{labels: {labels}}}
    spec:
{extra}      containers:
        - name: pause
          image: registry.k8s.io/pause:3.10
          {res}
"""

def human(n):
    return f"{n:,}".replace(",", " ")

for w in W:
    d = os.path.join(out, w["name"])
    os.makedirs(d, exist_ok=True)
    for nodes, (init, measure) in w["sizes"].items():
        base = f"{nodes}-nodes"
        zones = w["zones"]
        per = [nodes // len(zones) + (1 if i < nodes % len(zones) else 0) for i in range(len(zones))]
        kind_i, ns_i = w["init"]
        kind_m, ns_m = w["measure"]
        # namespaces: "default" marker means namespace perf
        ns_i = "perf" if ns_i == "default" else ns_i
        ns_m = "perf" if ns_m == "default" else ns_m
        man = f"# {w['up']}: the init pods, then the measured pods ({UP}{w['src']}, {w['tmpl']}).\n"
        # Their namespaces exist, as the API server requires (NamespaceLifecycle).
        for ns in sorted({ns_i, ns_m}):
            man += f"---\napiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n"
        steps = ""
        if "churn" in w:
            # No init pods; the measured Deployment grows by the threshold
            # rate each second, and each second the churn objects are
            # recreated (the first round only creates the pod).
            man += "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: perf-high}\nvalue: 10\n"
            man += deployment("measured", ns_m, 0, kind_m)
            steps = "steps:\n"
            rounds = -(-measure // w["churn"])
            for k in range(1, rounds + 1):
                steps += f"""  - name: second {k}, the measured pods so far
    scale: {{workload: {ns_m}/Deployment/measured, replicas: {min(k * w['churn'], measure)}}}
"""
                if k > 1:
                    steps += f"""  - name: second {k}, the churn pod goes
    delete: {{kind: Pod, namespace: {ns_m}, name: churn}}
"""
                steps += f"""  - name: second {k}, a churn pod comes
    apply: {{path: churn-pod.yaml}}
  - name: second {k} passes
    wait: {{for: 1s}}
"""
            with open(os.path.join(d, "churn-pod.yaml"), "w") as f:
                f.write(f"""# templates/pod-high-priority-large-cpu.yaml ({UP}): 9 CPU, more than
# any node has, at the priority of PriorityClass perf-high (the template's
# bare `priority: 10`, which the Priority admission plugin refuses).
apiVersion: v1
kind: Pod
metadata: {{name: churn, namespace: {ns_m}}}
spec:
  priorityClassName: perf-high
  containers:
    - name: pause
      image: registry.k8s.io/pause:3.10
      ports: [{{containerPort: 80}}]
      resources: {{requests: {{cpu: "9", memory: 500Mi}}}}
""")
        elif "preemptors" in w:
            # The init pods first, as upstream's ops run in order: only then
            # do the preemptors find every node full, and the measured pods
            # follow them (the queue takes the higher priority first).
            man += "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: perf-high}\nvalue: 10\n"
            man += deployment("init", ns_i, init, kind_i)
            man += deployment("preemptors", ns_m, 0, "high-priority")
            man += deployment("measured", ns_m, 0, kind_m)
            steps = f"""steps:
  - name: the preemptors arrive
    scale: {{workload: {ns_m}/Deployment/preemptors, replicas: {w['preemptors'][nodes]}}}
  - name: the measured pods arrive
    scale: {{workload: {ns_m}/Deployment/measured, replicas: {measure}}}
  - name: the preemptors bind where their victims were
    wait: {{for: 1m}}
"""
        else:
            man += deployment("init", ns_i, init, kind_i)
            man += deployment("measured", ns_m, measure, kind_m)
        with open(os.path.join(d, base + ".manifests.yaml"), "w") as f:
            f.write(man)
        namespaces = sorted({ns_i, ns_m})
        pools = ""
        for z, c in zip(zones, per):
            pools += f"""    - name: {z}
      count: {c}
      namePattern: {z}-{{n}}
      capacity: {{cpu: "4", memory: 32Gi, pods: 110}}
      labels: {{topology.kubernetes.io/zone: {z}}}
"""
        if w["name"] == "node-affinity":
            req = "[{key: topology.kubernetes.io/zone, operator: In, values: [zone1, zone2]}]"
            aname = "pods-in-zone1-or-zone2"
        else:
            req = "[{key: topology.kubernetes.io/zone, operator: Exists}]"
            aname = "pods-on-zoned-nodes"
        if "churn" in w:
            describe = w["text"].format(measure=human(measure), per=w["churn"])
            measured_by = "its steps run only in a whole drill, so `bench run` measures it\n# (benches/scheduler_perf.rs times provisioning alone)."
        elif "preemptors" in w:
            describe = w["text"].format(init=human(init), pre=w["preemptors"][nodes], measure=human(measure))
            measured_by = "its steps run only in a whole drill, so `bench run` measures it\n# (benches/scheduler_perf.rs times provisioning alone)."
        else:
            describe = f"{human(init)} + {human(measure)} {w['text']}"
            measured_by = "benches/scheduler_perf.rs measures it."
        upstream_note = f"upstream {w['wl']} (threshold {w['thr']} pods/s)" if nodes == 5000 else \
            ("upstream 500Nodes" if nodes == 500 else f"twice upstream {w['wl']}")
        if "churn" in w and nodes == 500:
            # SchedulingWithMixedChurn has no 500Nodes workload upstream.
            upstream_note = "the pods of upstream 1000Nodes on half its nodes"
        # The default budget is 10 000 nodes; the control planes come on top.
        budget = "budgets: {nodes: 10100}\n" if nodes >= 10000 else ""
        drill = f"""# yaml-language-server: $schema=../../../schema/drill.schema.json
# kube-scheduler's scheduler_perf {w['up']} at {human(nodes)} nodes: {upstream_note}.
# Source: {UP}{w['src']}
#   (workload {w['up']}/{w['wl']}: threshold {w['thr']} pods/s at 5 000 nodes),
#   pod template {UP}{w['tmpl']}, node template templates/node-default.yaml
#   (4 CPU, 32Gi, 110 pods). Every node has its own hostname; the zones are
#   pools.
# `bench run harness/scale/scheduler-perf/{w['name']}/{base}.yaml`;
# {measured_by}
apiVersion: drillbench.dev/v1alpha1
kind: Drill
metadata:
  name: scheduler-perf-{w['name']}-{nodes}
  description: >-
    {describe}, onto {human(nodes)} nodes in {len(zones)} zones.
cluster:
  pools:
{pools}{budget}workloads:
  - path: {base}.manifests.yaml
{steps}assertions:
  - name: {aname}
    placement:
      pods: {{namespaces: [{', '.join(namespaces)}]}}
      nodes: {req}
"""
        with open(os.path.join(d, base + ".yaml"), "w") as f:
            f.write(drill)
print("ok")
