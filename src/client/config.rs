//! The client's options: where the server is, how to retry, whether to submit at once.
//!
//! [`Config`] reads the JS options object as JSON ([`Config::from_json`]: camelCase keys, every key
//! but `threadId` optional, unknown keys ignored) and is validated by [`Config::validate`] (called by
//! [`super::Client::new`]).
//!
//! The wasm driver reads and checks the options in JS instead (`readOptions` in `src/wasm/fast.js`,
//! whose code is smaller there than in wasm), by these same rules, in the same order and with the
//! same errors; only the JSON syntax check stays here ([`Config::check_json`]), and the crate takes
//! the result as [`Config::from_checked`]. A change to the rules goes in both places.

use crate::error::{Error, ErrorCode, Result};
use crate::json::{self, ToJson, Value};
use crate::prelude::*;

/// Which server protocol the client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
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

impl ToJson for Dialect {
    fn write_json(&self, out: &mut String) {
        json::write_str(out, self.as_str());
    }
}

/// How the Sidenet dialect talks to the agent: a streamed `POST /v1/chat` (default) or the collected
/// output of `POST /v1/agents/{agentId}/run` (`{chunks, finishReason}`), for apps that do not stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Transport {
    #[default]
    Stream,
    Collect,
}

/// Path templates, relative to `baseUrl`; `{threadId}` (and `{agentId}`) are replaced by the
/// percent-encoded thread id (agent id). Every route not given takes its dialect's default.
#[derive(Debug, Clone, PartialEq, Eq)]
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

/// Retries of idempotent requests (thread loads and decision submissions) after a network error, a
/// timeout or a 5xx. `attempts` counts every try, the first included: 3 means one try and two retries.
/// The wait before retry `n` (1-based) is `min(backoffMs * 2^(n-1), maxBackoffMs)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
        // `backoff_ms * 2^shift`, saturating: the shift loses no bit iff the top `shift` bits are
        // clear (no 128-bit multiply needed).
        let grown = if self.backoff_ms.leading_zeros() >= shift {
            self.backoff_ms << shift
        } else {
            u64::MAX
        };
        grown.min(self.max_backoff_ms.max(self.backoff_ms))
    }
}

/// The client's options.
#[derive(Debug, Clone, PartialEq, Eq)]
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

fn default_timeout() -> u64 {
    30_000
}

impl Config {
    /// A Neuron config with every default.
    pub fn new(base_url: impl Into<String>, thread_id: impl Into<String>) -> Config {
        let mut c = Config::of(Dialect::Neuron);
        c.base_url = base_url.into();
        c.thread_id = thread_id.into();
        c
    }

