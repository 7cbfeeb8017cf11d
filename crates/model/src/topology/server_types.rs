//! The Hetzner Cloud server types the production pools use, so a drill can
//! say `serverType: cx43` instead of spelling out 8 vCPU and 16 GiB.

use super::Capacity;

/// The kubelet's default `maxPods`.
pub const DEFAULT_MAX_PODS: u32 = 110;

/// Known server types: name, vCPUs, memory in GiB.
const TABLE: [(&str, u32, u32); 4] = [
    ("cx23", 2, 4),
    ("cx33", 4, 8),
    ("cx43", 8, 16),
    ("cx53", 16, 32),
];

/// The names of the known server types, for error messages.
pub const NAMES: [&str; 4] = [TABLE[0].0, TABLE[1].0, TABLE[2].0, TABLE[3].0];

/// The capacity of a server type, if it is known.
pub fn capacity(server_type: &str) -> Option<Capacity> {
    TABLE
        .iter()
        .find(|(name, _, _)| *name == server_type)
        .map(|&(_, cpu, gib)| Capacity {
            cpu: cpu.to_string(),
            memory: format!("{gib}Gi"),
            pods: DEFAULT_MAX_PODS,
        })
}

/// The control planes' capacity when nothing names one: a cx33.
pub fn fallback() -> Capacity {
    Capacity {
        cpu: "4".to_owned(),
        memory: "8Gi".to_owned(),
        pods: DEFAULT_MAX_PODS,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn production_server_types_have_their_published_sizes() {
        let cx43 = capacity("cx43").expect("cx43 is known");
        assert_eq!((cx43.cpu.as_str(), cx43.memory.as_str()), ("8", "16Gi"));
        let cx53 = capacity("cx53").expect("cx53 is known");
        assert_eq!((cx53.cpu.as_str(), cx53.memory.as_str()), ("16", "32Gi"));
        assert_eq!(capacity("cx33"), Some(fallback()));
        assert_eq!(capacity("cx99"), None);
    }
}
