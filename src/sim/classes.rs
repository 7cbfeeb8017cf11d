//! Scheduling classes: nodes that differ only in name are interchangeable
//! to every filter but the per-node ones, so what a pod template makes of
//! a node's labels and taints is judged once per class.

/// What one pod template makes of one node class.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ClassView {
    /// The class's labels pass nodeSelector and required node affinity.
    pub(super) fits: bool,
    /// The class's own taints are tolerated (NoSchedule, NoExecute).
    pub(super) tolerated: bool,
    /// Sum of the weights of the preferred terms the class matches.
    pub(super) preferred: i64,
    /// Untolerated PreferNoSchedule taints of the class.
    pub(super) intolerable: usize,
}
