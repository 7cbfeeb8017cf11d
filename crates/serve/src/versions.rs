//! How a stored object reads through the resource a client asked for it
//! by: a custom resource at the version of its URL (`super::crds`), a
//! core Event as an `events.k8s.io/v1` one (`super::events_v1`). Tables
//! are built from the stored form, which their columns read.

use serde_json::Value;

use super::resources::Resource;
use super::{crds, events_v1};

pub(super) fn as_served(resource: &Resource, object: &mut Value) {
    crds::as_version(resource, object);
    if events_v1::converts(resource) && object.is_object() {
        *object = events_v1::to_v1(object);
    }
}
