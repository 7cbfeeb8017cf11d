//! The real `kubectl` against `bench sim serve`: ConfigMaps, and the
//! PersistentVolumes and VolumeAttachments of an incident, as a person
//! watching a drill sees them (see `serve_kubectl.rs` for how each test
//! serves its cluster).

use std::time::{Duration, Instant};

use crate::kubectl_support::*;

#[test]
fn config_maps_are_stored_and_go_with_their_namespace() {
    let Some(s) = serve() else { return };
    s.ok(&["create", "-f", &config_map(&s, "marker")]);
    assert_eq!(
        s.ok(&[
            "get",
            "cm",
            "marker",
            "-n",
            "apps",
            "-o",
            "jsonpath={.data.seq}"
        ]),
        "1"
    );
    assert!(
        s.ok(&["get", "cm", "-A", "-o", "name"])
            .contains("configmap/marker")
    );
    s.ok(&["delete", "configmap", "marker", "-n", "apps"]);
    let gone = s.run(&["get", "cm", "marker", "-n", "apps"]);
    assert!(
        !gone.ok && gone.stderr.contains("NotFound"),
        "{}",
        gone.stderr
    );

    s.ok(&["create", "-f", &config_map(&s, "kept")]);
    assert!(
        !s.ok(&["get", "deploy", "-n", "apps", "-o", "name"])
            .is_empty()
    );
    s.ok(&["delete", "namespace", "apps", "--wait=false"]);
    // Terminating while its pods terminate: nothing new goes in.
    assert!(s.ok(&["get", "ns", "apps"]).contains("Terminating"));
    let refused = s.run(&["create", "-f", &config_map(&s, "early")]);
    assert!(
        !refused.ok && refused.stderr.contains("because it is being terminated"),
        "{}",
        refused.stderr
    );
    s.advance("1m");
    // Everything in it went with it.
    for kind in ["configmaps", "deployments", "pods"] {
        assert_eq!(
            s.ok(&["get", kind, "-n", "apps", "-o", "name"]),
            "",
            "{kind}"
        );
    }
    assert!(
        !s.ok(&["get", "ns", "-o", "name"])
            .contains("namespace/apps")
    );
    // Gone: nothing can be put there.
    let refused = s.run(&["create", "-f", &config_map(&s, "late")]);
    assert!(
        !refused.ok && refused.stderr.contains("namespaces \"apps\" not found"),
        "{}",
        refused.stderr
    );
    // A namespace created again takes objects again.
    let namespace = manifest(
        &s,
        "ns",
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: apps}\n",
    );
    s.ok(&["create", "-f", &namespace]);
    s.ok(&["create", "-f", &config_map(&s, "late")]);
    assert_eq!(
        s.ok(&["get", "cm", "-n", "apps", "-o", "name"]).trim(),
        "configmap/late"
    );
}

