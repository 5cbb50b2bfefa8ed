//! Pure: a profile's search mode. Its three tools (`search_tools`, `describe_tools`,
//! `call_tool`), their arguments checked into a typed call, a `call_tool` turned into the direct
//! call it stands for (its arguments checked against the tool's own schema), and the page
//! `call_tool` has: given the result of the tool it called, it becomes that tool's page.

use serde_json::{json, Value};

use crate::mcp::bad_arguments::BadArguments;
use crate::mcp::jsonrpc::{self, code, At};
use crate::servers::catalog::{Catalog, ExposedTool};
use crate::servers::profiles::Profile;
use crate::servers::search::MAX_RESULTS;

/// The page of `call_tool` (its own: not a tool of any server).
pub const CALL_TOOL_PAGE: &str = "ui://_ui/call_tool";
/// The most names one `describe_tools` takes.
pub const MAX_DESCRIBE: usize = 50;

#[derive(Debug, Clone, PartialEq)]
pub enum SearchCall {
    Search { query: String, limit: usize },
    Describe { names: Vec<String> },
}

/// The three tools, as listed (`call_tool` with its page for hosts that render pages).
pub fn definitions() -> [Value; 3] {
    [
        json!({"name": "search_tools", "title": "Search tools",
            "description": "Finds the tools for a task among every tool this endpoint has (most are not listed). Describe the task in plain words; returns tool names with a one-line description and a score, best first. Then describe_tools for their inputs, and call_tool to call one.",
            "inputSchema": {"type": "object", "properties": {
                "query": {"type": "string", "minLength": 1, "maxLength": 1000, "description": "The task, in plain words"},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS, "default": 10}}, "required": ["query"]},
            "annotations": {"readOnlyHint": true}}),
        json!({"name": "describe_tools", "title": "Describe tools",
            "description": "The full definitions (description, input schema, annotations) of tools named by search_tools.",
            "inputSchema": {"type": "object", "properties": {
                "names": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": MAX_DESCRIBE}}, "required": ["names"]},
            "annotations": {"readOnlyHint": true}}),
        json!({"name": "call_tool", "title": "Call a tool",
            "description": "Calls a tool found with search_tools, by name, with arguments that match its input schema (see describe_tools). Its result is the tool's own.",
            "inputSchema": {"type": "object", "properties": {
                "name": {"type": "string", "description": "The tool's name, as search_tools gave it"},
                "arguments": {"type": "object", "description": "The tool's arguments", "default": {}}}, "required": ["name"]}}),
    ]
}

/// `search_tools` or `describe_tools` with their arguments checked.
pub fn parse(name: &str, args: &Value) -> Result<SearchCall, BadArguments> {
    match name {
        "search_tools" => {
            let query = match args.get("query") {
                Some(Value::String(q)) if !q.trim().is_empty() => q.trim().to_string(),
                _ => return Err(BadArguments::new("query is required: the task, in plain words")),
            };
            let limit = match args.get("limit") {
                None | Some(Value::Null) => 10,
                Some(v) => v
                    .as_u64()
                    .filter(|n| (1..=MAX_RESULTS as u64).contains(n))
                    .ok_or_else(|| BadArguments(format!("limit must be 1 to {MAX_RESULTS}")))? as usize,
            };
            Ok(SearchCall::Search { query, limit })
        }
        _ => {
            let names = args.get("names").and_then(Value::as_array).filter(|n| !n.is_empty() && n.len() <= MAX_DESCRIBE);
            let names =
                names.ok_or_else(|| BadArguments(format!("names is required: 1 to {MAX_DESCRIBE} tool names from search_tools")))?;
            names
                .iter()
                .map(|n| n.as_str().map(str::to_string).ok_or_else(|| BadArguments::new("names must be strings")))
                .collect::<Result<_, _>>()
                .map(|names| SearchCall::Describe { names })
        }
    }
}

/// A `call_tool` made into the direct call it stands for: `msg` now calls the tool (by the name
/// the catalog has) with the given arguments. Err: the error to answer with (what was wrong,
/// and what to do). The arguments are checked against the tool's schema by
/// [`check_direct_call`], once the rules allowed the call: a schema tells what a tool takes.
pub fn unwrap_call_tool(msg: &mut Value, profile: &Profile, catalog: &Catalog) -> Result<(), Value> {
    let id = jsonrpc::id(msg).cloned().unwrap_or(Value::Null);
    let params = jsonrpc::params(msg);
    let Some(name) = params.at("/arguments/name").and_then(Value::as_str).map(str::to_string) else {
        return Err(jsonrpc::error(id, code::INVALID_PARAMS, "call_tool needs name: a tool's name as search_tools gave it"));
    };
    let args = params.at("/arguments/arguments").cloned().unwrap_or_else(|| json!({}));
    if !args.is_object() {
        return Err(jsonrpc::error(id, code::INVALID_PARAMS, "call_tool's arguments must be an object: the tool's own arguments"));
    }
    let Some(tool) = catalog.tool(profile.resolve(&name)).filter(|t| profile.includes(t)) else {
        let why = format!("no tool named {name:?} in this profile; search_tools finds the valid names");
        return Err(jsonrpc::error(id, code::INVALID_PARAMS, why));
    };
    let meta = params.get("_meta").cloned();
    let mut direct = json!({"name": tool.name, "arguments": args});
    if let Some(m) = meta {
        direct["_meta"] = m;
    }
    msg["params"] = direct;
    Ok(())
}

/// A direct call made of a `call_tool`, its arguments against the tool's schema. Err: the error
/// to answer with, naming each place that does not match.
/// `exposed`: the tool's name as the catalog has it (`msg` already names it the server's way).
pub fn check_direct_call(msg: &Value, exposed: &str, catalog: &Catalog) -> Result<(), Value> {
    let id = jsonrpc::id(msg).cloned().unwrap_or(Value::Null);
    let Some(tool) = catalog.tool(exposed) else { return Ok(()) };
    let args = msg.at("/params/arguments").cloned().unwrap_or_else(|| json!({}));
    check_arguments(tool, &args).map_err(|why| jsonrpc::error_with_data(id, code::INVALID_PARAMS, why.0, json!({"tool": exposed})))
}

/// The tool's arguments against its input schema: Err names each place that does not match.
fn check_arguments(tool: &ExposedTool, args: &Value) -> Result<(), BadArguments> {
    let Some(schema) = tool.def.get("inputSchema") else { return Ok(()) };
    // A schema the validator cannot take is the server's to judge: the call goes as it is.
    let Ok(validator) = jsonschema::validator_for(schema) else { return Ok(()) };
    let problems: Vec<String> = validator
        .iter_errors(args)
        .take(10)
        .map(|e| {
            let at = e.instance_path().to_string();
            format!("{}: {e}", if at.is_empty() { "(arguments)".to_string() } else { at })
        })
        .collect();
    match problems.is_empty() {
        true => Ok(()),
        false => {
            let why =
                format!("the arguments do not match the input schema of {:?}: {}; describe_tools shows it", tool.name, problems.join("; "));
            Err(BadArguments(why))
        }
    }
}

/// A tool result of our own: the JSON as text for the model, and as structured content.
pub fn result(structured: Value) -> Value {
    json!({"content": [{"type": "text", "text": structured.to_string()}], "structuredContent": structured})
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::servers::catalog::{Curation, Naming, ServerTools};
    use crate::servers::profiles::{Discovery, ProfileSpec};

    fn catalog() -> Catalog {
        let tools = vec![
            json!({"name": "get_forecast", "description": "Forecast", "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "maximum": 7}}, "required": ["city"]}}),
        ];
        let server = ServerTools {
            server: Arc::from("weather"),
            naming: Naming::Prefixed(Arc::from("weather")),
            curation: Arc::new(Curation::default()),
            tools: crate::messages::tool_list(tools),
        };
        Catalog::build(&[server])
    }

    fn profile() -> Profile {
        Profile::compile(&ProfileSpec { name: "all".into(), tools: vec!["*".into()], discovery: Discovery::Search, ..Default::default() })
            .unwrap()
    }

    fn call_tool(args: Value) -> Value {
        jsonrpc::request(json!(4), "tools/call", json!({"name": "call_tool", "arguments": args, "_meta": {"progressToken": 9}}))
    }

    #[test]
    fn call_tool_becomes_the_direct_call() {
        let mut msg = call_tool(json!({"name": "weather__get_forecast", "arguments": {"city": "Oslo"}}));
        unwrap_call_tool(&mut msg, &profile(), &catalog()).unwrap();
        assert_eq!(msg["params"], json!({"name": "weather__get_forecast", "arguments": {"city": "Oslo"}, "_meta": {"progressToken": 9}}));
    }

    #[test]
    fn arguments_are_checked_against_the_tools_schema() {
        let mut msg = call_tool(json!({"name": "weather__get_forecast", "arguments": {"days": 9}}));
        unwrap_call_tool(&mut msg, &profile(), &catalog()).expect("made the direct call; its schema is checked after the rules");
        let err = check_direct_call(&msg, "weather__get_forecast", &catalog()).unwrap_err();
        let text = err["error"]["message"].as_str().unwrap();
        assert!(text.contains("\"city\" is a required property") && text.contains("/days"), "{text}");
        let mut msg = call_tool(json!({"name": "nope"}));
        let err = unwrap_call_tool(&mut msg, &profile(), &catalog()).unwrap_err();
        assert!(err["error"]["message"].as_str().unwrap().contains("search_tools finds"), "{err}");
    }

    #[test]
    fn search_arguments() {
        assert_eq!(parse("search_tools", &json!({"query": " weather "})), Ok(SearchCall::Search { query: "weather".into(), limit: 10 }));
        assert!(parse("search_tools", &json!({"query": "x", "limit": 0})).is_err());
        assert!(parse("describe_tools", &json!({"names": []})).is_err());
        assert_eq!(parse("describe_tools", &json!({"names": ["a"]})), Ok(SearchCall::Describe { names: vec!["a".into()] }));
    }
}
