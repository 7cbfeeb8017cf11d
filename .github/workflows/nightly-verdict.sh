#!/usr/bin/env bash
# Reads "NAME EXIT" lines and tells the failures apart. A drill's exit 1 is
# the platform regressing. Everything else that is not 0 means the night's
# results cannot be trusted: an end-to-end test (a name starting `e2e-`)
# that failed, a drill the bench refused (exit 2) or a built-in drill whose
# negative control proved nothing (exit 4) is the bench broken;
# exit 3 is the bench or the runner broken (a CLI missing, a cluster that
# would not come up), as is a missing file (the job broke before anything
# ran). Broken outranks regressed. Prints one annotation per failure, sets
# the step output `verdict` (passed, platform-regressed, bench-broke,
# runner-broke) and exits 0, 1 (regressed) or 3 (broke).
set -uo pipefail
codes="${1:?usage: nightly-verdict.sh EXIT-CODES-FILE}"
out="${GITHUB_OUTPUT:-/dev/null}"
if [ ! -s "$codes" ]; then
  echo "::error title=Bench or runner broke (exit 3)::no drill ran"
  echo "verdict=runner-broke" >> "$out"
  echo "verdict: runner-broke"
  exit 3
fi
regressed=0 bench_broke=0 runner_broke=0
while read -r name code; do
  [ -n "${name:-}" ] || continue
  case "$name:$code" in
    *:0) echo "ok: $name" ;;
    e2e-*:*)
      echo "::error title=Bench broke (exit 3)::$name: an end-to-end test of the bench failed (exit $code)"
      bench_broke=1 ;;
    *:1)
      echo "::error title=Platform regressed (exit 1)::$name: a drill assertion failed"
      regressed=1 ;;
    *:2)
      echo "::error title=Bench broke (exit 3)::$name: the bench refused its own drill or flags (exit 2)"
      bench_broke=1 ;;
    *:4)
      echo "::error title=Bench broke (exit 3)::$name: every assertion held, but a negative control of the built-in drill proved nothing (exit 4)"
      bench_broke=1 ;;
    *)
      echo "::error title=Bench or runner broke (exit 3)::$name: infrastructure error (exit $code)"
      runner_broke=1 ;;
  esac
done < "$codes"
if [ "$runner_broke" -eq 1 ]; then
  verdict=runner-broke exit_code=3
elif [ "$bench_broke" -eq 1 ]; then
  verdict=bench-broke exit_code=3
elif [ "$regressed" -eq 1 ]; then
  verdict=platform-regressed exit_code=1
else
  verdict=passed exit_code=0
fi
echo "verdict=$verdict" >> "$out"
echo "verdict: $verdict"
exit "$exit_code"
