//! The part of client-go's JSONPath (`k8s.io/client-go/util/jsonpath`)
//! that a CustomResourceDefinition's `additionalPrinterColumns` use: the
//! API server parses each column's `jsonPath` as `{PATH}` and evaluates it
//! with missing keys allowed, so a column whose field is absent is an
//! empty cell rather than an error.
//!
//! Supported: `.field`, `['field']`, `..field` (recursive descent), `*`
//! and `[*]`, `[N]` (negative from the end), and filters
//! `[?(@.path OP literal)]` (`==`, `!=`, `<`, `<=`, `>`, `>=`) or
//! `[?(@.path)]` (the field exists). A path using anything else (slices,
//! unions, functions) does not parse, and its column stays empty, as a
//! column the API server could not evaluate is.

use serde_json::Value;

/// A parsed path: the steps from the object's root.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct JsonPath {
    steps: Vec<Step>,
}

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Field(String),
    /// `..field`: the field at any depth, in document order.
    Descend(String),
    Wildcard,
    Index(i64),
    Filter(Filter),
}

#[derive(Debug, Clone, PartialEq)]
struct Filter {
    /// The path under `@`.
    left: JsonPath,
    /// The comparison; `None` tests that the path exists.
    test: Option<(Op, Value)>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// Why a path does not parse.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("unsupported JSONPath {path:?} at byte {at}")]
pub(crate) struct ParseError {
    path: String,
    at: usize,
}

impl JsonPath {
    /// Parses a column's `jsonPath` (`.status.replicas`), with or without
    /// the braces the API server wraps it in.
    pub(crate) fn parse(text: &str) -> Result<JsonPath, ParseError> {
        let inner = text
            .trim()
            .strip_prefix('{')
            .and_then(|t| t.strip_suffix('}'))
            .unwrap_or(text.trim());
        let mut parser = Parser {
            text: inner,
            at: 0,
            whole: text,
        };
        let path = parser.path(false)?;
        if parser.at != inner.len() {
            return Err(parser.error());
        }
        Ok(path)
    }

    /// Every value the path finds, in document order (none when a key is
    /// missing).
    pub(crate) fn find<'v>(&self, root: &'v Value) -> Vec<&'v Value> {
        let mut current = vec![root];
        for step in &self.steps {
            let mut next = Vec::new();
            for value in current {
                step.apply(value, &mut next);
            }
            current = next;
        }
        current
    }

    /// The first value found, as the API server's table convertor takes
    /// `results[0][0]`.
    pub(crate) fn first<'v>(&self, root: &'v Value) -> Option<&'v Value> {
        self.find(root).into_iter().next()
    }
}

impl Step {
    fn apply<'v>(&self, value: &'v Value, out: &mut Vec<&'v Value>) {
        match self {
            Step::Field(name) => out.extend(value.get(name.as_str())),
            Step::Descend(name) => descend(value, name, out),
            Step::Wildcard => match value {
                Value::Array(items) => out.extend(items),
                // Go's reflection walks a map's keys sorted.
                Value::Object(map) => {
                    let mut keys: Vec<&String> = map.keys().collect();
                    keys.sort();
                    out.extend(keys.into_iter().filter_map(|k| map.get(k)));
                }
                _ => {}
            },
            Step::Index(i) => {
                if let Value::Array(items) = value {
                    let len = items.len() as i64;
                    let i = if *i < 0 { len + i } else { *i };
                    if (0..len).contains(&i) {
                        out.extend(items.get(i as usize));
                    }
                }
            }
            Step::Filter(filter) => {
                if let Value::Array(items) = value {
                    out.extend(items.iter().filter(|item| filter.holds(item)));
                }
            }
        }
    }
}

fn descend<'v>(value: &'v Value, name: &str, out: &mut Vec<&'v Value>) {
    match value {
        Value::Object(map) => {
            if let Some(found) = map.get(name) {
                out.push(found);
            }
            for child in map.values() {
                descend(child, name, out);
            }
        }
        Value::Array(items) => {
            for child in items {
                descend(child, name, out);
            }
        }
        _ => {}
    }
}

