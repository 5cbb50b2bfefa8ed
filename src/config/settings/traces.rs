//! `tracing`: where spans are exported and which are kept. Each key's standard `OTEL_*`
//! variable wins over the file; an error names the variable or the key the value came from.
//! Off (None) unless an endpoint is given, or when `OTEL_SDK_DISABLED=true`.

use std::collections::BTreeMap;
use std::time::Duration;

use super::{EnvLookup, Secret};
use crate::config::file::{Config, ConfigError};

/// Which traces are kept (the OpenTelemetry `OTEL_TRACES_SAMPLER` values).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SamplerChoice {
    AlwaysOn,
    AlwaysOff,
    Ratio(f64),
    /// A host's sampled flag decides; root traces are kept.
    ParentOrOn,
    ParentOrOff,
    ParentOrRatio(f64),
}

#[derive(Debug, Clone)]
pub struct TraceSettings {
    /// Where batches are posted (`.../v1/traces`).
    pub url: String,
    /// Where the audit trail's lines are posted as OTLP logs (`.../v1/logs`); None when only a
    /// traces endpoint was given.
    pub logs_url: Option<String>,
    /// Sent with every export; the values are secrets (API keys) and never logged.
    pub headers: Vec<(String, Secret)>,
    pub service_name: String,
    pub resource: Vec<(String, String)>,
    pub sampler: SamplerChoice,
    pub max_queue_size: usize,
    pub max_export_batch_size: usize,
    pub schedule_delay: Duration,
    pub export_timeout: Duration,
}

/// A variable's value when it is set (and not blank), with its name to blame.
fn pick(env: EnvLookup, var: &'static str) -> Option<(String, &'static str)> {
    env(var).filter(|v| !v.trim().is_empty()).map(|v| (v, var))
}