    /// A config of a dialect with every default, and no base URL nor thread id (its routes built
    /// once, for that dialect).
    pub(super) fn of(dialect: Dialect) -> Config {
        Config {
            dialect,
            base_url: String::new(),
            thread_id: String::new(),
            headers: Vec::new(),
            routes: Routes::for_dialect(dialect),
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

    /// Parses the options from JSON text (the JS options object, serialized): camelCase keys,
    /// every key but `threadId` optional, unknown keys ignored; `null` is the default for every
    /// key but `threadId` (`routes` and `retry` and each of their keys too). A key of the wrong
    /// type is `invalid_argument` with the key's name in the path.
    pub fn from_json(input: &str) -> Result<Config> {
        let value = Config::check_json(input)?;
        let Value::Object(o) = value else {
            return Err(option_error("", "the options must be an object"));
        };
        // One value filled in place: an error drops it whole (no drop code per partial field).
        let mut c = Config::new(String::new(), String::new());
        let mut read = Read::default();
        // One pass over the given keys (the last of a repeated key wins, as in `JSON.parse`).
        for (key, value) in &o {
            let group = match key.as_str() {
                "routes" => ROUTES,
                "retry" => RETRY,
                _ => TOP,
            };
            let result = match value {
                _ if group == TOP => read
                    .option(&mut c, TOP, key, value)
                    .map_err(|w| ("", key, w)),
                Value::Object(map) => map.iter().try_for_each(|(name, value)| {
                    let prefix = if group == ROUTES { "routes." } else { "retry." };
                    read.option(&mut c, group, name, value)
                        .map_err(|w| (prefix, name, w))
                }),
                Value::Null => Ok(()),
                _ => Err(("", key, "must be an object")),
            };
            result.map_err(|(prefix, name, what)| option_error(&prefixed(prefix, name), what))?;
        }
        let Some(thread_id) = read.thread_id else {
            return Err(option_error("threadId", "is required"));
        };
        c.thread_id = thread_id.to_owned();
        c.routes = Routes::for_dialect(c.dialect);
        let [chat, thread, stream, run] = read.routes;
        for (slot, route) in [
            (&mut c.routes.chat, chat),
            (&mut c.routes.thread, thread),
            (&mut c.routes.stream, stream),
            (&mut c.routes.run, run),
        ] {
            if let Some(route) = route {
                *slot = route.to_owned();
            }
        }
        Ok(c)
    }

    /// The options' JSON text, parsed; `invalid_argument` for invalid JSON.
    pub(crate) fn check_json(input: &str) -> Result<Value> {
        match Value::parse(input) {
            Ok(value) => Ok(value),
            Err(e) => Err(Error::new(
                ErrorCode::InvalidArgument,
                prefixed("invalid client options: ", &e.message),
            )),
        }
    }

    /// The config that `readOptions` in `src/wasm/fast.js` read and checked, as `from_json` and
    /// `validate` would: a JSON array of the options in its `KEYS`' order, `null` for a default
    /// (`dialect`, `transport`, `threadId`, `baseUrl`, `headers` as `[name, value]` pairs,
    /// `autoSubmit`, `persist`, `reloadAfterPost`, `timeoutMs`, `token`, `agentVersionId`,
    /// `agentId`, the routes `chat`, `thread`, `stream`, `run`, then `retry`'s `attempts`,
    /// `backoffMs`, `maxBackoffMs`). Nothing is checked again: what is not as expected is left
    /// at its default.
    #[cfg(any(target_arch = "wasm32", test))]
    pub(crate) fn from_checked(input: &str) -> Config {
        let parsed = Value::parse(input);
        let items = match &parsed {
            Ok(Value::Array(items)) => items.as_slice(),
            _ => &[],
        };
        let at = |i: usize| items.get(i).unwrap_or(&Value::Null);
        let text = |i: usize| match items.get(i) {
            Some(Value::String(s)) => Some(s.clone()),
            _ => None,
        };
        let num = |i: usize, default: u64| match at(i) {
            Value::Number(n) => n.as_u64().unwrap_or(default),
            _ => default,
        };
        // The dialect first: its default routes are built once (not Neuron's, then replaced).
        let mut c = Config::of(if matches!(at(0), Value::String(s) if s == "sidenet") {
            Dialect::Sidenet
        } else {
            Dialect::Neuron
        });
        if matches!(at(1), Value::String(s) if s == "collect") {
            c.transport = Transport::Collect;
        }
        // One call per text option (these two start empty), not a loop over a by-value array
        // (whose iterator is library code).
        let set = |slot: &mut String, i: usize| {
            if let Some(given) = text(i) {
                *slot = given;
            }
        };
        set(&mut c.thread_id, 2);
        set(&mut c.base_url, 3);
        if let Value::Array(pairs) = at(4) {
            for pair in pairs {
                if let Value::Array(pair) = pair {
                    if let [Value::String(name), Value::String(value)] = pair.as_slice() {
                        c.headers.push((name.clone(), value.clone()));
                    }
                }
            }
        }
        c.auto_submit = matches!(at(5), Value::Bool(true));
        c.persist = !matches!(at(6), Value::Bool(false));
        c.reload_after_post = !matches!(at(7), Value::Bool(false));
        c.timeout_ms = num(8, c.timeout_ms);
        c.token = text(9);
        c.agent_version_id = text(10);
        c.agent_id = text(11);
        set(&mut c.routes.chat, 12);
        set(&mut c.routes.thread, 13);
        set(&mut c.routes.stream, 14);
        set(&mut c.routes.run, 15);
        c.retry.attempts = u32::try_from(num(16, 3)).unwrap_or(3);
        c.retry.backoff_ms = num(17, c.retry.backoff_ms);
        c.retry.max_backoff_ms = num(18, c.retry.max_backoff_ms);
        c
    }

    /// Checks every field; `invalid_argument` with the field's name in the path otherwise.
    /// `invalid_argument` for the Sidenet dialect in a build without it (the package's
    /// `toolgate/neuron` entry point, built without the `sidenet` feature).
    pub(crate) fn check_dialect(&self) -> Result<()> {
        if !cfg!(feature = "sidenet") && self.dialect == Dialect::Sidenet {
            return Err(bad(
                "dialect",
                "this build of toolgate has only the Neuron dialect: import toolgate, not toolgate/neuron, for Sidenet",
            ));
        }
        Ok(())
    }

    pub fn validate(&self) -> Result<()> {
        self.check_dialect()?;
        if json::is_blank(Some(&self.thread_id)) {
            return Err(bad("threadId", "threadId must not be empty"));
        }
        if has_bad_char(&self.thread_id, false) {
            return Err(bad(
                "threadId",
                "threadId must not contain control characters",
            ));
        }
        if self.thread_id.len() > 1024 {
            return Err(bad("threadId", "threadId is longer than 1024 bytes"));
        }
        let base = self.base();
        if has_bad_char(base, true) {
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
                return Err(bad(name, prefixed(name, " must start with /")));
            }
            if has_bad_char(route, true) {
                return Err(bad(
                    name,
                    prefixed(name, " must not contain spaces or control characters"),
                ));
            }
        }
        for (name, value) in &self.headers {
            let token = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
            let quoted = json::quote(name);
            if !token {
                return Err(bad("headers", prefixed("invalid header name ", &quoted)));
            }
            if value.contains(['\r', '\n', '\0']) {
                let mut m = prefixed("the value of header ", &quoted);
                m.push_str(" contains a line break");
                return Err(bad("headers", m));
            }
            // `fetch` sends a header's value as bytes, one per character: beyond U+00FF it throws.
            if !latin1(value) {
                let mut m = prefixed("the value of header ", &quoted);
                m.push_str(" is not Latin-1 text");
                return Err(bad("headers", m));
            }
        }
        if let Some(token) = &self.token {
            if has_bad_char(token, false) {
                return Err(bad("token", "token must not contain control characters"));
            }
            if !latin1(token) {
                return Err(bad("token", "token must be Latin-1 text"));
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
                Some(id) if has_bad_char(id, true) => {
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
        let mut base = self.base_url.as_str();
        while let Some(rest) = base.strip_suffix("/") {
            base = rest;
        }
        base
    }

    /// A route with `{threadId}` filled in, prefixed by the base URL.
    /// (Cut at each `{`, found by a plain byte loop and `split_at_checked`: not `str::replace`,
    /// whose substring searcher and its panic paths cost 4 KiB of wasm, nor `split`, whose iterator
    /// is one more function with a panic path, nor `split_once` with a `char` pattern (a
    /// word-at-a-time `memchr`) or a closure (a loop decoding each `char`).)
    pub(crate) fn url(&self, template: &str) -> String {
        let mut out = self.base().to_owned();
        let mut rest = template;
        while let Some((head, part)) = rest
            .bytes()
            .position(|b| b == b'{')
            .and_then(|i| rest.split_at_checked(i))
        {
            out.push_str(head);
            // (Always there: `part` starts at the `{` found.)
            let Some(part) = part.strip_prefix("{") else {
                rest = part;
                break;
            };
            let (value, tail) = if let Some(tail) = part.strip_prefix("threadId}") {
                (self.thread_id.as_str(), tail)
            } else if let Some(tail) = part.strip_prefix("agentId}") {
                let id = match &self.agent_id {
                    Some(id) => id.as_str(),
                    None => "",
                };
                (id, tail)
            } else {
                out.push('{');
                rest = part;
                continue;
            };
            encode_into(&mut out, value);
            rest = tail;
        }
        out.push_str(rest);
        out
    }

    /// The storage key for this thread's drafts: `toolgate:drafts:<dialect>:<baseUrl>:<threadId>`.
    pub fn persist_key(&self) -> String {
        let mut key = prefixed("toolgate:drafts:", self.dialect.as_str());
        key.push(':');
        key.push_str(self.base());
        key.push(':');
        key.push_str(&self.thread_id);
        key
    }
}

fn bad(path: &str, message: impl Into<String>) -> Error {
    Error::new(ErrorCode::InvalidArgument, message).with_path(path)
}

/// Appends `s` to `out`, percent-encoding everything but the unreserved characters of RFC 3986.
fn encode_into(out: &mut String, s: &str) {
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            // Two pushes, not a loop over a by-value array (whose iterator is library code).
            // A digit computed, not read from a table: the char is known ASCII (one byte pushed).
            let hex = |nibble: u8| char::from(if nibble < 10 { b'0' } else { b'A' - 10 } + nibble);
            out.push('%');
            out.push(hex(b >> 4));
            out.push(hex(b & 15));
        }
    }
}

/// `invalid_argument` for option `name`: "invalid client options: <name> <what>", at `name`.
fn option_error(name: &str, what: &str) -> Error {
    let mut m = "invalid client options: ".to_owned();
    if !name.is_empty() {
        m.push_str(name);
        m.push(' ');
    }
    m.push_str(what);
    let e = Error::new(ErrorCode::InvalidArgument, m);
    if name.is_empty() {
        e
    } else {
        e.with_path(name)
    }
}

fn prefixed(prefix: &str, name: &str) -> String {
    let mut s = prefix.to_owned();
    s.push_str(name);
    s
}

/// Whether `s` holds a control character, or (with `spaces`) any whitespace.
fn has_bad_char(s: &str, spaces: bool) -> bool {
    s.chars()
        .any(|c| c.is_control() || (spaces && c.is_whitespace()))
}

/// What [`Config::from_json`] reads before it can fill the config: the thread id, and the routes
/// (their defaults depend on the dialect, which may come later).
#[derive(Default)]
struct Read<'a> {
    thread_id: Option<&'a str>,
    routes: [Option<&'a str>; 4],
}

impl<'a> Read<'a> {
    /// Reads option `name` of `group` (the top level, `routes` or `retry`); unknown ones are
    /// ignored. An error says what is wrong (the caller knows where).
    fn option(
        &mut self,
        c: &mut Config,
        group: u8,
        name: &str,
        value: &'a Value,
    ) -> Result<(), &'static str> {
        let opt = Opt(value);
        match (group, name) {
            (TOP, "dialect") => {
                c.dialect = match opt.str()? {
                    None | Some("neuron") => Dialect::Neuron,
                    Some("sidenet") => Dialect::Sidenet,
                    Some(_) => return Err("must be \"neuron\" or \"sidenet\""),
                }
            }
            (TOP, "transport") => {
                c.transport = match opt.str()? {
                    None | Some("stream") => Transport::Stream,
                    Some("collect") => Transport::Collect,
                    Some(_) => return Err("must be \"stream\" or \"collect\""),
                }
            }
            (TOP, "threadId") => match value {
                Value::String(s) => self.thread_id = Some(s),
                _ => return Err("must be a string"),
            },
            (TOP, "baseUrl") => c.base_url = opt.str()?.unwrap_or_default().to_owned(),
            (TOP, "headers") => c.headers = headers(value)?,
            (TOP, "autoSubmit") => opt.bool(&mut c.auto_submit)?,
            (TOP, "persist") => opt.bool(&mut c.persist)?,
            (TOP, "reloadAfterPost") => opt.bool(&mut c.reload_after_post)?,
            (TOP, "timeoutMs") => opt.u64(&mut c.timeout_ms)?,
            (TOP, "token") => c.token = opt.id()?,
            (TOP, "agentVersionId") => c.agent_version_id = opt.id()?,
            (TOP, "agentId") => c.agent_id = opt.id()?,
            (ROUTES, name) => {
                let i = match name {
                    "chat" => 0,
                    "thread" => 1,
                    "stream" => 2,
                    "run" => 3,
                    _ => return Ok(()),
                };
                if let Some(slot) = self.routes.get_mut(i) {
                    *slot = opt.str()?;
                }
            }
            (RETRY, "attempts") => {
                let mut attempts = u64::from(c.retry.attempts);
                opt.u64(&mut attempts)?;
                c.retry.attempts = u32::try_from(attempts).map_err(|_| "is too large")?;
            }
            (RETRY, "backoffMs") => opt.u64(&mut c.retry.backoff_ms)?,
            (RETRY, "maxBackoffMs") => opt.u64(&mut c.retry.max_backoff_ms)?,
            _ => {}
        }
        Ok(())
    }
}

/// The option groups: the top level, `routes`, `retry`.
const TOP: u8 = 0;
const ROUTES: u8 = 1;
const RETRY: u8 = 2;

/// One option's value.
#[derive(Clone, Copy)]
struct Opt<'a>(&'a Value);