impl Filter {
    fn holds(&self, item: &Value) -> bool {
        let found = self.left.find(item);
        match &self.test {
            None => !found.is_empty(),
            Some((op, literal)) => found.iter().any(|left| compare(left, *op, literal)),
        }
    }
}

fn compare(left: &Value, op: Op, right: &Value) -> bool {
    let ordering = match (left, right) {
        (Value::Number(a), Value::Number(b)) => a
            .as_f64()
            .zip(b.as_f64())
            .and_then(|(a, b)| a.partial_cmp(&b)),
        (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
        (Value::Bool(a), Value::Bool(b)) if matches!(op, Op::Eq | Op::Ne) => Some(a.cmp(b)),
        _ => None,
    };
    match (op, ordering) {
        (Op::Ne, None) => true,
        (_, None) => false,
        (Op::Eq, Some(o)) => o.is_eq(),
        (Op::Ne, Some(o)) => o.is_ne(),
        (Op::Lt, Some(o)) => o.is_lt(),
        (Op::Le, Some(o)) => o.is_le(),
        (Op::Gt, Some(o)) => o.is_gt(),
        (Op::Ge, Some(o)) => o.is_ge(),
    }
}

struct Parser<'t> {
    text: &'t str,
    at: usize,
    whole: &'t str,
}

