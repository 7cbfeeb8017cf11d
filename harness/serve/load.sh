#!/usr/bin/env bash
# LIST throughput and memory of `bench sim serve`, as the README's numbers
# table reports them: serves harness/serve/serve.yaml with a stopped clock,
# scales apps/cache until the cluster holds PODS pods, then drives
# `GET /api/v1/pods` (plain, then as the Table `kubectl get` asks for) with
# wrk and reads the server's resident memory from /proc.
#
#   harness/serve/load.sh [BENCH] [PODS] [SECONDS]
#
# BENCH defaults to target/release/bench; needs wrk and kubectl.
set -euo pipefail

bench=${1:-target/release/bench}
pods=${2:-300}
seconds=${3:-10}
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
port=${PORT:-18431}

"$bench" sim serve "$here/serve.yaml" --step --listen "127.0.0.1:$port" \
    --kubeconfig-out "$dir/kubeconfig" >"$dir/serve.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 1 100); do
    [ -s "$dir/kubeconfig" ] && break
    sleep 0.1
done
token=$(awk '$1 == "token:" {print $2}' "$dir/kubeconfig")
url="http://127.0.0.1:$port"
export KUBECONFIG="$dir/kubeconfig"

# The drill starts with seven pods, two of them apps/cache's.
kubectl scale deploy cache -n apps --replicas=$((pods - 5)) >/dev/null
curl -sf -X POST -H "Authorization: Bearer $token" "$url/bench/v1/advance?by=10m" >/dev/null
count=$(curl -sf -H "Authorization: Bearer $token" "$url/api/v1/pods" |
    python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))')
bytes=$(curl -sf -H "Authorization: Bearer $token" "$url/api/v1/pods" | wc -c)
echo "pods: $count, list body: $bytes bytes"

rss() { awk '/^VmRSS|^VmHWM/ {printf "%s %s kB  ", $1, $2}' "/proc/$server/status"; echo; }
echo "memory after scaling: $(rss)"

table='Accept: application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json'
echo "== GET /api/v1/pods"
wrk -t2 -c8 -d"${seconds}s" --latency -H "Authorization: Bearer $token" "$url/api/v1/pods"
echo "== GET /api/v1/pods as a Table"
wrk -t2 -c8 -d"${seconds}s" --latency -H "Authorization: Bearer $token" -H "$table" "$url/api/v1/pods"
echo "memory after the load: $(rss)"
