//! The bundled demo upstream: a small, real MCP server on stdio with simulated weather tools.
//! `--demo` runs this program again as `mcp-gen-ui demo-upstream` and wraps it, so the service
//! can be tried with nothing installed and no network.

use std::io::{BufRead, Write};

use base64::Engine;
use serde_json::{json, Value};

const SUN_PNG: &[u8] = include_bytes!("sun.png");
const CONDITIONS: &[&str] = &["sunny", "partly cloudy", "cloudy", "light rain", "showers", "thunderstorms", "snow", "fog", "windy"];

fn units_schema() -> Value {
    json!({"type": "string", "enum": ["metric", "imperial"], "default": "metric", "description": "metric (°C, km/h) or imperial (°F, mph)"})
}

pub fn tools() -> Value {
    json!([
        {
            "name": "get_current_weather",
            "title": "Current weather",
            "description": "Current conditions for a city (simulated, deterministic per city and day).",
            "inputSchema": {"type": "object", "properties": {
                "city": {"type": "string", "minLength": 1, "maxLength": 100, "description": "City name, e.g. Lisbon"},
                "units": units_schema()
            }, "required": ["city"]},
            "outputSchema": {"type": "object", "properties": {
                "city": {"type": "string"}, "temperature": {"type": "number"}, "feelsLike": {"type": "number"},
                "humidity": {"type": "integer"}, "windSpeed": {"type": "number"}, "condition": {"type": "string"}, "units": {"type": "string"}
            }, "required": ["city", "temperature", "condition", "units"]},
            "annotations": {"readOnlyHint": true, "openWorldHint": false}
        },
        {
            "name": "get_forecast",
            "title": "Forecast",
            "description": "Daily forecast for a city, 1 to 14 days (simulated).",
            "inputSchema": {"type": "object", "properties": {
                "city": {"type": "string", "minLength": 1, "maxLength": 100, "description": "City name"},
                "days": {"type": "integer", "minimum": 1, "maximum": 14, "default": 7, "description": "Number of days"},
                "units": units_schema()
            }, "required": ["city"]},
            "outputSchema": {"type": "object", "properties": {
                "city": {"type": "string"}, "units": {"type": "string"},
                "days": {"type": "array", "items": {"type": "object", "properties": {
                    "date": {"type": "string"}, "high": {"type": "number"}, "low": {"type": "number"},
                    "condition": {"type": "string"}, "precipitationChance": {"type": "integer"}}}}
            }, "required": ["city", "units", "days"]},
            "annotations": {"readOnlyHint": true, "openWorldHint": false}
        },
        {
            "name": "set_units",
            "title": "Set default units",
            "description": "Sets the default units for later calls in this session.",
            "inputSchema": {"type": "object", "properties": {"units": {"type": "string", "enum": ["metric", "imperial"]}}, "required": ["units"]},
            "annotations": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": true}
        },
        {
            "name": "get_weather_map",
            "title": "Weather map",
            "description": "A small radar-style picture for a city, as a PNG image.",
            "inputSchema": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}}, "required": ["city"]},
            "annotations": {"readOnlyHint": true}
        }
    ])
}

/// A stable pseudo-random number per (city, salt): the demo must answer the same every time.
fn seed(city: &str, salt: u64) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325 ^ salt.wrapping_mul(0x9E3779B97F4A7C15);
    for b in city.to_lowercase().bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h ^ (h >> 29)
}

fn celsius(city: &str, salt: u64) -> f64 {
    (seed(city, salt) % 350) as f64 / 10.0 - 5.0
}

fn convert(c: f64, units: &str) -> f64 {
    let v = if units == "imperial" { c * 9.0 / 5.0 + 32.0 } else { c };
    (v * 10.0).round() / 10.0
}

struct State {
    units: String,
}

fn text_result(structured: Value) -> Value {
    json!({"content": [{"type": "text", "text": structured.to_string()}], "structuredContent": structured})
}

fn error_result(msg: &str) -> Value {
    json!({"content": [{"type": "text", "text": msg}], "isError": true})
}

