//! Metadata-only reads (`Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1`,
//! or `as=PartialObjectMetadata` for one object): the API server answers
//! with each object's `metadata` only, as `meta.k8s.io/v1`
//! `PartialObjectMetadata(List)` (apiserver `endpoints/handlers/response.go`,
//! `asPartialObjectMetadata` and `asPartialObjectMetadataList`; client-go's
//! `metadata` client and kube-rs `list_metadata` ask for it). A Secret or
//! ConfigMap read this way never carries its data, which is what
//! `bench snapshot` relies on.

use serde_json::{Value, json};

/// Whether the client's first choice is the metadata-only form.
pub fn wants_metadata(accept: &str) -> bool {
    accept
        .split(',')
        .next()
        .is_some_and(|first| first.contains("as=PartialObjectMetadata"))
}

/// One object as `PartialObjectMetadata`.
pub fn object(full: &Value) -> Value {
    json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
           "metadata": full.get("metadata").cloned().unwrap_or_else(|| json!({}))})
}

/// A list's items as a `PartialObjectMetadataList` with the list's metadata.
pub fn list(items: &[Value], metadata: Value) -> Value {
    let items: Vec<Value> = items.iter().map(object).collect();
    json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
           "metadata": metadata, "items": items})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_first_choice_of_metadata_is_metadata() {
        assert!(wants_metadata(
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
        ));
        assert!(wants_metadata(
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
        ));
        assert!(!wants_metadata("application/json"));
        assert!(!wants_metadata(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=PartialObjectMetadata"
        ));
    }

    #[test]
    fn the_data_stays_behind() {
        let secret = json!({"apiVersion": "v1", "kind": "Secret",
                            "metadata": {"name": "s", "namespace": "a"}, "data": {"k": "dg=="}});
        let listed = list(&[secret], json!({"resourceVersion": "3"}));
        assert_eq!(listed["kind"], "PartialObjectMetadataList");
        assert_eq!(listed["items"][0]["metadata"]["name"], "s");
        assert!(listed["items"][0].get("data").is_none());
        assert_eq!(listed["metadata"]["resourceVersion"], "3");
    }
}