pub(super) fn resolve(env: EnvLookup, cfg: &Config) -> Result<Option<TraceSettings>, ConfigError> {
    let t = &cfg.tracing;
    if env("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return Ok(None);
    }
    let Some((url, logs_url)) = urls(env, t)? else { return Ok(None) };
    let (protocol, field) =
        from_env_or(env, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL", &t.protocol, "tracing.protocol");
    if protocol.trim() != "http/protobuf" {
        return Err(ConfigError::new(
            field,
            format!("{:?} is not spoken: traces are exported as OTLP over HTTP, \"http/protobuf\" (point it at the collector's HTTP port, usually 4318)", protocol.trim()),
        ));
    }
    let headers = headers(env, t)?;
    let (service_name, resource) = resource(env, t)?;
    let sampler = sampler(env, t)?;
    let number = |var: &'static str, key: &'static str, file: u64, lo: u64, hi: u64| -> Result<u64, ConfigError> {
        let (v, field) = match env(var).filter(|v| !v.trim().is_empty()) {
            Some(v) => (v.trim().parse::<u64>().map_err(|_| ConfigError::new(var, format!("{v:?} is not a whole number")))?, var),
            None => (file, key),
        };
        if !(lo..=hi).contains(&v) {
            return Err(ConfigError::new(field, format!("{v} is outside {lo} to {hi}")));
        }
        Ok(v)
    };
    let max_queue_size = number("OTEL_BSP_MAX_QUEUE_SIZE", "tracing.maxQueueSize", t.max_queue_size as u64, 1, 1_000_000)? as usize;
    let max_export_batch_size =
        number("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "tracing.maxExportBatchSize", t.max_export_batch_size as u64, 1, 100_000)? as usize;
    let schedule_delay =
        Duration::from_millis(number("OTEL_BSP_SCHEDULE_DELAY", "tracing.scheduleDelayMs", t.schedule_delay_ms, 1, 3_600_000)?);
    let export_timeout =
        Duration::from_millis(number("OTEL_EXPORTER_OTLP_TIMEOUT", "tracing.exportTimeoutMs", t.export_timeout_ms, 1, 600_000)?);
    Ok(Some(TraceSettings {
        url,
        logs_url,
        headers,
        service_name,
        resource,
        sampler,
        max_queue_size,
        max_export_batch_size: max_export_batch_size.min(max_queue_size),
        schedule_delay,
        export_timeout,
    }))
}

/// Where traces go, and logs (the audit trail): each signal's own endpoint, else the base
/// endpoint with the signal's path. None: no endpoint, tracing is off.
fn urls(env: EnvLookup, t: &crate::config::file::TracingConfig) -> Result<Option<(String, Option<String>)>, ConfigError> {
    // A signal's own variable, the base variable, the signal's own key, the base key: in order.
    let signal = |var: &'static str, key: &'static str, file: &Option<String>, signal: &str| -> Result<Option<String>, ConfigError> {
        if let Some((v, field)) = pick(env, var) {
            return Ok(Some(checked_url(&v, field)?));
        }
        if let Some((v, field)) = pick(env, "OTEL_EXPORTER_OTLP_ENDPOINT") {
            return Ok(Some(signal_path(&checked_url(&v, field)?, signal)));
        }
        if let Some(v) = file {
            return Ok(Some(checked_url(v, key)?));
        }
        t.endpoint.as_deref().map(|v| Ok(signal_path(&checked_url(v, "tracing.endpoint")?, signal))).transpose()
    };
    let Some(traces) = signal("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "tracing.tracesEndpoint", &t.traces_endpoint, "traces")? else {
        return Ok(None);
    };
    let logs = signal("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "tracing.logsEndpoint", &t.logs_endpoint, "logs")?;
    Ok(Some((traces, logs)))
}

/// The export headers: the file's, then the variables' (which win); names checked, values
/// never shown.
fn headers(env: EnvLookup, t: &crate::config::file::TracingConfig) -> Result<Vec<(String, Secret)>, ConfigError> {
    let mut headers: BTreeMap<String, Secret> = t.headers.iter().map(|(k, v)| (k.to_ascii_lowercase(), Secret(v.clone()))).collect();
    for var in ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"] {
        if let Some(list) = env(var) {
            for (k, v) in pairs(&list, var, false)? {
                headers.insert(k.to_ascii_lowercase(), Secret(v));
            }
        }
    }
    let field =
        |k: &str| if t.headers.keys().any(|h| h.eq_ignore_ascii_case(k)) { "tracing.headers" } else { "OTEL_EXPORTER_OTLP_HEADERS" };
    for (k, v) in &headers {
        if k.is_empty() || !k.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)) {
            return Err(ConfigError::new(field(k), format!("{k:?} is not an HTTP header name")));
        }
        if v.0.bytes().any(|b| b < 0x20 && b != b'\t' || b >= 0x7f) {
            // The value is a secret: say which header, never what it holds.
            return Err(ConfigError::new(
                field(k),
                format!(
                    "the value of header {k:?} has a control character (a line break?) or a character outside ASCII; percent-encode it"
                ),
            ));
        }
    }
    Ok(headers.into_iter().collect())
}

/// `service.name` and the other resource attributes.
fn resource(env: EnvLookup, t: &crate::config::file::TracingConfig) -> Result<(String, Vec<(String, String)>), ConfigError> {
    let service_name = env("OTEL_SERVICE_NAME").filter(|v| !v.trim().is_empty()).unwrap_or_else(|| t.service_name.clone());
    let mut resource: BTreeMap<String, String> = t.resource_attributes.clone().into_iter().collect();
    if let Some(list) = env("OTEL_RESOURCE_ATTRIBUTES") {
        for (k, v) in pairs(&list, "OTEL_RESOURCE_ATTRIBUTES", true)? {
            resource.entry(k).or_insert(v); // OTEL_SERVICE_NAME and the file win over it
        }
    }
    let service_name = match resource.remove("service.name") {
        Some(n) if env("OTEL_SERVICE_NAME").is_none() && t.service_name == "mcp-gen-ui" => n,
        _ => service_name,
    };
    Ok((service_name, resource.into_iter().collect()))
}

