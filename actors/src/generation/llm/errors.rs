//! Pure mapping of provider failures to error codes, with `retryable` and Retry-After.

use std::time::Duration;

use serde_json::Value;

use super::{ErrorCode, LlmError};

/// The provider's own error text: `{"error":{"message"}}` (Anthropic, OpenAI) or `{"error":"..."}` (Ollama).
fn provider_message(body: &str) -> String {
    let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let msg = v.pointer("/error/message").or_else(|| v.get("error")).and_then(Value::as_str).map(str::to_string);
    msg.unwrap_or_else(|| body.chars().take(300).collect())
}

fn error_type(body: &str) -> String {
    let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    v.pointer("/error/type").or_else(|| v.pointer("/error/code")).and_then(Value::as_str).unwrap_or_default().to_string()
}

/// Maps an HTTP error status and body. 429 and 529 (Anthropic overloaded) and 5xx are
/// retryable; OpenAI's `insufficient_quota` 429 is not (waiting does not add credit).
pub fn classify_status(status: u16, body: &str) -> LlmError {
    let msg = provider_message(body);
    let kind = error_type(body);
    let code = match status {
        429 if kind == "insufficient_quota" => ErrorCode::InvalidRequest,
        429 => ErrorCode::RateLimit,
        529 => ErrorCode::ServerError,
        408 => ErrorCode::Timeout,
        400 if kind.contains("content_filter") || kind.contains("content_policy") => ErrorCode::ContentFiltered,
        400..=499 => ErrorCode::InvalidRequest,
        _ => ErrorCode::ServerError,
    };
    let mut e = LlmError::new(code, format!("HTTP {status}{}: {msg}", if kind.is_empty() { String::new() } else { format!(" {kind}") }));
    e.status = Some(status);
    e
}

/// A failure a provider reported inside a stream (no status line there), by its error type:
/// Anthropic's `error` event, an OpenAI chunk's `error`, Ollama's `{"error"}` line.
pub fn from_stream_error(etype: &str, message: &str) -> LlmError {
    let code = match etype {
        "rate_limit_error" | "rate_limit_exceeded" | "tokens" | "requests" => ErrorCode::RateLimit,
        t if t.contains("content_filter") || t.contains("content_policy") => ErrorCode::ContentFiltered,
        "invalid_request_error"
        | "authentication_error"
        | "permission_error"
        | "not_found_error"
        | "request_too_large"
        | "insufficient_quota"
        | "context_length_exceeded" => ErrorCode::InvalidRequest,
        // overloaded_error, api_error, server_error, and what this build does not know.
        _ => ErrorCode::ServerError,
    };
    let what = if etype.is_empty() { String::new() } else { format!(" {etype}") };
    let text: String = message.chars().take(300).collect();
    LlmError::new(code, format!("the provider reported{what} during the answer: {text}"))
}

/// The longest wait a Retry-After can ask for; longer requests are clamped to it.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(3600);

/// Retry-After: delta seconds or an HTTP date. Anthropic also sends fractional seconds.
/// Never panics: values over [`MAX_RETRY_AFTER`] become exactly that; negative, NaN and
/// infinite values are ignored (None).
pub fn parse_retry_after(v: &str) -> Option<Duration> {
    let v = v.trim();
    if let Ok(secs) = v.parse::<f64>() {
        if !secs.is_finite() || secs < 0.0 {
            return None;
        }
        if secs >= MAX_RETRY_AFTER.as_secs_f64() {
            return Some(MAX_RETRY_AFTER);
        }
        return Duration::try_from_secs_f64(secs).ok();
    }
    let when = httpdate::parse_http_date(v).ok()?;
    Some(when.duration_since(std::time::SystemTime::now()).unwrap_or(Duration::ZERO).min(MAX_RETRY_AFTER))
}

pub(crate) fn from_reqwest(e: &reqwest::Error) -> LlmError {
    if e.is_timeout() {
        LlmError::new(ErrorCode::Timeout, "the provider did not answer in time")
    } else if e.is_connect() {
        LlmError::new(ErrorCode::NetworkError, "cannot connect to the provider (connection refused or unreachable)")
    } else {
        let what = if e.is_body() || e.is_decode() { "the answer broke off" } else { "the request failed" };
        LlmError::new(ErrorCode::NetworkError, format!("the connection to the provider failed: {what}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_codes() {
        let cases = [
            (429, r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#, ErrorCode::RateLimit, true),
            (529, r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#, ErrorCode::ServerError, true),
            (500, r#"{"error":{"message":"boom","type":"server_error"}}"#, ErrorCode::ServerError, true),
            (503, "", ErrorCode::ServerError, true),
            (
                400,
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens too large"}}"#,
                ErrorCode::InvalidRequest,
                false,
            ),
            (401, r#"{"error":{"message":"bad key","type":"authentication_error"}}"#, ErrorCode::InvalidRequest, false),
            (
                429,
                r#"{"error":{"message":"quota","type":"insufficient_quota","code":"insufficient_quota"}}"#,
                ErrorCode::InvalidRequest,
                false,
            ),
            (400, r#"{"error":{"message":"flagged","code":"content_filter"}}"#, ErrorCode::ContentFiltered, false),
            (404, r#"{"error":"model 'x' not found"}"#, ErrorCode::InvalidRequest, false),
        ];
        for (status, body, code, retryable) in cases {
            let e = classify_status(status, body);
            assert_eq!((e.code, e.retryable), (code, retryable), "{status} {body}");
            assert_eq!(e.status, Some(status));
        }
        assert!(classify_status(429, r#"{"error":{"message":"slow down"}}"#).message.contains("slow down"));
    }

    #[test]
    fn errors_inside_a_stream_map_by_type() {
        for (etype, code, retryable) in [
            ("overloaded_error", ErrorCode::ServerError, true),
            ("rate_limit_error", ErrorCode::RateLimit, true),
            ("invalid_request_error", ErrorCode::InvalidRequest, false),
            ("content_filter", ErrorCode::ContentFiltered, false),
            ("", ErrorCode::ServerError, true),
        ] {
            let e = from_stream_error(etype, "boom");
            assert_eq!((e.code, e.retryable), (code, retryable), "{etype}");
            assert!(e.message.contains("boom"));
        }
    }

    #[test]
    fn retry_after_forms() {
        assert_eq!(parse_retry_after("3"), Some(Duration::from_secs(3)));
        assert_eq!(parse_retry_after("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("soon"), None);
        assert_eq!(parse_retry_after("-1"), None);
    }

    #[test]
    fn retry_after_is_clamped_and_never_panics() {
        let hour = Some(MAX_RETRY_AFTER);
        assert_eq!(parse_retry_after("100000000000000000000"), hour);
        assert_eq!(parse_retry_after("1e300"), hour);
        assert_eq!(parse_retry_after("3600"), hour);
        assert_eq!(parse_retry_after("3601"), hour);
        assert_eq!(parse_retry_after("3599.5"), Some(Duration::from_millis(3_599_500)));
        assert_eq!(parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT"), hour);
        for bad in ["NaN", "inf", "-inf", "infinity", "-0.001", "-1e300"] {
            assert_eq!(parse_retry_after(bad), None, "{bad}");
        }
        assert_eq!(parse_retry_after("-0"), Some(Duration::ZERO));
    }
}
