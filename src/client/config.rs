//! The client's options: where the server is, how to retry, whether to submit at once.
//!
//! [`Config`] deserializes from the JS options object (camelCase keys, every key but `threadId`
//! optional) and is validated by [`Config::validate`] (called by [`super::Client::new`]).

use std::fmt;

use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use crate::error::{Error, ErrorCode, Result};

/// Which server protocol the client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dialect {
    /// Neuron AI: `GET /threads/{threadId}`, `POST /threads/{threadId}/chat`, JSON replies.
    #[default]
    Neuron,
    /// Sidenet: `POST /v1/chat` answered by a UI message stream, run ids, one continuation per
    /// decision, `GET /v1/chat/stream` to replay a pause, `GET /v1/threads/{threadId}` for history.
    Sidenet,
}

impl Dialect {
    /// `"neuron"` or `"sidenet"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Dialect::Neuron => "neuron",
            Dialect::Sidenet => "sidenet",
        }
    }
}

/// How the Sidenet dialect talks to the agent: a streamed `POST /v1/chat` (default) or the collected
/// output of `POST /v1/agents/{agentId}/run` (`{chunks, finishReason}`), for apps that do not stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    #[default]
    Stream,
    Collect,
}

/// Path templates, relative to `baseUrl`; `{threadId}` (and `{agentId}`) are replaced by the
/// percent-encoded thread id (agent id). Every route not given takes its dialect's default.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Routes {
    /// The chat endpoint (new messages and decisions). Neuron `/threads/{threadId}/chat`, Sidenet
    /// `/v1/chat`.
    pub chat: String,
    /// The thread endpoint (load). Neuron `/threads/{threadId}`, Sidenet `/v1/threads/{threadId}`.
    pub thread: String,
    /// Sidenet: the replay of a paused run. Default `/v1/chat/stream?threadId={threadId}`.
    pub stream: String,
    /// Sidenet, `transport: "collect"`: the collected-output endpoint. Default
    /// `/v1/agents/{agentId}/run`.
    pub run: String,
}

impl Default for Routes {
    fn default() -> Self {
        Routes::for_dialect(Dialect::Neuron)
    }
}

impl Routes {
    /// The default routes of a dialect.
    pub fn for_dialect(dialect: Dialect) -> Routes {
        let (chat, thread) = match dialect {
            Dialect::Neuron => ("/threads/{threadId}/chat", "/threads/{threadId}"),
            Dialect::Sidenet => ("/v1/chat", "/v1/threads/{threadId}"),
        };
        Routes {
            chat: chat.to_owned(),
            thread: thread.to_owned(),
            stream: "/v1/chat/stream?threadId={threadId}".to_owned(),
            run: "/v1/agents/{agentId}/run".to_owned(),
        }
    }
}

/// The routes as given: absent ones take the dialect's default.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct RoutesIn {
    chat: Option<String>,
    thread: Option<String>,
    stream: Option<String>,
    run: Option<String>,
}

/// Retries of idempotent requests (thread loads and decision submissions) after a network error, a
/// timeout or a 5xx. `attempts` counts every try, the first included: 3 means one try and two retries.
/// The wait before retry `n` (1-based) is `min(backoffMs * 2^(n-1), maxBackoffMs)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Retry {
    pub attempts: u32,
    pub backoff_ms: u64,
    pub max_backoff_ms: u64,
}

impl Default for Retry {
    fn default() -> Self {
        Retry {
            attempts: 3,
            backoff_ms: 300,
            max_backoff_ms: 5000,
        }
    }
}

impl Retry {
    /// The wait after failed try number `attempt` (1-based).
    pub fn delay(&self, attempt: u32) -> u64 {
        let shift = attempt.saturating_sub(1).min(32);
        let grown = self.backoff_ms.saturating_mul(1u64 << shift);
        grown.min(self.max_backoff_ms.max(self.backoff_ms))
    }
}

/// The client's options.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "ConfigIn")]
pub struct Config {
    pub dialect: Dialect,
    /// The server's origin and prefix, e.g. `https://api.example.com` or `` (same origin). A trailing
    /// `/` is ignored.
    pub base_url: String,
    pub thread_id: String,
    /// Extra request headers (e.g. `Authorization`). From JS: an object or an array of `[name, value]`.
    pub headers: Vec<(String, String)>,
    pub routes: Routes,
    /// Submit as soon as every gated tool has a decision. Default `false`.
    pub auto_submit: bool,
    /// Emit [`super::Output::Persist`] so the driver keeps drafts in storage. Default `true`.
    pub persist: bool,
    /// Passed to the driver with every request. Default 30000.
    pub timeout_ms: u64,
    pub retry: Retry,
    /// Neuron: after a successful POST, apply the returned message at once and then reload the thread
    /// quietly to pick up the messages the reply does not carry (the tool results between the pause
    /// and the answer). Default `true`. With `false` the client only appends the returned message (one
    /// request fewer, but the intermediate messages appear only on the next load) and reloads only when
    /// in doubt (the reply's status and message disagree, or the thread was never loaded). Sidenet
    /// streams carry everything and never reload quietly.
    pub reload_after_post: bool,
    /// A bearer token: every request carries `Authorization: Bearer <token>` (an `Authorization` in
    /// `headers` wins).
    pub token: Option<String>,
    /// Sidenet: the agent version for new messages (continuations use the version that paused).
    pub agent_version_id: Option<String>,
    /// Sidenet: `stream` (default) or `collect`.
    pub transport: Transport,
    /// Sidenet, `transport: "collect"`: the agent of `POST /v1/agents/{agentId}/run` (required).
    pub agent_id: Option<String>,
}

