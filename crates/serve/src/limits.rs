//! The budgets that keep one client from taking the server down, as a
//! real API server keeps them: how much of a request is read, how long a
//! connection may take to send its request head, how far a watcher may
//! fall behind, and how many pods the simulation will hold.

use std::time::Duration;

/// The API server's request body limit (`MaxRequestBodyBytes`, 3 MiB by
/// default in apiserver's `server/config.go`; more is a 413).
pub const DEFAULT_MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// The API server's limit on a JSON patch's operations
/// (`maxJSONPatchOperations` in apiserver's `endpoints/handlers/patch.go`;
/// more is a 413).
pub const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// How long a connection may take to send a whole request head, and how
/// long it may stay open waiting for the next one: the kube-apiserver's
/// `ReadHeaderTimeout` (`secure_serving.go`: 32 s). Hyper's header-read
/// timer also runs while a kept-alive connection waits for its next
/// request, so it is the idle timeout too.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(32);

/// How many lines a watch may have waiting for its client before the
/// server gives up on it and ends the watch (the client re-lists, as
/// after the API server closes a watcher it found unresponsive).
pub const DEFAULT_WATCH_QUEUE: usize = 1_000;

/// How long a watch's client may leave its queue full before the server
/// gives up on it: long enough for a burst (a watch's first events list
/// the whole kind), short enough that a client that stopped reading holds
/// at most its queue and what arrives meanwhile.
pub const DEFAULT_SLOW_WATCHER_GRACE: Duration = Duration::from_secs(5);

/// How many pods one workload written through the API may ask for: beyond
/// it the write is refused with a 422, never an out-of-memory kill.
pub const DEFAULT_MAX_PODS: u64 = 5_000;

/// The server's budgets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Request bodies larger than this are refused with a 413.
    pub max_body_bytes: usize,
    /// See [`DEFAULT_HEADER_READ_TIMEOUT`].
    pub header_read_timeout: Duration,
    /// See [`DEFAULT_WATCH_QUEUE`].
    pub watch_queue: usize,
    /// See [`DEFAULT_SLOW_WATCHER_GRACE`].
    pub slow_watcher_grace: Duration,
    /// See [`DEFAULT_MAX_PODS`].
    pub max_pods: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            watch_queue: DEFAULT_WATCH_QUEUE,
            slow_watcher_grace: DEFAULT_SLOW_WATCHER_GRACE,
            max_pods: DEFAULT_MAX_PODS,
        }
    }
}
