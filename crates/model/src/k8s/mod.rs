//! Kubernetes semantics, written from the Kubernetes documentation, used by
//! the simulator's scheduler, the eviction API and the assertions.
//!
//! Each file holds one concept as pure functions over k8s-openapi types:
//!
//! - [`quantity`]: resource quantities as exact integers, and a pod's
//!   effective requests;
//! - [`node_selector`]: `nodeSelector` and node affinity (required filter,
//!   preferred score), with explanations an assertion can print as evidence;
//! - [`taints`]: taints and tolerations — the scheduler filter, the
//!   `PreferNoSchedule` score, `NoExecute` eviction timing and the default
//!   tolerations the apiserver adds;
//! - [`disruption`]: PodDisruptionBudget arithmetic as the disruption
//!   controller computes it, and the eviction API's decision;
//! - [`cron`]: CronJob schedules, in UTC;
//! - [`rollout`]: a Deployment's `maxSurge`/`maxUnavailable`, validated and
//!   resolved as the Deployment controller does.
//!
//! One rule is written once here so that the simulator, which enforces it, and
//! the assertions and audits, which judge a timeline by it, cannot disagree.
//! Where Kubernetes is lenient at run time about input its admission
//! validation would have refused, these functions refuse it with an error:
//! the simulator loads manifests without an apiserver in front, and a silent
//! non-match there would pass a drill the real cluster would never have
//! accepted. Each such choice is documented where it is made.
//!
//! The matching paths (`matches`, `score`, `tolerates`) do not allocate; the
//! compiled forms do their parsing once, up front.

pub mod cron;
pub mod disruption;
pub mod node_selector;
pub mod quantity;
pub mod rollout;
pub mod taints;
