//! The engine's fidelity corpus: table cases transcribed from Kyverno's
//! documentation and engine source, one YAML file per topic under
//! `tests/corpus/`. Every case cites the page or file it transcribes, and
//! every case belongs to a `pair` whose cases expect different outcomes, so
//! each rule is shown both biting and not biting.

use std::collections::BTreeMap;
use std::path::Path;

use drillbench_kyverno::{
    AdmissionRequest, Engine, InMemoryCluster, Operation, UserInfo, operator, pattern, policy,
    value_pattern, wildcard,
};
use serde_json::{Value, json};

struct Case {
    file: String,
    pair: String,
    cite: String,
    /// What the case expects, as text, to compare pairs.
    expected: String,
    /// What the engine gave, as text.
    actual: String,
}

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn run_operator(case: &Value) -> (String, String) {
    let op = operator::Operator::parse(&text(case, "op").expect("op")).expect("a known operator");
    let holds = operator::evaluate(op, &case["key"], &case["value"]);
    (case["holds"].to_string(), holds.to_string())
}

fn run_value(case: &Value) -> (String, String) {
    let ok = value_pattern::validate(&case["value"], &case["pattern"]);
    (case["matches"].to_string(), ok.to_string())
}

fn run_wildcard(case: &Value) -> (String, String) {
    let ok = wildcard::matches(
        &text(case, "pattern").unwrap(),
        &text(case, "text").unwrap(),
    );
    (case["matches"].to_string(), ok.to_string())
}

fn run_pattern(case: &Value) -> (String, String) {
    let got = match pattern::match_pattern(&case["resource"], &case["pattern"]) {
        Ok(()) => "pass".to_owned(),
        Err(e) if e.is_skip() => "skip".to_owned(),
        Err(_) => "fail".to_owned(),
    };
    (text(case, "expect").expect("expect"), got)
}

fn run_jmespath(case: &Value) -> (String, String) {
    let got = match drillbench_kyverno::jmes::search(&text(case, "expr").unwrap(), &case["data"]) {
        Ok(v) => v.to_string(),
        Err(_) => "error".to_owned(),
    };
    let expected = match case.get("error") {
        Some(Value::Bool(true)) => "error".to_owned(),
        _ => case["result"].to_string(),
    };
    (expected, got)
}

fn request(case: &Value) -> AdmissionRequest {
    let r = &case["request"];
    let operation = Operation::parse(
        r.get("operation")
            .and_then(Value::as_str)
            .unwrap_or("CREATE"),
    )
    .expect("an operation");
    let user = &r["userInfo"];
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    AdmissionRequest {
        operation,
        object: r.get("object").cloned().unwrap_or(Value::Null),
        old_object: r.get("oldObject").cloned().unwrap_or(Value::Null),
        namespace_labels: r
            .get("namespaceLabels")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                    .collect()
            })
            .unwrap_or_default(),
        user_info: UserInfo {
            username: text(user, "username").unwrap_or_default(),
            groups: strings(&user["groups"]),
            roles: strings(&user["roles"]),
            cluster_roles: strings(&user["clusterRoles"]),
        },
    }
}

