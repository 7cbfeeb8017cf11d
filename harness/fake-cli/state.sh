# Sourced by the stand-ins: the containers they pretend exist, one line each
# in "$DRILLBENCH_FAKE_STATE" (default: fake-docker.state beside the call
# log), as
#
#     NAME NODE IP STATUS LABELS
#
# NODE is the Kubernetes Node the container stands for on the served
# simulator ("-" when unknown), STATUS one of running, exited, paused,
# created, removed, LABELS comma-separated key=value pairs. A removed
# container keeps its line, so a container recreated under its name stands
# for the same node again.
drillbench_state_file() {
    if [ -n "${DRILLBENCH_FAKE_STATE:-}" ]; then
        printf '%s\n' "$DRILLBENCH_FAKE_STATE"
    else
        printf '%s/fake-docker.state\n' "$(dirname "$DRILLBENCH_FAKE_CLI_LOG")"
    fi
}

# curl with the served simulator's bearer token (DRILLBENCH_FAKE_TOKEN),
# which it requires on every request.
drillbench_curl() {
    if [ -n "${DRILLBENCH_FAKE_TOKEN:-}" ]; then
        curl -H "Authorization: Bearer $DRILLBENCH_FAKE_TOKEN" "$@"
    else
        curl "$@"
    fi
}

# The `user:` of the kubeconfigs the stand-ins write: the served
# simulator's token when there is one.
drillbench_kubeconfig_user() {
    if [ -n "${DRILLBENCH_FAKE_TOKEN:-}" ]; then
        printf '{token: %s}' "$DRILLBENCH_FAKE_TOKEN"
    else
        printf '{}'
    fi
}

# Appends a container.
drillbench_state_add() { # NAME NODE IP STATUS LABELS
    printf '%s %s %s %s %s\n' "$1" "$2" "$3" "$4" "$5" >> "$(drillbench_state_file)"
}

# Prints the line of a container that is not removed.
drillbench_state_get() { # NAME
    file="$(drillbench_state_file)"
    [ -f "$file" ] || return 1
    awk -v n="$1" '$1 == n && $4 != "removed" { print; found = 1 } END { exit !found }' "$file"
}

# Sets field FIELD (2 node, 3 ip, 4 status, 5 labels) of every line whose
# field MATCH equals VALUE, removed containers aside.
drillbench_state_set() { # MATCH VALUE FIELD NEW
    file="$(drillbench_state_file)"
    [ -f "$file" ] || return 0
    awk -v m="$1" -v v="$2" -v f="$3" -v x="$4" '$m == v && $4 != "removed" { $f = x } { print }' "$file" > "$file.tmp"
    mv "$file.tmp" "$file"
}

# Acts on the served simulator, when there is one, for the node a
# container stands for: `crash` posts a crash; `remove` takes its server
# away for good (what `docker rm` does to a node), leaving a Node object
# that no kubelet answers for, as a removed kind node does.
drillbench_sim() { # crash|delete NODE
    server="${DRILLBENCH_FAKE_SERVER:-}"
    case "$server" in http://*) ;; *) return 0 ;; esac
    [ "$2" != "-" ] || return 0
    case "$1" in
        crash) drillbench_curl -fsS -X POST "$server/bench/v1/crash?node=$2" > /dev/null ;;
        remove)
            # The Node may be gone already: the bench deletes it before it
            # removes the container of a node it deletes on purpose.
            code="$(drillbench_curl -sS -o /dev/null -w '%{http_code}' -X POST "$server/bench/v1/remove?node=$2")"
            case "$code" in
                200 | 404) ;;
                *) echo "fake docker: removing node $2: HTTP $code" >&2; return 1 ;;
            esac
            ;;
    esac
}

# A cluster created anew: the served simulator, when there is one,
# provisions its drill's nodes again from time zero, with no workloads and
# no guards and no policies, as a new kind or Talos cluster is: empty, with no policy
# engine. The bench admits and applies the workloads itself.
drillbench_sim_reset() {
    server="${DRILLBENCH_FAKE_SERVER:-}"
    case "$server" in http://*) ;; *) return 0 ;; esac
    drillbench_curl -fsS -X POST -H 'Content-Type: application/json' \
        --data '{"guards": "[]", "policies": [], "workloads": false}' \
        "$server/bench/v1/reset?seed=${DRILLBENCH_FAKE_SEED:-1}" > /dev/null
}
