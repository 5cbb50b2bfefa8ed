//! `server.auth`: static tokens from every source (flags, environment, config, the tokens
//! file), OAuth from flags over the config file, and `--no-auth`, which excludes both.

use std::path::PathBuf;

use super::{http_url, EnvLookup, Secret};
use crate::config::cli::Args;
use crate::config::file::{Config, ConfigError};
use crate::config::tokens::{check_token, read_tokens_file, split_label, StaticToken};

/// Authentication of the HTTP edge, from flags, environment and the config file.
#[derive(Debug, Clone, Default)]
pub struct AuthSettings {
    /// `--no-auth` / `server.auth.disabled`.
    pub disabled: bool,
    /// From `--auth-token`, MCP_GEN_UI_AUTH_TOKEN and `server.auth.tokens`, labelled by source.
    pub tokens: Vec<StaticToken>,
    pub tokens_file: Option<PathBuf>,
    /// What the tokens file held at start (it is read again on SIGHUP).
    pub file_tokens: Vec<StaticToken>,
    pub oauth: Option<OAuthSettings>,
    /// `server.auth.admins`: principals whose refinements are everyone's.
    pub admins: Vec<String>,
    /// `server.auth.people`: credentials that are one person.
    pub people: super::people::People,
    /// `server.auth.metricsTokens` and MCP_GEN_UI_METRICS_TOKEN: they read `/metrics` only.
    pub metrics_tokens: Vec<Secret>,
}

impl AuthSettings {
    /// Whether any way in is configured (tokens, a tokens file, OAuth).
    pub fn configured(&self) -> bool {
        !self.tokens.is_empty() || self.tokens_file.is_some() || self.oauth.is_some()
    }

    /// Whether more than one person can come in: OAuth, a tokens file (read again on SIGHUP),
    /// or static tokens of more than one principal.
    pub fn several_people(&self) -> bool {
        let mut people = self.tokens.iter().map(|t| if t.named { t.label.as_str() } else { t.value.0.as_str() });
        let first = people.next();
        self.oauth.is_some() || self.tokens_file.is_some() || people.any(|p| Some(p) != first)
    }
}

#[derive(Debug, Clone)]
pub struct OAuthSettings {
    pub issuer: String,
    pub audience: String,
    pub jwks_url: url::Url,
    pub required_scopes: Vec<String>,
    pub resource: Option<String>,
    /// `clientIdsArePeople`: a token without `sub` is the client it names.
    pub client_ids_are_people: bool,
}

/// OAuth from the flags over the config file; None when neither configures it.
fn oauth(args: &Args, cfg: &mut Config) -> Result<Option<OAuthSettings>, ConfigError> {
    let flags = [&args.oauth_issuer, &args.oauth_audience, &args.oauth_jwks_url];
    if flags.iter().any(|f| f.is_some()) {
        let o = cfg.server.auth.oauth.get_or_insert_with(Default::default);
        if let Some(v) = &args.oauth_issuer {
            o.issuer = Some(v.clone());
        }
        if let Some(v) = &args.oauth_audience {
            o.audience = Some(v.clone());
        }
        if let Some(v) = &args.oauth_jwks_url {
            o.jwks_url = Some(v.clone());
        }
    }
    Ok(match &cfg.server.auth.oauth {
        None => None,
        Some(o) => {
            let need = |v: &Option<String>, field: &str, flag: &str, what: &str| {
                v.clone().filter(|s| !s.trim().is_empty()).ok_or_else(|| {
                    ConfigError::new(
                        format!("server.auth.oauth.{field}"),
                        format!("is required when OAuth is configured: {what} (or pass {flag})"),
                    )
                })
            };
            let issuer = need(&o.issuer, "issuer", "--oauth-issuer", "the authorization server's issuer URL, which tokens carry in iss")?;
            let issuer_field = if args.oauth_issuer.is_some() { "--oauth-issuer" } else { "server.auth.oauth.issuer" };
            http_url(&issuer, issuer_field)?;
            let audience = need(
                &o.audience,
                "audience",
                "--oauth-audience",
                "the audience tokens are issued for (aud), usually this server's /mcp URL",
            )?;
            let jwks = need(
                &o.jwks_url,
                "jwksUrl",
                "--oauth-jwks-url",
                "where the authorization server publishes its signing keys (its jwks_uri)",
            )?;
            let jwks_field = if args.oauth_jwks_url.is_some() { "--oauth-jwks-url" } else { "server.auth.oauth.jwksUrl" };
            let jwks_url = http_url(&jwks, jwks_field)?;
            if let Some((i, _)) = o.required_scopes.iter().enumerate().find(|(_, s)| s.is_empty() || s.contains(char::is_whitespace)) {
                return Err(ConfigError::new(
                    format!("server.auth.oauth.requiredScopes[{i}]"),
                    "a scope is one word: no spaces, not empty",
                ));
            }
            if let Some(r) = &o.resource {
                http_url(r, "server.auth.oauth.resource")?;
            }
            Some(OAuthSettings {
                issuer,
                audience,
                jwks_url,
                required_scopes: o.required_scopes.clone(),
                resource: o.resource.clone(),
                client_ids_are_people: o.client_ids_are_people,
            })
        }
    })
}

