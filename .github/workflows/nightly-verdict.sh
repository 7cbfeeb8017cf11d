#!/usr/bin/env bash
# Reads "NAME EXIT" lines and tells the two failures apart: any 3 (or a
# missing file: the job broke before it ran anything) means the runner or
# the bench broke; otherwise any 1 means the platform regressed. Prints
# annotations, sets the step output `verdict`, and exits with that code.
set -uo pipefail
codes="${1:?usage: nightly-verdict.sh EXIT-CODES-FILE}"
out="${GITHUB_OUTPUT:-/dev/null}"
if [ ! -s "$codes" ]; then
  echo "::error::runner broke: no drill ran (exit 3)"
  echo "verdict=runner-broke" >> "$out"
  exit 3
fi
verdict=passed
exit_code=0
while read -r name code; do
  case "$code" in
    0) echo "ok: $name" ;;
    1) echo "::error title=platform regressed::$name: an assertion failed (exit 1)"
       if [ "$exit_code" -ne 3 ]; then verdict=platform-regressed; exit_code=1; fi ;;
    2) echo "::error title=bad input::$name: the drill or its flags are invalid (exit 2)"
       verdict=runner-broke; exit_code=3 ;;
    *) echo "::error title=runner broke::$name: infrastructure error (exit $code)"
       verdict=runner-broke; exit_code=3 ;;
  esac
done < "$codes"
echo "verdict=$verdict" >> "$out"
echo "verdict: $verdict"
exit "$exit_code"
