//! The first Ctrl-C asks a real run to stop instead of killing the
//! process, so its teardown still runs. (Its own test binary: it raises
//! SIGINT at itself.)
#![cfg(unix)]

#[test]
fn the_first_interrupt_is_a_request_not_an_exit() {
    assert!(!drillbench_model::interrupt::requested());
    drillbench_model::interrupt::install().expect("handlers");
    drillbench_model::interrupt::install().expect("installing twice is harmless");
    assert!(!drillbench_model::interrupt::requested());
    signal_hook::low_level::raise(signal_hook::consts::SIGINT).expect("raise");
    // Still here: the signal only set the flag.
    assert!(drillbench_model::interrupt::requested());
}