#[test]
fn get_volumes_and_attachments_through_the_incident() {
    // node-loss: production's hcloud volumes, released never.
    let Some(s) = serve_drill("scenarios/node-loss.yaml") else {
        return;
    };
    let volumes = s.ok(&["get", "pv"]);
    let header = volumes.lines().next().unwrap_or_default();
    for column in [
        "CAPACITY",
        "ACCESS MODES",
        "STATUS",
        "CLAIM",
        "STORAGECLASS",
    ] {
        assert!(header.contains(column), "{volumes}");
    }
    assert!(
        volumes
            .lines()
            .any(|l| l.contains("Bound") && l.contains("hcloud") && l.contains("RWO")),
        "{volumes}"
    );
    // A single-attach volume, its PV and its node.
    let attachment = s.ok(&[
        "get",
        "volumeattachments",
        "-o",
        "jsonpath={.items[0].metadata.name} {.items[0].spec.source.persistentVolumeName} {.items[0].spec.nodeName} {.items[0].status.attached}",
    ]);
    let [name, volume, node, attached] = attachment.split(' ').collect::<Vec<_>>()[..] else {
        panic!("one attachment: {attachment}");
    };
    assert!(name.starts_with("csi-"), "{attachment}");
    assert_eq!(attached, "true");
    let claim = s.ok(&["get", "pv", volume, "-o", "jsonpath={.spec.claimRef.namespace}/{.spec.claimRef.name} {.spec.storageClassName} {.spec.csi.driver}"]);
    assert!(claim.contains(" hcloud "), "{claim}");
    let (claim_key, _) = claim.split_once(' ').expect("claim and class");
    let (namespace, claim_name) = claim_key.split_once('/').expect("namespace/name");
    assert_eq!(
        s.ok(&[
            "get",
            "pvc",
            "-n",
            namespace,
            claim_name,
            "-o",
            "jsonpath={.spec.volumeName}"
        ]),
        volume,
        "the claim names its volume"
    );
    let attacher = s.ok(&[
        "get",
        "volumeattachment",
        name,
        "-o",
        "jsonpath={.spec.attacher}",
    ]);
    assert!(
        claim.ends_with(&attacher),
        "the attacher is the PV's driver: {claim} / {attacher}"
    );

    // Read-only: the simulator attaches volumes, not the API.
    let refused = s.run(&["delete", "volumeattachment", name]);
    assert!(
        !refused.ok && refused.stderr.contains("not modelled"),
        "{}",
        refused.stderr
    );

    // The incident: the node goes with the volume attached; the
    // VolumeAttachment still names it, and a watch saw nothing deleted.
    let (mut watch, out, _) = s.spawn(
        &["get", "volumeattachments", "-w", "--output-watch-events"],
        "watch-attachments",
    );
    let start = Instant::now();
    while !read(&out).contains(name) {
        assert!(
            start.elapsed() < DEADLINE,
            "the watch never listed the attachments"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        s.ok(&["delete", "node", node])
            .contains(&format!("node \"{node}\" deleted"))
    );
    s.advance("10m");
    assert!(!s.ok(&["get", "nodes"]).contains(&format!("{node} ")));
    let table = s.ok(&["get", "volumeattachments"]);
    let row = table
        .lines()
        .find(|l| l.starts_with(name))
        .unwrap_or_else(|| panic!("the attachment is still there: {table}"));
    assert!(
        row.contains(node) && row.contains(volume) && row.contains("true"),
        "{table}"
    );
    std::thread::sleep(Duration::from_millis(300));
    let _ = watch.kill();
    let _ = watch.wait();
    let events = read(&out);
    assert!(
        !events
            .lines()
            .any(|l| l.starts_with("DELETED") && l.contains(name)),
        "{events}"
    );
}

#[test]
fn an_attachment_released_with_its_node_is_deleted_for_watchers() {
    // The other way an attachment ends: its pods leave a running node,
    // which unmounts and detaches the volume.
    let Some(s) = serve_drill("scenarios/node-loss.yaml") else {
        return;
    };
    let attachment = s.ok(&[
        "get",
        "volumeattachments",
        "-o",
        "jsonpath={.items[0].metadata.name} {.items[0].spec.nodeName}",
    ]);
    let (name, node) = attachment.split_once(' ').expect("name and node");
    let (mut watch, out, _) = s.spawn(
        &["get", "volumeattachments", "-w", "--output-watch-events"],
        "watch-released",
    );
    let start = Instant::now();
    while !read(&out).contains(name) {
        assert!(
            start.elapsed() < DEADLINE,
            "the watch never listed the attachments"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // The node's pods deleted (it cordoned, so they come back elsewhere or
    // wait): their volumes detach from the running node, and the
    // attachment goes.
    s.ok(&["cordon", node]);
    s.ok(&[
        "delete",
        "pods",
        "-A",
        "--field-selector",
        &format!("spec.nodeName={node}"),
        "--wait=false",
    ]);
    for _ in 0..5 {
        s.advance("1m");
    }
    let start = Instant::now();
    let deleted = |text: &str| {
        text.lines()
            .any(|l| l.starts_with("DELETED") && l.contains(name))
    };
    while !deleted(&read(&out)) && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = watch.kill();
    let _ = watch.wait();
    let events = read(&out);
    assert!(deleted(&events), "the detach is announced: {events}");
    let left = s.ok(&["get", "volumeattachments", "-o", "name"]);
    assert!(!left.contains(name), "{left}");
}
