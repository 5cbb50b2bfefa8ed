//! Equality across types is an error here, not `false`. CEL's own `==` and `!=` answer `false`
//! and `true` for values of different types, so `args.city == 'Secret'` would let `["Secret"]`,
//! `null` or `5` through a deny rule. Before a condition is trusted, every comparison in it
//! whose two sides can be evaluated is looked at: different types (numbers count as one; a
//! literal `null` compares with anything, which is how a condition asks "is it set") make the
//! condition fail, and a failed condition never grants (a deny rule applies). Ordering
//! comparisons (`<`, `>=`, ...) already fail across types in CEL; `in` is checked here too.
//! Comparisons inside a comprehension (`exists`, `all`, ...) name loop variables that cannot be
//! evaluated from outside and are left to CEL.

use cel::common::ast::{operators, EntryExpr, Expr, LiteralValue};
use cel::objects::ValueType;
use cel::{Context, IdedExpr, Value};

/// The first comparison of values of different types in `expr`, described.
pub fn mismatch(expr: &IdedExpr, cx: &Context) -> Option<String> {
    match &expr.expr {
        Expr::Call(call) => {
            if let Some(found) = compared(&call.func_name, &call.args, cx) {
                return Some(found);
            }
            call.target.iter().map(|t| &**t).chain(&call.args).find_map(|e| mismatch(e, cx))
        }
        Expr::List(list) => list.elements.iter().find_map(|e| mismatch(e, cx)),
        Expr::Map(map) => map.entries.iter().find_map(|e| match &e.expr {
            EntryExpr::MapEntry(m) => mismatch(&m.key, cx).or_else(|| mismatch(&m.value, cx)),
            EntryExpr::StructField(f) => mismatch(&f.value, cx),
        }),
        Expr::Select(s) => mismatch(&s.operand, cx),
        _ => None,
    }
}

fn compared(func: &str, args: &[IdedExpr], cx: &Context) -> Option<String> {
    let [left, right] = args else { return None };
    match func {
        operators::EQUALS | operators::NOT_EQUALS => {
            if is_null_literal(left) || is_null_literal(right) {
                return None;
            }
            let (l, r) = (Value::resolve(left, cx).ok()?, Value::resolve(right, cx).ok()?);
            (!same_kind(&l, &r)).then(|| format!("compares a {} with a {}", name(&l), name(&r)))
        }
        operators::IN => {
            let (item, within) = (Value::resolve(left, cx).ok()?, Value::resolve(right, cx).ok()?);
            let first = match &within {
                Value::List(items) => items.first()?.clone(),
                Value::Map(m) => key_value(m.map.keys().next()?),
                _ => return None, // CEL itself fails on `in` anything else
            };
            (!same_kind(&item, &first)).then(|| format!("looks for a {} among {}s", name(&item), name(&first)))
        }
        _ => None,
    }
}

fn is_null_literal(e: &IdedExpr) -> bool {
    matches!(e.expr, Expr::Literal(LiteralValue::Null))
}

fn key_value(k: &cel::objects::Key) -> Value {
    match k {
        cel::objects::Key::Int(i) => Value::Int(*i),
        cel::objects::Key::Uint(u) => Value::UInt(*u),
        cel::objects::Key::Bool(b) => Value::Bool(*b),
        cel::objects::Key::String(s) => Value::String(s.clone()),
    }
}

/// Numbers of any kind compare with each other, as CEL's equality says.
fn kind(v: &Value) -> u8 {
    match v.type_of() {
        ValueType::Int | ValueType::UInt | ValueType::Float => 0,
        other => other as u8 + 1,
    }
}

fn same_kind(a: &Value, b: &Value) -> bool {
    kind(a) == kind(b)
}

fn name(v: &Value) -> String {
    v.type_of().to_string()
}
