//! An admission request as a policy sees it.

use std::collections::BTreeMap;

use serde_json::{Value, json};

/// The admission operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Operation {
    Create,
    Update,
    Delete,
    Connect,
}

impl Operation {
    /// The operation as the API server names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }

    /// Parses `CREATE`, `UPDATE`, `DELETE` or `CONNECT`.
    pub fn parse(text: &str) -> Option<Operation> {
        match text {
            "CREATE" => Some(Operation::Create),
            "UPDATE" => Some(Operation::Update),
            "DELETE" => Some(Operation::Delete),
            "CONNECT" => Some(Operation::Connect),
            _ => None,
        }
    }
}

/// Who made the request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserInfo {
    pub username: String,
    pub groups: Vec<String>,
    /// Roles bound to the user, as `namespace:name`.
    pub roles: Vec<String>,
    pub cluster_roles: Vec<String>,
}

/// One admission request.
#[derive(Debug, Clone, PartialEq)]
pub struct AdmissionRequest {
    pub operation: Operation,
    /// The new object; `Null` on DELETE.
    pub object: Value,
    /// The object before the change; `Null` on CREATE.
    pub old_object: Value,
    /// Labels of the request's namespace, for `namespaceSelector`.
    pub namespace_labels: BTreeMap<String, String>,
    pub user_info: UserInfo,
}

impl AdmissionRequest {
    /// A CREATE of `object` by an anonymous user.
    pub fn create(object: Value) -> Self {
        AdmissionRequest {
            operation: Operation::Create,
            object,
            old_object: Value::Null,
            namespace_labels: BTreeMap::new(),
            user_info: UserInfo::default(),
        }
    }

    /// The object the rule is about: the old one on DELETE.
    pub fn resource(&self) -> &Value {
        if self.operation == Operation::Delete && !self.old_object.is_null() {
            &self.old_object
        } else {
            &self.object
        }
    }

    /// The request's namespace.
    pub fn namespace(&self) -> String {
        self.resource()
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    }

    /// The `request` variable of the rule context.
    pub fn to_variable(&self) -> Value {
        let resource = self.resource();
        let (group, version) = group_version(resource);
        json!({
            "operation": self.operation.as_str(),
            "object": self.object,
            "oldObject": self.old_object,
            "namespace": self.namespace(),
            "name": resource.pointer("/metadata/name").cloned().unwrap_or(Value::Null),
            "kind": {
                "group": group,
                "version": version,
                "kind": resource.get("kind").cloned().unwrap_or(Value::Null),
            },
            "userInfo": {
                "username": self.user_info.username,
                "groups": self.user_info.groups,
            },
            "roles": self.user_info.roles,
            "clusterRoles": self.user_info.cluster_roles,
            "dryRun": false,
        })
    }
}

/// The group and version of an object's `apiVersion` (`v1` is the core group).
pub fn group_version(object: &Value) -> (String, String) {
    let api = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match api.split_once('/') {
        Some((g, v)) => (g.to_owned(), v.to_owned()),
        None => (String::new(), api.to_owned()),
    }
}