impl Parser<'_> {
    fn error(&self) -> ParseError {
        ParseError {
            path: self.whole.to_owned(),
            at: self.at,
        }
    }

    fn rest(&self) -> &str {
        &self.text[self.at..]
    }

    fn eat(&mut self, prefix: &str) -> bool {
        if self.rest().starts_with(prefix) {
            self.at += prefix.len();
            true
        } else {
            false
        }
    }

    /// Steps until the end, or (inside a filter) until a comparison or
    /// the filter's closing `)`.
    fn path(&mut self, in_filter: bool) -> Result<JsonPath, ParseError> {
        let mut steps = Vec::new();
        // The root may be named (`$`), as kubectl's `-o jsonpath` allows.
        self.eat("$");
        loop {
            let rest = self.rest();
            if rest.is_empty() || (in_filter && rest.starts_with([')', '=', '!', '<', '>', ' '])) {
                break;
            }
            if self.eat("..") {
                steps.push(Step::Descend(self.name()?));
            } else if self.eat(".") {
                if self.rest().is_empty() && steps.is_empty() {
                    // `.` alone: the object itself.
                    break;
                }
                if self.eat("*") {
                    steps.push(Step::Wildcard);
                } else {
                    steps.push(Step::Field(self.name()?));
                }
            } else if self.eat("[") {
                steps.push(self.bracket()?);
            } else {
                return Err(self.error());
            }
        }
        Ok(JsonPath { steps })
    }

    /// A field name after `.`: up to the next `.`, `[`, or (in a filter)
    /// operator; `\.` is a literal dot, as in label keys.
    fn name(&mut self) -> Result<String, ParseError> {
        let mut name = String::new();
        let mut chars = self.rest().char_indices().peekable();
        let mut end = self.rest().len();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' if chars.peek().is_some_and(|(_, n)| *n == '.') => {
                    name.push('.');
                    chars.next();
                }
                '.' | '[' | ')' | '=' | '!' | '<' | '>' | ' ' => {
                    end = i;
                    break;
                }
                c => name.push(c),
            }
        }
        if name.is_empty() {
            return Err(self.error());
        }
        self.at += end;
        Ok(name)
    }

    fn bracket(&mut self) -> Result<Step, ParseError> {
        let step = if self.eat("*") {
            Step::Wildcard
        } else if self.eat("?(") {
            self.eat("@");
            let left = self.path(true)?;
            let test = self.comparison()?;
            if !self.eat(")") {
                return Err(self.error());
            }
            Step::Filter(Filter { left, test })
        } else if let Some(quote) = ['\'', '"']
            .into_iter()
            .find(|q| self.rest().starts_with(*q))
        {
            self.at += 1;
            let end = self.rest().find(quote).ok_or_else(|| self.error())?;
            let name = self.rest()[..end].to_owned();
            self.at += end + 1;
            Step::Field(name)
        } else {
            let end = self.rest().find(']').ok_or_else(|| self.error())?;
            let index = self.rest()[..end]
                .trim()
                .parse::<i64>()
                .map_err(|_| self.error())?;
            self.at += end;
            Step::Index(index)
        };
        if !self.eat("]") {
            return Err(self.error());
        }
        Ok(step)
    }

    fn comparison(&mut self) -> Result<Option<(Op, Value)>, ParseError> {
        while self.eat(" ") {}
        let op = [
            ("==", Op::Eq),
            ("!=", Op::Ne),
            ("<=", Op::Le),
            (">=", Op::Ge),
            ("<", Op::Lt),
            (">", Op::Gt),
        ]
        .into_iter()
        .find(|(text, _)| self.rest().starts_with(text));
        let Some((text, op)) = op else {
            return Ok(None);
        };
        self.at += text.len();
        while self.eat(" ") {}
        let end = self.rest().find(')').ok_or_else(|| self.error())?;
        let literal = self.rest()[..end].trim();
        let value = match literal.chars().next() {
            Some(q @ ('"' | '\'')) if literal.len() >= 2 && literal.ends_with(q) => {
                Value::String(literal[1..literal.len() - 1].to_owned())
            }
            _ => match literal {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                number => serde_json::from_str::<serde_json::Number>(number)
                    .map(Value::Number)
                    .map_err(|_| self.error())?,
            },
        };
        self.at += end;
        Ok(Some((op, value)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn first(path: &str, object: &Value) -> Option<Value> {
        JsonPath::parse(path)
            .expect("parses")
            .first(object)
            .cloned()
    }

    /// The paths CRDs print with (Flux's Ready condition, the docs'
    /// CronTab fields), each paired with a miss that finds nothing.
    #[test]
    fn column_paths_find_what_client_go_finds() {
        let object = json!({
            "metadata": {"name": "a", "labels": {"app.kubernetes.io/name": "web"}},
            "spec": {"cronSpec": "* * * * */5", "replicas": 3},
            "status": {"conditions": [
                {"type": "Reconciling", "status": "False"},
                {"type": "Ready", "status": "True", "message": "done"}
            ]}
        });
        assert_eq!(first(".spec.cronSpec", &object), Some(json!("* * * * */5")));
        assert_eq!(first("{.spec.replicas}", &object), Some(json!(3)));
        assert_eq!(first(".spec.missing", &object), None);
        assert_eq!(first(".spec.cronSpec.deeper", &object), None);
        let ready = ".status.conditions[?(@.type==\"Ready\")].status";
        assert_eq!(first(ready, &object), Some(json!("True")));
        let stalled = ".status.conditions[?(@.type==\"Stalled\")].status";
        assert_eq!(first(stalled, &object), None);
        assert_eq!(
            first(
                ".status.conditions[?(@.type != 'Reconciling')].message",
                &object
            ),
            Some(json!("done"))
        );
        assert_eq!(
            first(".status.conditions[-1].type", &object),
            Some(json!("Ready"))
        );
        assert_eq!(first(".status.conditions[2].type", &object), None);
        assert_eq!(
            first(".metadata.labels['app.kubernetes.io/name']", &object),
            Some(json!("web"))
        );
        assert_eq!(
            first(".metadata.labels.app\\.kubernetes\\.io/name", &object),
            Some(json!("web"))
        );
        assert_eq!(first("..message", &object), Some(json!("done")));
        assert_eq!(
            first(".status.conditions[*].type", &object),
            Some(json!("Reconciling"))
        );
        assert_eq!(
            first(".status.conditions[?(@.message)].type", &object),
            Some(json!("Ready"))
        );
        assert_eq!(
            first(".spec[?(@.replicas > 2)]", &object),
            None,
            "a filter applies to arrays only"
        );
    }

    #[test]
    fn paths_outside_the_subset_do_not_parse() {
        for path in [
            "spec",
            ".spec[1:2]",
            ".spec[?(@.a == x)]",
            ".a[",
            ".a[?(@.b",
        ] {
            assert!(JsonPath::parse(path).is_err(), "{path}");
        }
    }
}