fn sampler(env: EnvLookup, t: &crate::config::file::TracingConfig) -> Result<SamplerChoice, ConfigError> {
    let (name, name_field) = from_env_or(env, "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER", &t.sampler, "tracing.sampler");
    let arg = match env("OTEL_TRACES_SAMPLER_ARG").filter(|v| !v.trim().is_empty()) {
        Some(v) => Some((
            v.trim()
                .parse::<f64>()
                .map_err(|_| ConfigError::new("OTEL_TRACES_SAMPLER_ARG", format!("{v:?} is not a number between 0 and 1")))?,
            "OTEL_TRACES_SAMPLER_ARG",
        )),
        None => t.sampler_arg.map(|a| (a, "tracing.samplerArg")),
    };
    let ratio = || -> Result<f64, ConfigError> {
        match arg {
            Some((a, f)) if !(0.0..=1.0).contains(&a) || a.is_nan() => {
                Err(ConfigError::new(f, format!("{a} is not a ratio between 0 and 1")))
            }
            Some((a, _)) => Ok(a),
            None => Ok(1.0),
        }
    };
    Ok(match name.trim().to_ascii_lowercase().as_str() {
        "always_on" => SamplerChoice::AlwaysOn,
        "always_off" => SamplerChoice::AlwaysOff,
        "traceidratio" => SamplerChoice::Ratio(ratio()?),
        "parentbased_always_on" => SamplerChoice::ParentOrOn,
        "parentbased_always_off" => SamplerChoice::ParentOrOff,
        "parentbased_traceidratio" => SamplerChoice::ParentOrRatio(ratio()?),
        other => {
            return Err(ConfigError::new(
                name_field,
                format!("{other:?} is not a sampler: use always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio"),
            ))
        }
    })
}

/// The first variable that is set, else the file's value; with the name to blame.
fn from_env_or(env: EnvLookup, first: &'static str, second: &'static str, file: &str, key: &'static str) -> (String, &'static str) {
    for var in [first, second] {
        if let Some(v) = env(var).filter(|v| !v.trim().is_empty()) {
            return (v, var);
        }
    }
    (file.to_string(), key)
}

fn checked_url(v: &str, field: &str) -> Result<String, ConfigError> {
    let shown = crate::config::redact::url(v);
    let u = url::Url::parse(v.trim()).map_err(|e| {
        ConfigError::new(
            field,
            format!("{shown:?} is not a URL ({e}); give the collector's OTLP/HTTP address, such as http://localhost:4318"),
        )
    })?;
    if !matches!(u.scheme(), "http" | "https") || u.host_str().is_none() {
        return Err(ConfigError::new(
            field,
            format!("{shown:?} is not an http(s) URL; give the collector's OTLP/HTTP address, such as http://localhost:4318"),
        ));
    }
    if !u.username().is_empty() || u.password().is_some() {
        return Err(ConfigError::new(
            field,
            "credentials in the URL would reach logs and proxies: send them as headers (OTEL_EXPORTER_OTLP_HEADERS)",
        ));
    }
    Ok(u.to_string())
}

/// `OTEL_EXPORTER_OTLP_ENDPOINT` is a base: a signal's path (`traces`, `logs`) is added to its
/// path (before any query).
fn signal_path(base: &str, signal: &str) -> String {
    let Ok(mut u) = url::Url::parse(base) else { return base.to_string() };
    let path = format!("{}/v1/{signal}", u.path().trim_end_matches('/'));
    u.set_path(&path);
    u.to_string()
}