/// The options as JS gives them (camelCase keys, every key but `threadId` optional).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConfigIn {
    #[serde(default)]
    dialect: Dialect,
    /// The server's origin and prefix, e.g. `https://api.example.com` or `` (same origin). A trailing
    /// `/` is ignored.
    #[serde(default)]
    base_url: String,
    thread_id: String,
    #[serde(default, deserialize_with = "headers")]
    headers: Vec<(String, String)>,
    #[serde(default)]
    routes: RoutesIn,
    #[serde(default)]
    auto_submit: bool,
    #[serde(default = "yes")]
    persist: bool,
    #[serde(default = "default_timeout")]
    timeout_ms: u64,
    #[serde(default)]
    retry: Retry,
    /// After a successful POST, apply the returned message at once and then reload the thread quietly
    /// to pick up the messages the reply does not carry (the tool results between the pause and the
    /// answer). Default `true`. With `false` the client only appends the returned message (one request
    /// fewer, but the intermediate messages appear only on the next load) and reloads only when in
    /// doubt (the reply's status and message disagree, or the thread was never loaded).
    #[serde(default = "yes")]
    reload_after_post: bool,
    #[serde(default)]
    token: Option<String>,
    #[serde(default)]
    agent_version_id: Option<String>,
    #[serde(default)]
    transport: Transport,
    #[serde(default)]
    agent_id: Option<String>,
}

impl From<ConfigIn> for Config {
    fn from(c: ConfigIn) -> Config {
        let defaults = Routes::for_dialect(c.dialect);
        Config {
            dialect: c.dialect,
            base_url: c.base_url,
            thread_id: c.thread_id,
            headers: c.headers,
            routes: Routes {
                chat: c.routes.chat.unwrap_or(defaults.chat),
                thread: c.routes.thread.unwrap_or(defaults.thread),
                stream: c.routes.stream.unwrap_or(defaults.stream),
                run: c.routes.run.unwrap_or(defaults.run),
            },
            auto_submit: c.auto_submit,
            persist: c.persist,
            timeout_ms: c.timeout_ms,
            retry: c.retry,
            reload_after_post: c.reload_after_post,
            token: c.token.filter(|t| !t.is_empty()),
            agent_version_id: c.agent_version_id.filter(|v| !v.is_empty()),
            transport: c.transport,
            agent_id: c.agent_id.filter(|v| !v.is_empty()),
        }
    }
}

fn yes() -> bool {
    true
}

fn default_timeout() -> u64 {
    30_000
}

impl Config {
    /// A Neuron config with every default.
    pub fn new(base_url: impl Into<String>, thread_id: impl Into<String>) -> Config {
        Config {
            dialect: Dialect::Neuron,
            base_url: base_url.into(),
            thread_id: thread_id.into(),
            headers: Vec::new(),
            routes: Routes::default(),
            auto_submit: false,
            persist: true,
            timeout_ms: default_timeout(),
            retry: Retry::default(),
            reload_after_post: true,
            token: None,
            agent_version_id: None,
            transport: Transport::Stream,
            agent_id: None,
        }
    }

    /// A Sidenet config with every default (streamed transport, the `/v1/` routes).
    pub fn sidenet(base_url: impl Into<String>, thread_id: impl Into<String>) -> Config {
        let mut config = Config::new(base_url, thread_id);
        config.dialect = Dialect::Sidenet;
        config.routes = Routes::for_dialect(Dialect::Sidenet);
        config
    }

    /// Parses the options from JSON text (the JS options object, serialized).
    pub fn from_json(input: &str) -> Result<Config> {
        serde_json::from_str(input).map_err(|e| {
            Error::new(
                ErrorCode::InvalidArgument,
                format!("invalid client options: {e}"),
            )
        })
    }

