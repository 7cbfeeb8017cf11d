# Sourced by the stand-in CLIs: appends one line per call to the file
# named by DRILLBENCH_FAKE_CLI_LOG, the program's name then its arguments,
# each argument in single quotes when it holds anything but plain word
# characters (an empty argument shows as ''). One printf per line, so
# concurrent calls append whole lines.
drillbench_record() {
    log="${DRILLBENCH_FAKE_CLI_LOG:?set DRILLBENCH_FAKE_CLI_LOG to the file that records the calls}"
    line="$1"
    shift
    for arg in "$@"; do
        case "$arg" in
            '' | *[!A-Za-z0-9_./=:@,+-]*) line="$line '$arg'" ;;
            *) line="$line $arg" ;;
        esac
    done
    printf '%s\n' "$line" >> "$log"
    # A test can make every call fail, or only the calls whose recorded
    # line contains DRILLBENCH_FAKE_CLI_FAIL_ON, to exercise the caller's
    # error path.
    case "$line" in
        *"${DRILLBENCH_FAKE_CLI_FAIL_ON:-}"*) ;;
        *) return 0 ;;
    esac
    if [ -n "${DRILLBENCH_FAKE_CLI_FAIL:-}" ]; then
        printf '%s: %s\n' "$(basename "$0")" "$DRILLBENCH_FAKE_CLI_FAIL" >&2
        exit 1
    fi
}
