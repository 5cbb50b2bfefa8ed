//! The bundled demo upstream: a small, real MCP server on stdio with simulated weather tools.
//! `--demo` runs this program again as `mcp-gen-ui demo-upstream` and wraps it, so the service
//! can be tried with nothing installed and no network.

use std::sync::{Arc, Mutex};

use base64::Engine;
use mcp_gen_ui_actors::process::locks::Recover;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{tool, tool_handler, tool_router, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

const SUN_PNG: &[u8] = include_bytes!("sun.png");
const CONDITIONS: &[&str] = &["sunny", "partly cloudy", "cloudy", "light rain", "showers", "thunderstorms", "snow", "fog", "windy"];

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

fn convert(c: f64, units: Units) -> f64 {
    let v = if units == Units::Imperial { c * 9.0 / 5.0 + 32.0 } else { c };
    (v * 10.0).round() / 10.0
}

/// Units for temperatures and speeds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(description = "metric (°C, km/h) or imperial (°F, mph)")]
enum Units {
    #[default]
    Metric,
    Imperial,
}

impl Units {
    fn as_str(self) -> &'static str {
        match self {
            Units::Metric => "metric",
            Units::Imperial => "imperial",
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
struct CityArgs {
    /// City name, e.g. Lisbon
    #[schemars(length(min = 1, max = 100))]
    city: String,
    /// Units for this call (default: the session's, metric unless set_units changed it)
    units: Option<Units>,
}

fn default_days() -> u8 {
    7
}

#[derive(Debug, Deserialize, JsonSchema)]
struct ForecastArgs {
    /// City name
    #[schemars(length(min = 1, max = 100))]
    city: String,
    /// Number of days
    #[serde(default = "default_days")]
    #[schemars(range(min = 1, max = 14))]
    days: u8,
    units: Option<Units>,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct UnitsArgs {
    units: Units,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct MapArgs {
    /// City name
    city: String,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Current {
    city: String,
    temperature: f64,
    feels_like: f64,
    humidity: u64,
    wind_speed: f64,
    condition: String,
    units: Units,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Day {
    date: String,
    high: f64,
    low: f64,
    condition: String,
    precipitation_chance: u64,
}

#[derive(Debug, Serialize, JsonSchema)]
struct Forecast {
    city: String,
    units: Units,
    days: Vec<Day>,
}

fn condition(city: &str, salt: u64) -> String {
    CONDITIONS[(seed(city, salt) % CONDITIONS.len() as u64) as usize].to_string()
}

/// The demo server: simulated weather, deterministic per city, one default-units setting per
/// session.
#[derive(Clone)]
pub struct Weather {
    units: Arc<Mutex<Units>>,
}

/// What a caller asked wrong; answered as a tool error (`isError`) the model can correct.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum WeatherError {
    #[error("city is required: give a city name such as \"Lisbon\"")]
    NoCity,
    #[error("days must be an integer from 1 to 14")]
    Days,
}

impl rmcp::model::IntoContents for WeatherError {
    fn into_contents(self) -> Vec<ContentBlock> {
        vec![ContentBlock::text(self.to_string())]
    }
}

fn city_of(raw: &str) -> Result<String, WeatherError> {
    let city = raw.trim();
    if city.is_empty() {
        return Err(WeatherError::NoCity);
    }
    Ok(city.to_string())
}

#[tool_router]
impl Weather {
    pub fn new() -> Self {
        Weather { units: Arc::new(Mutex::new(Units::Metric)) }
    }

    fn units(&self, asked: Option<Units>) -> Units {
        asked.unwrap_or_else(|| *self.units.guard())
    }

    /// Current conditions for a city (simulated, deterministic per city and day).
    #[tool(title = "Current weather", annotations(read_only_hint = true, open_world_hint = false))]
    fn get_current_weather(&self, Parameters(a): Parameters<CityArgs>) -> Result<Json<Current>, WeatherError> {
        let city = city_of(&a.city)?;
        let units = self.units(a.units);
        let t = celsius(&city, 0);
        Ok(Json(Current {
            temperature: convert(t, units),
            feels_like: convert(t - 1.5, units),
            humidity: 30 + seed(&city, 1) % 60,
            wind_speed: (seed(&city, 2) % 400) as f64 / 10.0,
            condition: condition(&city, 3),
            units,
            city,
        }))
    }

    /// Daily forecast for a city, 1 to 14 days (simulated).
    #[tool(title = "Forecast", annotations(read_only_hint = true, open_world_hint = false))]
    fn get_forecast(&self, Parameters(a): Parameters<ForecastArgs>) -> Result<Json<Forecast>, WeatherError> {
        let city = city_of(&a.city)?;
        if !(1..=14).contains(&a.days) {
            return Err(WeatherError::Days);
        }
        let units = self.units(a.units);
        let days = (0..a.days as u64)
            .map(|d| {
                let high = celsius(&city, 10 + d);
                Day {
                    date: format!("day +{d}"),
                    high: convert(high, units),
                    low: convert(high - 4.0 - (seed(&city, 40 + d) % 60) as f64 / 10.0, units),
                    condition: condition(&city, 70 + d),
                    precipitation_chance: seed(&city, 90 + d) % 100,
                }
            })
            .collect();
        Ok(Json(Forecast { city, units, days }))
    }

    /// Sets the default units for later calls in this session.
    #[tool(title = "Set default units", annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true))]
    fn set_units(&self, Parameters(a): Parameters<UnitsArgs>) -> String {
        *self.units.guard() = a.units;
        format!("Default units set to {}.", a.units.as_str())
    }

    /// A small radar-style picture for a city, as a PNG image.
    #[tool(title = "Weather map", annotations(read_only_hint = true))]
    fn get_weather_map(&self, Parameters(a): Parameters<MapArgs>) -> Result<CallToolResult, WeatherError> {
        let city = city_of(&a.city)?;
        let png = base64::engine::general_purpose::STANDARD.encode(SUN_PNG);
        Ok(CallToolResult::success(vec![ContentBlock::text(format!("Weather map for {city}")), ContentBlock::image(png, "image/png")]))
    }
}

/// The router, made once: every request of the demo goes through it.
fn router() -> &'static rmcp::handler::server::router::tool::ToolRouter<Weather> {
    static ROUTER: std::sync::OnceLock<rmcp::handler::server::router::tool::ToolRouter<Weather>> = std::sync::OnceLock::new();
    ROUTER.get_or_init(standard_router)
}

/// The router with schemas every validator compiles: only formats JSON Schema defines
/// (schemars writes `double`, `uint64`, ... for Rust numbers, which ajv-based hosts warn about
/// and some mark "Invalid"), no `$schema` (2020-12 is MCP's default dialect, and a validator
/// set up for draft-07, Ajv's default, refuses to compile a schema that names 2020-12), and no
/// `$defs` (its definitions are put where they are used).
fn standard_router() -> rmcp::handler::server::router::tool::ToolRouter<Weather> {
    let mut router = Weather::tool_router();
    for route in router.map.values_mut() {
        let t = &mut route.attr;
        t.input_schema = Arc::new(portable(&t.input_schema));
        if let Some(out) = &t.output_schema {
            t.output_schema = Some(Arc::new(portable(out)));
        }
    }
    router
}

/// `schema` as every validator reads it (see [`standard_router`]).
fn portable(schema: &serde_json::Map<String, serde_json::Value>) -> serde_json::Map<String, serde_json::Value> {
    let mut s = inline_defs(&standard_formats(schema));
    s.remove("$schema");
    s
}

/// `schema` with every `{"$ref": "#/$defs/X", ...}` replaced by `X` (the keywords beside the
/// `$ref` kept) and `$defs` gone. The demo's types do not refer to themselves.
fn inline_defs(schema: &serde_json::Map<String, serde_json::Value>) -> serde_json::Map<String, serde_json::Value> {
    use serde_json::Value;
    fn walk(v: &mut Value, defs: &serde_json::Map<String, Value>, depth: usize) {
        match v {
            Value::Object(o) => {
                let target = o.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/$defs/")).and_then(|n| defs.get(n));
                if let (Some(Value::Object(def)), true) = (target, depth < 32) {
                    o.remove("$ref");
                    for (k, val) in def {
                        o.entry(k.clone()).or_insert_with(|| val.clone());
                    }
                }
                o.values_mut().for_each(|c| walk(c, defs, depth + 1));
            }
            Value::Array(a) => a.iter_mut().for_each(|c| walk(c, defs, depth + 1)),
            _ => {}
        }
    }
    let mut out = schema.clone();
    let defs = match out.remove("$defs") {
        Some(Value::Object(d)) => d,
        _ => return out,
    };
    let mut v = Value::Object(out);
    walk(&mut v, &defs, 0);
    match v {
        Value::Object(o) => o,
        _ => schema.clone(),
    }
}

/// The formats of JSON Schema 2020-12 (section 7.3), which validators know.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// `schema` without any `format` JSON Schema does not define (the type and bounds stay).
fn standard_formats(schema: &serde_json::Map<String, serde_json::Value>) -> serde_json::Map<String, serde_json::Value> {
    fn walk(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(o) => {
                if o.get("format").and_then(|f| f.as_str()).is_some_and(|f| !STANDARD_FORMATS.contains(&f)) {
                    o.remove("format");
                }
                o.values_mut().for_each(walk);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(walk),
            _ => {}
        }
    }
    let mut v = serde_json::Value::Object(schema.clone());
    walk(&mut v);
    match v {
        serde_json::Value::Object(o) => o,
        _ => schema.clone(),
    }
}

#[tool_handler(router = router())]
impl ServerHandler for Weather {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                Implementation::new("mcp-gen-ui-demo-weather", env!("CARGO_PKG_VERSION")).with_title("Demo weather (simulated)"),
            )
            .with_instructions("Simulated weather data for trying mcp-gen-ui. Not real forecasts.")
    }
}

/// Serves MCP on stdin/stdout until stdin closes.
pub fn run() -> std::io::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(async {
        let service = Weather::new().serve(rmcp::transport::stdio()).await.map_err(std::io::Error::other)?;
        service.waiting().await.map_err(std::io::Error::other)?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forecast(w: &Weather, city: &str, days: u8) -> Result<Json<Forecast>, WeatherError> {
        w.get_forecast(Parameters(ForecastArgs { city: city.into(), days, units: None }))
    }

    #[test]
    fn forecast_is_deterministic_and_bounded() {
        let w = Weather::new();
        let a = serde_json::to_value(forecast(&w, "Lisbon", 3).unwrap().0).unwrap();
        let b = serde_json::to_value(forecast(&w, "lisbon", 3).unwrap().0).unwrap();
        assert_eq!(a["days"], b["days"]);
        assert_eq!(a["days"].as_array().unwrap().len(), 3);
        assert_eq!(forecast(&w, "x", 15).err(), Some(WeatherError::Days));
        assert_eq!(forecast(&w, "  ", 3).err(), Some(WeatherError::NoCity));
    }

    #[test]
    fn set_units_changes_the_default() {
        let w = Weather::new();
        w.set_units(Parameters(UnitsArgs { units: Units::Imperial }));
        let c = w.get_current_weather(Parameters(CityArgs { city: "Oslo".into(), units: None })).unwrap();
        assert_eq!(c.0.units, Units::Imperial);
    }

    #[test]
    fn schemas_have_no_dialect_and_no_defs() {
        for t in router().list_all() {
            for schema in [Some(&t.input_schema), t.output_schema.as_ref()].into_iter().flatten() {
                let text = serde_json::to_string(schema).unwrap();
                assert!(!text.contains("$schema") && !text.contains("$defs") && !text.contains("$ref"), "{}: {text}", t.name);
            }
        }
        let forecast = router().list_all().into_iter().find(|t| t.name == "get_forecast").unwrap();
        let out = serde_json::to_value(forecast.output_schema.unwrap()).unwrap();
        assert_eq!(out["properties"]["units"]["enum"], serde_json::json!(["metric", "imperial"]), "the definition is where it was used");
        assert_eq!(out["properties"]["days"]["items"]["properties"]["high"]["type"], "number");
    }

    #[test]
    fn tools_carry_their_schemas_and_annotations() {
        let tools = standard_router().list_all();
        let all = serde_json::to_string(&tools).unwrap();
        for f in ["double", "uint64", "uint8", "int64"] {
            assert!(!all.contains(&format!("\"format\":\"{f}\"")), "{f} is not a JSON Schema format");
        }
        let forecast = tools.iter().find(|t| t.name == "get_forecast").expect("get_forecast is listed");
        let schema = serde_json::to_value(&forecast.input_schema).unwrap();
        assert_eq!(schema["properties"]["days"]["maximum"], 14);
        assert_eq!(schema["properties"]["days"]["default"], 7);
        assert_eq!(schema["properties"]["city"]["minLength"], 1);
        assert!(forecast.output_schema.is_some(), "structured tools declare their output schema");
        assert_eq!(forecast.annotations.as_ref().and_then(|a| a.read_only_hint), Some(true));
        assert_eq!(tools.len(), 4);
    }

    #[test]
    fn map_is_a_png() {
        let data = base64::engine::general_purpose::STANDARD.decode(base64::engine::general_purpose::STANDARD.encode(SUN_PNG)).unwrap();
        assert_eq!(&data[..8], b"\x89PNG\r\n\x1a\n");
    }
}
