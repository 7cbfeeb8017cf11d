//! Events through `events.k8s.io/v1` and Events clients write, as the
//! real `kubectl` sees them: one store served through both APIs, each
//! Event converted field by field (`note` is `message`, `regarding` is
//! `involvedObject`), and a written Event validated, stored, listed and
//! watched like the timeline's (`crates/serve/src/events_v1.rs`).

use std::time::{Duration, Instant};

use crate::kubectl_support::*;

const OLD_STYLE: &str = "apiVersion: v1
kind: Event
metadata: {name: drill-note, namespace: apps}
involvedObject: {kind: Deployment, apiVersion: apps/v1, name: api, namespace: apps}
reason: DrillNote
message: the drill checked the api
type: Normal
source: {component: drill-runner}
";

const NEW_STYLE: &str = "apiVersion: events.k8s.io/v1
kind: Event
metadata: {name: drill-probe, namespace: apps}
eventTime: \"2026-01-01T00:02:00.000000Z\"
regarding: {kind: Deployment, apiVersion: apps/v1, name: api, namespace: apps}
reportingController: drillbench.dev/runner
reportingInstance: runner-1
action: Probe
reason: DrillProbe
note: the api answered
type: Normal
";

fn by_reason(s: &Served, resource: &str, reason: &str, field: &str) -> String {
    s.ok(&[
        "get",
        resource,
        "-n",
        "apps",
        "--field-selector",
        &format!("reason={reason}"),
        "-o",
        &format!("jsonpath={{range .items[*]}}{{{field}}}{{\"\\n\"}}{{end}}"),
    ])
}

#[test]
fn the_timelines_events_read_through_events_v1_with_its_field_names() {
    let Some(s) = serve() else { return };
    let core = by_reason(&s, "events", "Scheduled", ".message");
    let v1 = by_reason(&s, "events.events.k8s.io", "Scheduled", ".note");
    assert!(
        core.contains("Successfully assigned apps/api-00000 to"),
        "{core}"
    );
    assert_eq!(v1, core, "note is message");
    let regarding = by_reason(&s, "events.events.k8s.io", "Scheduled", ".regarding.name");
    assert!(regarding.lines().any(|l| l == "api-00000"), "{regarding}");
    // Control: the core names are not the events.k8s.io ones.
    assert_eq!(
        by_reason(&s, "events.events.k8s.io", "Scheduled", ".message").trim(),
        ""
    );
    let api_version = s.ok(&[
        "get",
        "events.events.k8s.io",
        "-n",
        "apps",
        "-o",
        "jsonpath={.items[0].apiVersion}",
    ]);
    assert_eq!(api_version, "events.k8s.io/v1");
}

#[test]
fn a_written_event_is_stored_and_listed_through_both_apis_and_a_bad_one_refused() {
    let Some(s) = serve() else { return };
    // `kubectl describe` finds an object's Events by its uid too.
    let uid = s.ok(&[
        "get",
        "deployment",
        "api",
        "-n",
        "apps",
        "-o",
        "jsonpath={.metadata.uid}",
    ]);
    let about_api = |text: &str| {
        text.replace(
            "name: api, namespace: apps}",
            &format!("name: api, namespace: apps, uid: {uid}}}"),
        )
    };
    s.ok(&[
        "create",
        "-f",
        &manifest(&s, "old-style", &about_api(OLD_STYLE)),
    ]);
    s.ok(&[
        "create",
        "-f",
        &manifest(&s, "new-style", &about_api(NEW_STYLE)),
    ]);
    assert_eq!(
        by_reason(&s, "events", "DrillNote", ".message").trim(),
        "the drill checked the api"
    );
    assert_eq!(
        by_reason(&s, "events.events.k8s.io", "DrillNote", ".note").trim(),
        "the drill checked the api"
    );
    assert_eq!(
        by_reason(&s, "events", "DrillProbe", ".reportingComponent").trim(),
        "drillbench.dev/runner"
    );
    let described = s.ok(&["describe", "deployment", "api", "-n", "apps"]);
    assert!(
        described.contains("DrillNote") && described.contains("the api answered"),
        "{described}"
    );

    // Control: through events.k8s.io/v1 an Event without eventTime is
    // refused with the API server's words, and nothing is stored.
    let bad = NEW_STYLE
        .replace("eventTime: \"2026-01-01T00:02:00.000000Z\"\n", "")
        .replace("drill-probe", "drill-bad");
    let refused = s.run(&["create", "-f", &manifest(&s, "bad", &bad)]);
    assert!(!refused.ok, "{}", refused.stdout);
    assert!(
        refused.stderr.contains("eventTime: Required value"),
        "{}",
        refused.stderr
    );
    let gone = s.run(&["get", "event", "drill-bad", "-n", "apps"]);
    assert!(
        !gone.ok && gone.stderr.contains("NotFound"),
        "{}",
        gone.stderr
    );

    s.ok(&["delete", "event", "drill-note", "-n", "apps"]);
    assert_eq!(by_reason(&s, "events", "DrillNote", ".message").trim(), "");
}

#[test]
fn a_watch_of_events_sees_a_written_event_arrive() {
    let Some(s) = serve() else { return };
    let (mut child, out, _) = s.spawn(
        &[
            "get",
            "events.events.k8s.io",
            "-n",
            "apps",
            "--watch-only",
            "-o",
            "jsonpath={.reason}{\"\\n\"}",
        ],
        "watch",
    );
    // The watch is open once kubectl has listed; give it the time to.
    std::thread::sleep(Duration::from_secs(2));
    s.ok(&["create", "-f", &manifest(&s, "old-style", OLD_STYLE)]);
    let start = Instant::now();
    let seen = loop {
        let seen = read(&out);
        if seen.contains("DrillNote") || start.elapsed() > DEADLINE {
            break seen;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = child.kill();
    let _ = child.wait();
    assert!(seen.contains("DrillNote"), "{seen}");
    // Control: watch-only shows nothing of what was there before.
    assert!(!seen.contains("Scheduled"), "{seen}");
}