/// `key=value,key2=value2` with percent-encoded parts (the OpenTelemetry list format).
fn pairs(list: &str, var: &'static str, keep_values_in_errors: bool) -> Result<Vec<(String, String)>, ConfigError> {
    let mut out = Vec::new();
    for item in list.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let Some((k, v)) = item.split_once('=') else {
            let shown = if keep_values_in_errors { format!("{item:?}") } else { "an entry".to_string() };
            return Err(ConfigError::new(var, format!("{shown} is not key=value; separate entries with commas")));
        };
        // Percent-decoding through the form decoder: `+` and `&` are escaped first, since in
        // this list they are themselves (a `+` is not a space, a `&` does not end the value).
        let decode = |s: &str| {
            let escaped = s.trim().replace('+', "%2B").replace('&', "%26");
            url::form_urlencoded::parse(format!("x={escaped}").as_bytes()).next().map(|(_, v)| v.into_owned())
        };
        let (k, v) = (decode(k).unwrap_or_default(), decode(v).unwrap_or_default());
        if k.is_empty() {
            return Err(ConfigError::new(var, "an entry has no key before its '='"));
        }
        out.push((k, v));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(vars: &[(&str, &str)], cfg: &Config) -> Result<Option<TraceSettings>, ConfigError> {
        let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let env = move |k: &str| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        resolve(&env, cfg)
    }

    #[test]
    fn off_without_an_endpoint_and_when_disabled() {
        assert!(run(&[], &Config::default()).unwrap().is_none());
        let on = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"), ("OTEL_SDK_DISABLED", "true")];
        assert!(run(&on, &Config::default()).unwrap().is_none());
    }

    #[test]
    fn the_base_endpoint_gains_the_traces_path_and_the_full_one_is_used_as_it_is() {
        let t = run(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/")], &Config::default()).unwrap().unwrap();
        assert_eq!(t.url, "http://c:4318/v1/traces");
        let q = run(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "https://c/otlp/?tenant=a")], &Config::default()).unwrap().unwrap();
        assert_eq!(q.url, "https://c/otlp/v1/traces?tenant=a");
        let vars = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"), ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://d:9/x")];
        assert_eq!(run(&vars, &Config::default()).unwrap().unwrap().url, "http://d:9/x");
        let mut cfg = Config::default();
        cfg.tracing.endpoint = Some("https://e".into());
        assert_eq!(run(&[], &cfg).unwrap().unwrap().url, "https://e/v1/traces");
    }

    #[test]
    fn headers_and_resource_attributes_are_decoded_and_header_values_never_quoted() {
        let vars = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "Api-Key=se%20cret,x-team=a&b+c"),
            ("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=prod,service.name=ignored"),
            ("OTEL_SERVICE_NAME", "gw"),
        ];
        let t = run(&vars, &Config::default()).unwrap().unwrap();
        assert_eq!(
            t.headers.iter().map(|(k, v)| (k.as_str(), v.0.as_str())).collect::<Vec<_>>(),
            vec![("api-key", "se cret"), ("x-team", "a&b+c")]
        );
        assert_eq!(t.service_name, "gw");
        assert_eq!(t.resource, vec![("deployment.environment".to_string(), "prod".to_string())]);
        assert!(!format!("{t:?}").contains("se cret"));
        let bad = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"), ("OTEL_EXPORTER_OTLP_HEADERS", "k=v%0Aevil,topsecret")];
        let e = run(&bad, &Config::default()).unwrap_err();
        assert_eq!(e.field, "OTEL_EXPORTER_OTLP_HEADERS");
        assert!(!e.message.contains("topsecret") && !e.message.contains("evil"), "{e}");
    }

    #[test]
    fn bad_values_name_where_they_came_from() {
        let base = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318");
        assert_eq!(
            run(&[base, ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")], &Config::default()).unwrap_err().field,
            "OTEL_EXPORTER_OTLP_PROTOCOL"
        );
        assert_eq!(run(&[base, ("OTEL_TRACES_SAMPLER", "sometimes")], &Config::default()).unwrap_err().field, "OTEL_TRACES_SAMPLER");
        let ratio = [base, ("OTEL_TRACES_SAMPLER", "traceidratio"), ("OTEL_TRACES_SAMPLER_ARG", "1.5")];
        assert_eq!(run(&ratio, &Config::default()).unwrap_err().field, "OTEL_TRACES_SAMPLER_ARG");
        assert_eq!(
            run(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://c")], &Config::default()).unwrap_err().field,
            "OTEL_EXPORTER_OTLP_ENDPOINT"
        );
        let mut cfg = Config::default();
        cfg.tracing.endpoint = Some("http://u:p@c".into());
        assert_eq!(run(&[], &cfg).unwrap_err().field, "tracing.endpoint");
        let ok = [base, ("OTEL_TRACES_SAMPLER", "parentbased_traceidratio"), ("OTEL_TRACES_SAMPLER_ARG", "0.01")];
        assert_eq!(run(&ok, &Config::default()).unwrap().unwrap().sampler, SamplerChoice::ParentOrRatio(0.01));
    }
}