impl<'a> Opt<'a> {
    /// A string; `null` is `None`.
    fn str(self) -> Result<Option<&'a str>, &'static str> {
        match self.0 {
            Value::Null => Ok(None),
            Value::String(s) => Ok(Some(s)),
            _ => Err("must be a string"),
        }
    }

    /// An optional id: `null` and `""` are `None`.
    fn id(self) -> Result<Option<String>, &'static str> {
        Ok(self.str()?.filter(|s| !s.is_empty()).map(str::to_owned))
    }

    /// A boolean into `slot`; `null` leaves the default there.
    fn bool(self, slot: &mut bool) -> Result<(), &'static str> {
        match self.0 {
            Value::Null => {}
            Value::Bool(b) => *slot = *b,
            _ => return Err("must be a boolean"),
        }
        Ok(())
    }

    /// A non-negative integer into `slot`; `null` leaves the default there.
    fn u64(self, slot: &mut u64) -> Result<(), &'static str> {
        match self.0 {
            Value::Null => {}
            Value::Number(n) => *slot = n.as_u64().ok_or("must be a non-negative integer")?,
            _ => return Err("must be a number"),
        }
        Ok(())
    }
}

/// Headers as an object `{name: value}` or an array of `[name, value]` pairs (`null`: none).
/// Every character at most U+00FF (what a header value can carry).
fn latin1(text: &str) -> bool {
    text.chars().all(|c| c <= '\u{ff}')
}

