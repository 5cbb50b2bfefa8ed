//! A rule's condition: CEL compiled once, evaluated over what a request is (`Subject`), with the
//! variables it may name checked at compile time and what it reads (the arguments, the tool's
//! own facts) known, so that what can be decided without them is cached.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use super::{types, EvalError, Names, Subject, ToolFacts};

/// A compiled CEL condition.
pub struct Condition {
    text: String,
    program: cel::Program,
    reads_args: bool,
    /// It reads `annotations` or `title`: what the tool says of itself.
    reads_tool: bool,
    /// The variables it names (bits of `VARIABLES`): only those are made for an evaluation
    /// (making the others, the claims and the arguments above all, was most of its cost).
    names: u16,
}

impl fmt::Debug for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Condition({:?})", self.text)
    }
}

/// Why a condition did not compile: where and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConditionError {
    pub line: isize,
    pub column: isize,
    pub message: String,
}

impl fmt::Display for ConditionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}: {}", self.line, self.column, self.message)
    }
}

/// The variables a condition may name.
const VARIABLES: [&str; 9] = ["principal", "server", "tool", "name", "kind", "transport", "args", "annotations", "title"];

impl Condition {
    pub fn compile(text: &str) -> Result<Condition, ConditionError> {
        const MAX: usize = 4096;
        if text.len() > MAX {
            return Err(ConditionError {
                line: 1,
                column: 1,
                message: format!("is {} bytes long; a condition may have at most {MAX}", text.len()),
            });
        }
        let program = cel::Program::compile(text).map_err(|e| match e.errors.first() {
            Some(first) => ConditionError { line: first.pos.0, column: first.pos.1, message: first.msg.clone() },
            None => ConditionError { line: 1, column: 1, message: e.to_string() },
        })?;
        let refs = program.references();
        if let Some(unknown) = refs.variables().into_iter().find(|v| !VARIABLES.contains(v)) {
            let at = text.find(unknown).unwrap_or(0);
            let (line, column) = position(text, at);
            let message = format!("{unknown:?} is not a variable a condition may use; it may use {}", VARIABLES.join(", "));
            return Err(ConditionError { line, column, message });
        }
        let reads_args = refs.has_variable("args");
        let reads_tool = refs.has_variable("annotations") || refs.has_variable("title");
        let names = VARIABLES.iter().enumerate().filter(|(_, v)| refs.has_variable(v)).fold(0u16, |m, (i, _)| m | (1 << i));
        Ok(Condition { text: text.to_string(), program, reads_args, reads_tool, names })
    }

    pub fn reads_args(&self) -> bool {
        self.reads_args
    }

    pub fn reads_tool(&self) -> bool {
        self.reads_tool
    }

    /// Whether it holds for the request (an error: see the module's note).
    pub(super) fn eval(&self, env: &Arc<cel::Env>, s: &Subject) -> Result<bool, EvalError> {
        let mut cx = cel::Context::with_env(env.clone());
        let tool = if s.kind.names() == Names::Tools { s.name } else { "" };
        for (i, k) in VARIABLES.iter().enumerate().take(7) {
            if self.names & (1 << i) == 0 {
                continue;
            }
            let v = match *k {
                "principal" => to_cel(&serde_json::json!({
                    "name": &*s.who.name, "source": s.who.source.as_str(), "claims": &*s.who.claims, "admin": s.who.admin
                })),
                "server" => cel_str(s.server),
                "tool" => cel_str(tool),
                "name" => cel_str(s.name),
                "kind" => cel_str(s.kind.as_str()),
                "transport" => cel_str(s.transport),
                _ => s.args.map(to_cel).unwrap_or_else(|| to_cel(&Value::Object(Default::default()))),
            };
            cx.add_variable_from_value(*k, v);
        }
        if self.reads_tool {
            // Not a tool (a prompt, a resource), or not looked up: what a silent tool is.
            let unknown = ToolFacts::unknown();
            let facts = match s.kind.names() {
                Names::Tools => s.tool.unwrap_or(&unknown),
                _ => &unknown,
            };
            for (k, v) in [("annotations", to_cel(&facts.annotations())), ("title", cel_str(&facts.title))] {
                cx.add_variable_from_value(k, v);
            }
        }
        if let Some(what) = types::mismatch(self.program.expression(), &cx) {
            return Err(EvalError::TypeMismatch(what));
        }
        match self.program.execute(&cx) {
            Ok(cel::Value::Bool(b)) => Ok(b),
            Ok(other) => Err(EvalError::NotBool(format!("{other:?}"))),
            Err(e) => Err(EvalError::Execution(e.to_string())),
        }
    }
}

/// A JSON value as CEL sees it, built directly (CEL's own way, through its serde serializer,
/// was a good part of an evaluation's cost), the same value: a non-negative integer is `uint`,
/// a negative one `int`, any other number `double`.
fn to_cel(v: &Value) -> cel::Value {
    match v {
        Value::Null => cel::Value::Null,
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => cel::Value::UInt(u),
            (None, Some(i)) => cel::Value::Int(i),
            _ => cel::Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(t) => cel_str(t),
        Value::Array(items) => cel::Value::List(Arc::new(items.iter().map(to_cel).collect())),
        Value::Object(o) => {
            let map: HashMap<cel::objects::Key, cel::Value> =
                o.iter().map(|(k, v)| (cel::objects::Key::String(Arc::new(k.clone())), to_cel(v))).collect();
            cel::Value::Map(map.into())
        }
    }
}

fn cel_str(s: &str) -> cel::Value {
    cel::Value::String(Arc::new(s.to_string()))
}

fn position(text: &str, byte: usize) -> (isize, isize) {
    let before = &text[..byte];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line as isize, column as isize)
}

#[cfg(test)]
mod to_cel_tests {
    use super::*;
    use cel::objects::TryIntoValue;

    #[test]
    fn a_json_value_is_what_cels_own_conversion_makes_of_it() {
        let v = serde_json::json!({
            "s": "x", "u": 7, "i": -3, "f": 1.5, "big": u64::MAX, "b": true, "n": null,
            "list": [1, "two", [3.0], {"k": -1}], "nested": {"deep": {"er": [false]}}, "": {}
        });
        for sample in [v.clone(), v["list"].clone(), serde_json::json!(0), serde_json::json!("")] {
            assert_eq!(to_cel(&sample), sample.clone().try_into_value().unwrap(), "{sample}");
        }
    }
}
