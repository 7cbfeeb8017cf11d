//! Values that remember where in the drill file they were written.

use std::ops::Deref;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A position in a source file: 1-based line and column, and the byte range
/// of the value, so a diagnostic can underline exactly what was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Position {
    /// 1-based line; 0 when unknown (a value built in code, not read from a file).
    pub line: u32,
    /// 1-based column; 0 when unknown.
    pub column: u32,
    /// Byte offset of the value's first character.
    pub offset: usize,
    /// Length of the value in bytes (0 for a point).
    pub len: usize,
}

impl Position {
    /// A position that points nowhere, for values constructed in code.
    pub const UNKNOWN: Position = Position {
        line: 0,
        column: 0,
        offset: 0,
        len: 0,
    };

    /// Whether this position came from a real source file.
    pub(crate) fn is_known(&self) -> bool {
        self.line > 0
    }

    pub(crate) fn from_saphyr(location: serde_saphyr::Location) -> Self {
        let span = location.span();
        Position {
            line: u32::try_from(location.line()).unwrap_or(u32::MAX),
            column: u32::try_from(location.column()).unwrap_or(u32::MAX),
            offset: span
                .byte_offset()
                .and_then(|o| usize::try_from(o).ok())
                .unwrap_or(0),
            len: span
                .byte_len()
                .and_then(|l| usize::try_from(l).ok())
                .unwrap_or(0),
        }
    }
}

/// A value read from a drill file together with where it was written.
///
/// It dereferences to the value, serializes as the bare value, and its JSON
/// Schema is the value's, so wrapping a field changes nothing for users.
#[derive(Debug, Clone)]
pub struct Located<T> {
    pub value: T,
    /// Where the value was written.
    pub at: Position,
}

impl<T> Located<T> {
    /// A value made in code, with no source position.
    pub fn new(value: T) -> Self {
        Located {
            value,
            at: Position::UNKNOWN,
        }
    }

    pub fn at(value: T, at: Position) -> Self {
        Located { value, at }
    }
}

impl<T: Default> Default for Located<T> {
    fn default() -> Self {
        Located::new(T::default())
    }
}

impl<T> Deref for Located<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T: std::fmt::Display> std::fmt::Display for Located<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.value.fmt(f)
    }
}

impl<T: PartialEq> PartialEq for Located<T> {
    /// Two values are equal when they are equal, wherever they were written.
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Located<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let spanned = serde_saphyr::Spanned::<T>::deserialize(deserializer)?;
        Ok(Located {
            value: spanned.value,
            at: Position::from_saphyr(spanned.referenced),
        })
    }
}

impl<T: Serialize> Serialize for Located<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value.serialize(serializer)
    }
}

impl<T: JsonSchema> JsonSchema for Located<T> {
    fn inline_schema() -> bool {
        T::inline_schema()
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        T::schema_name()
    }

    fn schema_id() -> std::borrow::Cow<'static, str> {
        T::schema_id()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        T::json_schema(generator)
    }
}
