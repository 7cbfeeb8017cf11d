//! The drill scenario language: its types, parsing, file-local checks,
//! diagnostics with source spans, JSON Schema, and the built-in catalogue.

pub mod assertion;
pub mod catalog;
pub mod check;
pub mod diagnostic;
pub mod located;
pub mod parse;
pub mod spec;
pub mod step;

pub use diagnostic::{Diagnostic, Diagnostics, SourceFile};
pub use located::{Located, Position};
pub use spec::DrillSpec;

/// The JSON Schema of the drill language, for editors (`bench schema`).
pub fn json_schema() -> serde_json::Value {
    let schema = schemars::schema_for!(DrillSpec);
    serde_json::to_value(schema).unwrap_or_default()
}