fn call(state: &mut State, name: &str, args: &Value) -> Value {
    let city = args.get("city").and_then(Value::as_str).map(str::trim).unwrap_or("");
    let units = args.get("units").and_then(Value::as_str).unwrap_or(&state.units).to_string();
    if units != "metric" && units != "imperial" {
        return error_result("units must be \"metric\" or \"imperial\"");
    }
    match name {
        "get_current_weather" | "get_forecast" | "get_weather_map" if city.is_empty() => {
            error_result("city is required: give a city name such as \"Lisbon\"")
        }
        "get_current_weather" => {
            let t = celsius(city, 0);
            text_result(json!({
                "city": city, "temperature": convert(t, &units), "feelsLike": convert(t - 1.5, &units),
                "humidity": 30 + seed(city, 1) % 60, "windSpeed": (seed(city, 2) % 400) as f64 / 10.0,
                "condition": CONDITIONS[(seed(city, 3) % CONDITIONS.len() as u64) as usize], "units": units
            }))
        }
        "get_forecast" => {
            let days = args.get("days").map(|d| d.as_i64()).unwrap_or(Some(7));
            let Some(days) = days.filter(|d| (1..=14).contains(d)) else {
                return error_result("days must be an integer from 1 to 14");
            };
            let list: Vec<Value> = (0..days as u64)
                .map(|d| {
                    let high = celsius(city, 10 + d);
                    json!({
                        "date": format!("day +{d}"), "high": convert(high, &units), "low": convert(high - 4.0 - (seed(city, 40 + d) % 60) as f64 / 10.0, &units),
                        "condition": CONDITIONS[(seed(city, 70 + d) % CONDITIONS.len() as u64) as usize], "precipitationChance": seed(city, 90 + d) % 100
                    })
                })
                .collect();
            text_result(json!({"city": city, "units": units, "days": list}))
        }
        "set_units" => {
            state.units = units.clone();
            json!({"content": [{"type": "text", "text": format!("Default units set to {units}.")}]})
        }
        "get_weather_map" => json!({"content": [
            {"type": "text", "text": format!("Weather map for {city}")},
            {"type": "image", "data": base64::engine::general_purpose::STANDARD.encode(SUN_PNG), "mimeType": "image/png"}
        ]}),
        other => error_result(&format!("unknown tool {other:?}")),
    }
}

fn handle(state: &mut State, msg: &Value) -> Option<Value> {
    let id = msg.get("id")?.clone();
    let method = msg.get("method").and_then(Value::as_str)?;
    let params = msg.get("params").cloned().unwrap_or(json!({}));
    let result = match method {
        "initialize" => json!({
            "protocolVersion": params.get("protocolVersion").and_then(Value::as_str).unwrap_or("2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "mcp-gen-ui-demo-weather", "title": "Demo weather (simulated)", "version": env!("CARGO_PKG_VERSION")},
            "instructions": "Simulated weather data for trying mcp-gen-ui. Not real forecasts."
        }),
        "ping" => json!({}),
        "tools/list" => json!({"tools": tools()}),
        "tools/call" => {
            let name = params.get("name").and_then(Value::as_str).unwrap_or("");
            call(state, name, params.get("arguments").unwrap_or(&json!({})))
        }
        other => {
            return Some(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": format!("Method not found: {other}")}}))
        }
    };
    Some(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

/// Serves MCP on stdin/stdout until stdin closes.
pub fn run() -> std::io::Result<()> {
    let mut state = State { units: "metric".into() };
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let line = line?;
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            writeln!(out, "{}", json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}}))?;
            out.flush()?;
            continue;
        };
        if let Some(answer) = handle(&mut state, &msg) {
            writeln!(out, "{answer}")?;
            out.flush()?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forecast_is_deterministic_and_bounded() {
        let mut s = State { units: "metric".into() };
        let a = call(&mut s, "get_forecast", &json!({"city": "Lisbon", "days": 3}));
        let b = call(&mut s, "get_forecast", &json!({"city": "lisbon", "days": 3}));
        assert_eq!(a["structuredContent"]["days"], b["structuredContent"]["days"]);
        assert_eq!(a["structuredContent"]["days"].as_array().unwrap().len(), 3);
        assert_eq!(call(&mut s, "get_forecast", &json!({"city": "x", "days": 15}))["isError"], true);
    }

    #[test]
    fn set_units_changes_the_default() {
        let mut s = State { units: "metric".into() };
        call(&mut s, "set_units", &json!({"units": "imperial"}));
        assert_eq!(call(&mut s, "get_current_weather", &json!({"city": "Oslo"}))["structuredContent"]["units"], "imperial");
    }

    #[test]
    fn map_is_a_png() {
        let mut s = State { units: "metric".into() };
        let r = call(&mut s, "get_weather_map", &json!({"city": "Oslo"}));
        let data = base64::engine::general_purpose::STANDARD.decode(r["content"][1]["data"].as_str().unwrap()).unwrap();
        assert_eq!(&data[..8], b"\x89PNG\r\n\x1a\n");
    }
}
