//! The drill scenario language: types, loading, validation and diagnostics.