fn headers(value: &Value) -> Result<Vec<(String, String)>, &'static str> {
    let bad = || "must be an object of header values or an array of [name, value] pairs";
    let mut out = Vec::new();
    match value {
        Value::Null => {}
        Value::Object(map) => {
            for (k, v) in map {
                out.push((k.clone(), v.as_str().ok_or_else(bad)?.to_owned()));
            }
        }
        Value::Array(pairs) => {
            for pair in pairs {
                match pair.as_array().map(Vec::as_slice) {
                    Some([Value::String(k), Value::String(v)]) => out.push((k.clone(), v.clone())),
                    _ => return Err(bad()),
                }
            }
        }
        _ => return Err(bad()),
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{Config, Retry};

    #[test]
    fn delay_is_the_saturating_product() {
        let mut backoffs = vec![0, 1, 2, 3, 7, 11, 1000, 30_000, u64::MAX - 1, u64::MAX];
        for bit in 0..64 {
            let p = 1u64 << bit;
            backoffs.extend([p - 1, p, p + 1, p | (p >> 1), !p, p.wrapping_neg()]);
        }
        for backoff_ms in backoffs {
            for max_backoff_ms in [0, 1, 5000, u64::MAX / 3, u64::MAX] {
                let r = Retry {
                    attempts: 3,
                    backoff_ms,
                    max_backoff_ms,
                };
                for attempt in (0..=40).chain([u32::MAX - 1, u32::MAX]) {
                    let shift = attempt.saturating_sub(1).min(32);
                    let old = backoff_ms
                        .saturating_mul(1u64 << shift)
                        .min(max_backoff_ms.max(backoff_ms));
                    assert_eq!(
                        r.delay(attempt),
                        old,
                        "{backoff_ms} {max_backoff_ms} {attempt}"
                    );
                }
            }
        }
    }

    #[test]
    fn from_checked_reads_what_read_options_writes() {
        // `readOptions` (src/wasm/fast.js) writes the checked options in this order.
        let checked = r#"["sidenet","collect","t 1","https://x.test/",[["X-A","1"],["B","2"]],
            true,false,false,1234,"tok",null,"ag",null,"/t/{threadId}",null,"/r",7,11,13]"#;
        let json = r#"{"dialect":"sidenet","transport":"collect","threadId":"t 1",
            "baseUrl":"https://x.test/","headers":{"X-A":"1","B":"2"},"autoSubmit":true,
            "persist":false,"reloadAfterPost":false,"timeoutMs":1234,"token":"tok",
            "agentVersionId":"","agentId":"ag","routes":{"thread":"/t/{threadId}","run":"/r"},
            "retry":{"attempts":7,"backoffMs":11,"maxBackoffMs":13}}"#;
        assert_eq!(
            Config::from_checked(checked),
            Config::from_json(json).unwrap()
        );
        let defaults = r#"[null,null,"t",null,null,null,null,null,null,null,null,null,null,null,
            null,null,null,null,null]"#;
        assert_eq!(
            Config::from_checked(defaults),
            Config::from_json(r#"{"threadId":"t"}"#).unwrap()
        );
    }

    #[test]
    fn url_fills_every_placeholder_and_keeps_other_braces() {
        let c = Config::from_json(
            r#"{"threadId":"a b/ü","agentId":"ag 1","baseUrl":"https://x.test/api/"}"#,
        )
        .unwrap();
        assert_eq!(
            c.url("/t/{threadId}/{agentId}/{threadId}?q={x}&{"),
            "https://x.test/api/t/a%20b%2F%C3%BC/ag%201/a%20b%2F%C3%BC?q={x}&{"
        );
        assert_eq!(c.url("/plain"), "https://x.test/api/plain");
        assert_eq!(c.url(""), "https://x.test/api");
        assert_eq!(
            c.persist_key(),
            "toolgate:drafts:neuron:https://x.test/api:a b/ü"
        );
    }
}
