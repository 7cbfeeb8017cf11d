//! The preflight's inputs: `etcdctl member list -w table`, and the nodes
//! and Velero backups lists as `kubectl get -o json` prints them. The
//! first byte picks which.
#![no_main]

use drillbench_preflight::{etcd, input};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    match which % 3 {
        0 => {
            let _ = etcd::parse_members(text);
        }
        which => {
            let Ok(value) = serde_json::from_str::<serde_json::Value>(text) else {
                return;
            };
            if which == 1 {
                let _ = input::nodes_from_list("fuzz.json", &value);
            } else {
                let _ = input::backups_from_list("fuzz.json", &value);
            }
        }
    }
});