/// The tokens that read `/metrics` only, checked as tokens are (never quoted) and refused when
/// one is also a token for `/mcp` (it would then be more than a scrape's).
fn metrics_tokens(env: EnvLookup, cfg: &Config, tokens: &[StaticToken], file_tokens: &[StaticToken]) -> Result<Vec<Secret>, ConfigError> {
    let given = cfg
        .server
        .auth
        .metrics_tokens
        .iter()
        .enumerate()
        .map(|(i, t)| (format!("server.auth.metricsTokens[{i}]"), t.clone()))
        .chain(env("MCP_GEN_UI_METRICS_TOKEN").filter(|t| !t.is_empty()).map(|t| ("MCP_GEN_UI_METRICS_TOKEN".to_string(), t)));
    let mut out = Vec::new();
    for (field, t) in given {
        check_token(&t).map_err(|why| ConfigError::new(&field, format!("the token {why}")))?;
        if tokens.iter().chain(file_tokens).any(|s| s.value.0 == t) {
            return Err(ConfigError::new(
                &field,
                "is also a token for /mcp: a scrape's token reads /metrics only, so give it a token of its own",
            ));
        }
        out.push(Secret(t));
    }
    Ok(out)
}

/// Tokens from every source (all are accepted), the tokens file, OAuth from flags over the
/// config file, and `--no-auth`, which cannot be combined with any of them. Errors name the
/// field and never quote a token.
pub(super) fn resolve(args: &Args, env: EnvLookup, cfg: &mut Config, warnings: &mut Vec<String>) -> Result<AuthSettings, ConfigError> {
    let mut tokens = Vec::new();
    let mut add = |label: String, field: &str, t: &str| -> Result<(), ConfigError> {
        let (given, t) = split_label(t);
        let named = given.is_some();
        let label = given.map_or(label, str::to_string);
        check_token(t).map_err(|why| ConfigError::new(field, format!("the token {why}")))?;
        if t.len() < 16 {
            warnings.push(format!("{label}: the token is shorter than 16 characters, which is easy to guess"));
        }
        tokens.push(StaticToken { label, value: Secret(t.to_string()), named });
        Ok(())
    };
    for (i, t) in args.auth_tokens.iter().enumerate() {
        add(format!("--auth-token[{i}]"), "--auth-token", t)?;
    }
    if let Some(t) = env("MCP_GEN_UI_AUTH_TOKEN").filter(|t| !t.is_empty()) {
        add("MCP_GEN_UI_AUTH_TOKEN".into(), "MCP_GEN_UI_AUTH_TOKEN", &t)?;
    }
    for (i, t) in cfg.server.auth.tokens.iter().enumerate() {
        add(format!("server.auth.tokens[{i}]"), &format!("server.auth.tokens[{i}]"), t)?;
    }
    let tokens_file = cfg.server.auth.tokens_file.clone();
    let file_tokens = match &tokens_file {
        Some(path) => {
            let t = read_tokens_file(path).map_err(|e| ConfigError::new("server.auth.tokensFile", e.to_string()))?;
            if t.is_empty() {
                warnings.push(format!(
                    "server.auth.tokensFile: {} has no tokens yet: its tokens are accepted after the next SIGHUP",
                    path.display()
                ));
            }
            t
        }
        None => Vec::new(),
    };

    let oauth = oauth(args, cfg)?;
    let disabled = args.no_auth || cfg.server.auth.disabled;
    let people = super::people::resolve(&cfg.server.auth.people)?;
    let metrics_tokens = metrics_tokens(env, cfg, &tokens, &file_tokens)?;
    let auth =
        AuthSettings { disabled, tokens, tokens_file, file_tokens, oauth, admins: cfg.server.auth.admins.clone(), people, metrics_tokens };
    // A labelled token spelling a person's name, not listed for them, could not be told from
    // them: refused at start (a tokens file's later lines are refused at the edge).
    for t in auth.tokens.iter().chain(&auth.file_tokens).filter(|t| t.named) {
        if auth.people.is_person(&t.label) && auth.people.of_token(&t.label).is_none() {
            return Err(ConfigError::new(
                format!("server.auth.people.{}", t.label),
                format!(
                    "is also the label of a token it does not list: add {:?} to server.auth.people.{}.tokens if that token is theirs, or give the token another label",
                    t.label, t.label
                ),
            ));
        }
    }
    if auth.oauth.is_none() {
        // An admin is a token's own label (or a JWT subject): a name no token has is a typo
        // that leaves nobody able to refine the shared pages. A warning: the tokens file may
        // gain that token on SIGHUP.
        let names: Vec<&str> =
            auth.tokens.iter().chain(&auth.file_tokens).filter(|t| t.named).map(|t| t.label.as_str()).chain(auth.people.names()).collect();
        for a in auth.admins.iter().filter(|a| !names.contains(&a.as_str())) {
            warnings.push(format!(
                "server.auth.admins: {a:?} is the label of no token (labels are given as {a}:TOKEN, and are case-sensitive), so nobody is that admin"
            ));
        }
    }
    // Of the config file only: MCP_GEN_UI_METRICS_TOKEN may be set for every instance alike.
    if disabled && !cfg.server.auth.metrics_tokens.is_empty() {
        warnings.push("server.auth.metricsTokens: authentication is off, so /metrics needs no token and these are not used".into());
    }
    if disabled && auth.configured() {
        let field = if args.no_auth { "--no-auth" } else { "server.auth.disabled" };
        let what = if !auth.tokens.is_empty() {
            auth.tokens[0].label.split('[').next().unwrap_or("a token").to_string()
        } else if auth.tokens_file.is_some() {
            "server.auth.tokensFile".to_string()
        } else {
            "OAuth (server.auth.oauth)".to_string()
        };
        return Err(ConfigError::new(field, format!("turns authentication off, but {what} is configured: drop one of them")));
    }
    Ok(auth)
}
