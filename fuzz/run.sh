#!/usr/bin/env bash
# Runs one fuzz target for a bounded time: `fuzz/run.sh TARGET SECONDS`.
# New inputs go to fuzz/corpus/TARGET (not committed); the committed seeds
# in fuzz/seeds/TARGET are read, never written. A crash is saved under
# fuzz/artifacts/TARGET and fails the run.
set -euo pipefail
cd "$(dirname "$0")"
target="$1"
seconds="${2:-300}"
mkdir -p "corpus/$target"
exec cargo +nightly fuzz run "$target" "corpus/$target" "seeds/$target" -- \
  -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10
