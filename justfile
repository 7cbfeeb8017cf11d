# Recipes for people; CI and the README's set-up use the cargo commands directly.

# Run the main drill on the simulator.
drill name="cp-recreate" *args="":
    cargo run --release -- run {{name}} {{args}}

# Format check, lints, and the test suite, as CI runs them.
test:
    cargo fmt --check
    cargo clippy --workspace --all-targets --locked -- -D warnings
    RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked
    cargo test --workspace --locked

# Criterion benchmarks (numbers for the README's table).
bench:
    cargo bench

# Regenerate the committed JSON Schema after changing the drill language.
schema:
    cargo run --quiet -- schema > harness/schema/drill.schema.json