    /// Checks every field; `invalid_argument` with the field's name in the path otherwise.
    pub fn validate(&self) -> Result<()> {
        if self.thread_id.trim().is_empty() {
            return Err(bad("threadId", "threadId must not be empty"));
        }
        if self.thread_id.chars().any(char::is_control) {
            return Err(bad(
                "threadId",
                "threadId must not contain control characters",
            ));
        }
        if self.thread_id.len() > 1024 {
            return Err(bad("threadId", "threadId is longer than 1024 bytes"));
        }
        let base = self.base_url.trim_end_matches('/');
        if base.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err(bad(
                "baseUrl",
                "baseUrl must not contain spaces or control characters",
            ));
        }
        if !(base.is_empty()
            || base.starts_with("http://")
            || base.starts_with("https://")
            || base.starts_with('/'))
        {
            return Err(bad(
                "baseUrl",
                "baseUrl must be empty (same origin), a path starting with / or an http(s) URL",
            ));
        }
        for (name, route) in [
            ("routes.chat", &self.routes.chat),
            ("routes.thread", &self.routes.thread),
            ("routes.stream", &self.routes.stream),
            ("routes.run", &self.routes.run),
        ] {
            if !route.starts_with('/') {
                return Err(bad(name, format!("{name} must start with /")));
            }
            if route.chars().any(|c| c.is_control() || c.is_whitespace()) {
                return Err(bad(
                    name,
                    format!("{name} must not contain spaces or control characters"),
                ));
            }
        }
        for (name, value) in &self.headers {
            let token = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
            if !token {
                return Err(bad("headers", format!("invalid header name {name:?}")));
            }
            if value.chars().any(|c| c == '\r' || c == '\n' || c == '\0') {
                return Err(bad(
                    "headers",
                    format!("the value of header {name:?} contains a line break"),
                ));
            }
        }
        if let Some(token) = &self.token {
            if token.chars().any(char::is_control) {
                return Err(bad("token", "token must not contain control characters"));
            }
        }
        if self.dialect == Dialect::Sidenet && self.transport == Transport::Collect {
            match &self.agent_id {
                None => {
                    return Err(bad(
                        "agentId",
                        "agentId is required with transport \"collect\"",
                    ))
                }
                Some(id) if id.chars().any(|c| c.is_control() || c.is_whitespace()) => {
                    return Err(bad(
                        "agentId",
                        "agentId must not contain spaces or control characters",
                    ))
                }
                Some(_) => {}
            }
        }
        if self.retry.attempts == 0 {
            return Err(bad("retry.attempts", "retry.attempts must be at least 1"));
        }
        if self.timeout_ms == 0 {
            return Err(bad("timeoutMs", "timeoutMs must be positive"));
        }
        Ok(())
    }

    /// `baseUrl` without its trailing `/`.
    pub fn base(&self) -> &str {
        self.base_url.trim_end_matches('/')
    }

    /// A route with `{threadId}` filled in, prefixed by the base URL.
    pub(crate) fn url(&self, template: &str) -> String {
        let encoded = encode_component(&self.thread_id);
        let mut path = template.replace("{threadId}", &encoded);
        if path.contains("{agentId}") {
            let agent = encode_component(self.agent_id.as_deref().unwrap_or_default());
            path = path.replace("{agentId}", &agent);
        }
        format!("{}{}", self.base(), path)
    }

    /// The storage key for this thread's drafts: `toolgate:drafts:<dialect>:<baseUrl>:<threadId>`.
    pub fn persist_key(&self) -> String {
        format!(
            "toolgate:drafts:{}:{}:{}",
            self.dialect.as_str(),
            self.base(),
            self.thread_id
        )
    }
}

fn bad(path: &str, message: impl Into<String>) -> Error {
    Error::new(ErrorCode::InvalidArgument, message).with_path(path)
}

/// Percent-encodes everything but the unreserved characters of RFC 3986.
pub(crate) fn encode_component(s: &str) -> String {
    let hex = |n: u8| {
        char::from_digit(u32::from(n), 16)
            .unwrap_or('0')
            .to_ascii_uppercase()
    };
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push(hex(b >> 4));
            out.push(hex(b & 15));
        }
    }
    out
}

/// Headers as an object `{name: value}` or an array of `[name, value]` pairs.
fn headers<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Vec<(String, String)>, D::Error> {
    struct HeadersVisitor;

    impl<'de> Visitor<'de> for HeadersVisitor {
        type Value = Vec<(String, String)>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an object of header values or an array of [name, value] pairs")
        }

        fn visit_map<A: MapAccess<'de>>(
            self,
            mut map: A,
        ) -> std::result::Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some((k, v)) = map.next_entry::<String, String>()? {
                out.push((k, v));
            }
            Ok(out)
        }

        fn visit_seq<A: SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> std::result::Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(pair) = seq.next_element::<(String, String)>()? {
                out.push(pair);
            }
            Ok(out)
        }

        fn visit_unit<E: de::Error>(self) -> std::result::Result<Self::Value, E> {
            Ok(Vec::new())
        }

        fn visit_none<E: de::Error>(self) -> std::result::Result<Self::Value, E> {
            Ok(Vec::new())
        }
    }

    d.deserialize_any(HeadersVisitor)
}