/// A policy case: `rule` (wrapped into a ClusterPolicy) or a whole `policy`.
fn run_policy(case: &Value, shared: &BTreeMap<String, Value>) -> (String, String) {
    let doc = if let Some(p) = case.get("policy") {
        p.clone()
    } else if let Some(name) = text(case, "use") {
        shared
            .get(&name)
            .unwrap_or_else(|| panic!("no shared policy {name}"))
            .clone()
    } else {
        let mut spec = json!({"rules": [case["rule"].clone()]});
        if let Some(action) = case.get("action") {
            spec["validationFailureAction"] = action.clone();
        }
        json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
               "metadata": {"name": "p"}, "spec": spec})
    };
    let policy = policy::from_value(&doc).expect("a readable policy");
    let cluster = InMemoryCluster::new(
        case.get("cluster")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
    );
    let mut engine = Engine::new(&cluster);
    if let Some(Value::Object(vars)) = case.get("variables") {
        engine.preset = vars.clone();
    }
    for exception in case
        .get("exceptions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        engine.exceptions.push(
            drillbench_kyverno::exception::from_value(exception).expect("a readable exception"),
        );
    }
    let outcome = engine.admit(std::slice::from_ref(&policy), &request(case));
    let mut got: Vec<String> = Vec::new();
    let mut want: Vec<String> = Vec::new();
    match case.get("expect") {
        Some(Value::String(status)) => {
            want.push(status.clone());
            got.push(match outcome.results.as_slice() {
                [] => "none".to_owned(),
                [one] => one.status.to_string(),
                many => many
                    .iter()
                    .map(|r| r.status.to_string())
                    .collect::<Vec<_>>()
                    .join(","),
            });
        }
        Some(Value::Object(by_rule)) => {
            for (rule, status) in by_rule {
                want.push(format!("{rule}={}", status.as_str().unwrap_or_default()));
                let found = outcome
                    .results
                    .iter()
                    .find(|r| &r.rule == rule)
                    .map(|r| r.status.to_string())
                    .unwrap_or_else(|| "none".into());
                got.push(format!("{rule}={found}"));
            }
        }
        _ => panic!("a policy case needs expect"),
    }
    if let Some(Value::Object(at)) = case.get("patched") {
        for (pointer, value) in at {
            want.push(format!("{pointer}={value}"));
            let found = outcome
                .patched
                .pointer(pointer)
                .cloned()
                .unwrap_or(Value::Null);
            got.push(format!("{pointer}={found}"));
        }
    }
    if let Some(fragment) = text(case, "message") {
        let all: Vec<&str> = outcome.results.iter().map(|r| r.message.as_str()).collect();
        want.push(format!("message~{fragment}"));
        got.push(if all.iter().any(|m| m.contains(&fragment)) {
            format!("message~{fragment}")
        } else {
            format!("messages {all:?}")
        });
    }
    if let Some(refused) = case.get("refused").and_then(Value::as_bool) {
        want.push(format!("refused={refused}"));
        got.push(format!("refused={}", outcome.refusal().is_some()));
    }
    (want.join(" "), got.join(" "))
}

fn load() -> Vec<Case> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("the corpus folder")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    let mut cases = Vec::new();
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let source = std::fs::read_to_string(&path).expect("readable");
        let doc: Value = serde_saphyr::from_str(&source).unwrap_or_else(|e| panic!("{name}: {e}"));
        let file_cite = text(&doc, "cite").unwrap_or_default();
        let shared: BTreeMap<String, Value> = doc
            .get("shared")
            .and_then(Value::as_object)
            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default();
        for (section, run) in [
            ("operators", run_operator as fn(&Value) -> (String, String)),
            ("values", run_value),
            ("wildcards", run_wildcard),
            ("patterns", run_pattern),
            ("jmespath", run_jmespath),
        ] {
            for case in doc
                .get(section)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let (expected, actual) = run(case);
                cases.push(Case {
                    file: name.clone(),
                    pair: text(case, "pair").unwrap_or_default(),
                    cite: text(case, "cite").unwrap_or_else(|| file_cite.clone()),
                    expected,
                    actual,
                });
            }
        }
        for case in doc
            .get("policies")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let (expected, actual) = run_policy(case, &shared);
            cases.push(Case {
                file: name.clone(),
                pair: text(case, "pair").unwrap_or_default(),
                cite: text(case, "cite").unwrap_or_else(|| file_cite.clone()),
                expected,
                actual,
            });
        }
    }
    cases
}

#[test]
fn every_corpus_case_holds() {
    let cases = load();
    let wrong: Vec<String> = cases
        .iter()
        .filter(|c| c.expected != c.actual)
        .map(|c| {
            format!(
                "{} [{}]: expected {} got {}",
                c.file, c.pair, c.expected, c.actual
            )
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "{} of {} cases disagree:\n{}",
        wrong.len(),
        cases.len(),
        wrong.join("\n")
    );
}

#[test]
fn the_corpus_is_large_cited_and_paired() {
    let cases = load();
    assert!(
        cases.len() >= 200,
        "the corpus holds {} cases; at least 200 are promised",
        cases.len()
    );
    for c in &cases {
        assert!(
            c.cite.starts_with("https://kyverno.io/docs/")
                || c.cite.starts_with("kyverno/kyverno:"),
            "{} [{}] cites {:?}: a Kyverno docs page or a kyverno/kyverno source file is required",
            c.file,
            c.pair,
            c.cite
        );
        assert!(!c.pair.is_empty(), "{}: a case without a pair", c.file);
    }
    let mut outcomes: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for c in &cases {
        outcomes
            .entry((c.file.clone(), c.pair.clone()))
            .or_default()
            .push(c.expected.clone());
    }
    for ((file, pair), expected) in outcomes {
        let first = &expected[0];
        assert!(
            expected.iter().any(|e| e != first),
            "{file} [{pair}]: every case expects {first}; a pair needs a case that flips the outcome"
        );
    }
}
