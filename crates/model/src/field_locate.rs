//! Where a field of a manifest was written, so a problem found in a decoded
//! object points at the offending field's line and column instead of the
//! object's first line (issue 19: "not just the object's first line").
//!
//! The manifests are parsed once without positions (the fast path every run
//! takes); only when a rule finds a problem is the text parsed again into a
//! tree that keeps every node's position, and the problem's JSON pointer
//! walked down it.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;

/// One YAML node with the positions of its children.
#[derive(Debug)]
enum Node {
    Map(Vec<(String, Spanned<Node>)>),
    List(Vec<Spanned<Node>>),
    Scalar,
}

/// A mapping key as text, whatever scalar it was written as.
struct Key(String);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a scalar key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
                Ok(Key(v.to_owned()))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Key, E> {
                Ok(Key("null".to_owned()))
            }
        }
        deserializer.deserialize_any(KeyVisitor)
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct NodeVisitor;
        impl<'de> Visitor<'de> for NodeVisitor {
            type Value = Node;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any YAML node")
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_i128<E: de::Error>(self, _: i128) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_u128<E: de::Error>(self, _: u128) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_none<E: de::Error>(self) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
                Node::deserialize(d)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element::<Spanned<Node>>()? {
                    items.push(item);
                }
                Ok(Node::List(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
                let mut entries = Vec::new();
                while let Some(Key(key)) = map.next_key::<Key>()? {
                    entries.push((key, map.next_value::<Spanned<Node>>()?));
                }
                Ok(Node::Map(entries))
            }
        }
        deserializer.deserialize_any(NodeVisitor)
    }
}

/// The documents of one manifest text, each with every node's position.
#[derive(Debug, Default)]
pub(crate) struct FieldMap {
    documents: Vec<Spanned<Node>>,
}

impl FieldMap {
    /// Parses `text` as [`crate::manifest::parse_documents`] does, so the
    /// n-th document here is the n-th document there. Text that does not
    /// parse gives an empty map: every lookup then falls back to the
    /// object's first line.
    pub(crate) fn parse(text: &str) -> FieldMap {
        let documents = serde_saphyr::from_multiple_with_options(text, crate::manifest::options())
            .unwrap_or_default();
        FieldMap { documents }
    }

    /// The 1-based line and column of the deepest node of `pointer` (a JSON
    /// pointer such as `/spec/template/spec/containers/0/resources`) that
    /// document `index` has: a field that is missing points at its parent.
    pub(crate) fn locate(&self, index: usize, pointer: &str) -> Option<(u64, u64)> {
        let mut node = self.documents.get(index)?;
        for token in pointer.split('/').skip(1) {
            let token = token.replace("~1", "/").replace("~0", "~");
            let next = match &node.value {
                Node::Map(entries) => entries.iter().find(|(k, _)| *k == token).map(|(_, v)| v),
                Node::List(items) => token.parse::<usize>().ok().and_then(|i| items.get(i)),
                Node::Scalar => None,
            };
            match next {
                Some(child) => node = child,
                None => break,
            }
        }
        let at = node.referenced;
        (at.line() > 0).then(|| (at.line(), at.column()))
    }
}

#[cfg(test)]
mod tests {
    use super::FieldMap;

    #[test]
    fn finds_nested_fields_list_items_and_falls_back_to_the_parent() {
        let text = "kind: A\n---\nkind: Deployment\nspec:\n  replicas: -1\n  template:\n    spec:\n      containers:\n        - name: web\n          resources: {requests: {memory: 1.5.5Gi}}\n";
        let map = FieldMap::parse(text);
        assert_eq!(map.locate(1, "/spec/replicas"), Some((5, 13)));
        assert_eq!(
            map.locate(
                1,
                "/spec/template/spec/containers/0/resources/requests/memory"
            ),
            Some((10, 42))
        );
        // A field that is absent points at the deepest node that exists.
        assert_eq!(map.locate(1, "/spec/template/spec/nodeName"), Some((8, 7)));
        assert_eq!(map.locate(0, "/kind"), Some((1, 7)));
        assert_eq!(map.locate(2, "/kind"), None);
    }
}
