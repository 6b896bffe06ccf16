//! The gateway's lines, one JSON object each (`docs/gateway.md` shows them with examples).
//! A client sends `{"token": ...}` first, then requests `{"id", "session"?, "op"}` where
//! `op` is a session `Op` or a host request; the server sends a hello line first, replies by
//! `id`, and events as `{"session", "seq", "event"}`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::protocol::{Op, SessionEvent};

/// The version of this line format; the hello line says it.
pub const VERSION: u32 = 1;

/// The first line the server sends.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Hello {
    pub gateway: String,
    pub version: u32,
}

impl Hello {
    pub fn current() -> Hello {
        Hello {
            gateway: "mnemo".to_string(),
            version: VERSION,
        }
    }
}

/// The client's first line.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Auth {
    pub token: String,
}

/// Requests to the host rather than to one session's agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum HostOp {
    /// Starts a session in `workspace` (the daemon's directory when absent) with `model`
    /// (the configured default when absent); the reply holds its id. The client is attached.
    CreateSession {
        #[serde(default)]
        workspace: Option<String>,
        #[serde(default)]
        model: Option<String>,
    },
    /// The live sessions with their last sequence numbers.
    ListSessions,
    /// Attaches to `session` (resuming it from the store when it is not live), going on
    /// after event `from_seq` when given.
    Attach {
        #[serde(default)]
        from_seq: Option<u64>,
    },
    /// Stops receiving `session`'s events; it goes on running.
    Detach,
    /// Schedules or heartbeat files changed: the daemon reads them again now.
    JobsChanged,
    /// Searches what is remembered, with the daemon's embedder (loaded once, kept between
    /// searches); the reply is an [`crate::memory::embed::ArchiveSearch`].
    Search(super::search::SearchAsk),
    /// Stored sessions of `workspace` (every one when absent), newest first, at most
    /// `limit`; the reply is a list of session rows.
    StoredSessions {
        #[serde(default)]
        workspace: Option<String>,
        limit: usize,
    },
    /// The stored session `session` (an id or a unique prefix) names.
    StoredSession,
    /// Gives the stored session `session` names the title `title`; the reply is its row.
    RenameSession { title: String },
    /// The most recent stored session of `workspace`, or null.
    LatestSession { workspace: String },
    /// `session`'s stored history replayed as events (its last `recent` messages when
    /// given), with its session row.
    History {
        #[serde(default)]
        recent: Option<usize>,
    },
    /// How each skill has been used.
    SkillStats,
    /// The stored capabilities.
    Capabilities,
    /// What runs on schedule for `workspace`, as `mnemo schedule list` prints it.
    Schedules { workspace: String },
    /// The daemon's pid.
    Daemon,
    /// A terminal paired Telegram chat `chat`: the daemon's channel tells the chat.
    TelegramPaired { chat: i64 },
}

/// What a request asks.
#[derive(Debug, Clone, PartialEq)]
pub enum RequestOp {
    Host(HostOp),
    Session(Op),
}

/// One request line, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub id: Value,
    pub session: Option<String>,
    pub op: RequestOp,
}

/// Why a line is not a request; the reply carries the id when it could be read.
#[derive(Debug, Clone, PartialEq)]
pub struct BadRequest {
    pub id: Value,
    pub message: String,
}

/// Parses a request line: a host request or a session op, whichever `op` names.
pub fn parse_request(line: &str) -> Result<Request, BadRequest> {
    let value: Value = serde_json::from_str(line).map_err(|e| BadRequest {
        id: Value::Null,
        message: format!("not valid JSON: {e}"),
    })?;
    let id = value.get("id").cloned().unwrap_or(Value::Null);
    let bad = |message: String| BadRequest {
        id: id.clone(),
        message,
    };
    let Some(object) = value.as_object() else {
        return Err(bad("a request is a JSON object".into()));
    };
    if let Some(key) = object
        .keys()
        .find(|k| !matches!(k.as_str(), "id" | "session" | "op"))
    {
        return Err(bad(format!("unknown field `{key}`")));
    }
    let session = match object.get("session") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(bad("`session` is a string".into())),
    };
    let op = object.get("op").ok_or_else(|| bad("missing `op`".into()))?;
    let name = op.get("op").and_then(Value::as_str).unwrap_or_default();
    let op = match name {
        "create_session" | "list_sessions" | "attach" | "detach" | "jobs_changed" | "search"
        | "stored_sessions" | "stored_session" | "rename_session" | "latest_session"
        | "history" | "skill_stats" | "capabilities" | "schedules" | "daemon"
        | "telegram_paired" => {
            RequestOp::Host(serde_json::from_value(op.clone()).map_err(|e| bad(e.to_string()))?)
        }
        _ => RequestOp::Session(
            serde_json::from_value(op.clone())
                .map_err(|e| bad(format!("unknown or malformed op: {e}")))?,
        ),
    };
    Ok(Request { id, session, op })
}

/// A reply to one request.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Reply {
    pub id: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ok: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Reply {
    pub fn ok(id: Value, ok: Value) -> Reply {
        Reply {
            id,
            ok: Some(ok),
            error: None,
        }
    }

    pub fn error(id: Value, error: impl Into<String>) -> Reply {
        Reply {
            id,
            ok: None,
            error: Some(error.into()),
        }
    }
}

/// Told to a client that fell too far behind a session before it is detached from it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Lagged {
    pub session: String,
    /// Reattach from this sequence number to go on.
    pub lagged_after_seq: u64,
}

/// Any line the server sends after the hello.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum ServerLine {
    Event(SessionEvent),
    Reply(Reply),
    Lagged(Lagged),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_host_ops_or_session_ops_and_bad_ones_say_why() {
        let parsed = parse_request(r#"{"id": 1, "op": {"op": "list_sessions"}}"#);
        assert_eq!(
            parsed.map(|r| r.op),
            Ok(RequestOp::Host(HostOp::ListSessions))
        );
        let parsed = parse_request(
            r#"{"id": "a", "session": "s", "op": {"op": "user_input", "text": "hi"}}"#,
        );
        assert!(matches!(
            parsed,
            Ok(Request { op: RequestOp::Session(Op::UserInput { .. }), session: Some(s), .. }) if s == "s"
        ));
        let attach =
            parse_request(r#"{"id": 2, "session": "s", "op": {"op": "attach", "from_seq": 7}}"#);
        assert_eq!(
            attach.map(|r| r.op),
            Ok(RequestOp::Host(HostOp::Attach { from_seq: Some(7) }))
        );
        let unknown = parse_request(r#"{"id": 3, "op": {"op": "launch_missiles"}}"#);
        assert!(
            matches!(&unknown, Err(BadRequest { id, message }) if *id == 3 && message.contains("unknown"))
        );
        let broken = parse_request("{not json");
        assert!(
            matches!(&broken, Err(BadRequest { id: Value::Null, message }) if message.contains("JSON"))
        );
        assert!(parse_request(r#"{"id": 4, "op": {"op": "detach"}, "extra": 1}"#).is_err());
    }

    #[test]
    fn the_host_api_reads_parse_and_a_bad_one_says_why() {
        let op = |line: &str| parse_request(line).map(|r| r.op);
        assert_eq!(
            op(r#"{"id": 1, "op": {"op": "stored_sessions", "workspace": "/w", "limit": 5}}"#),
            Ok(RequestOp::Host(HostOp::StoredSessions {
                workspace: Some("/w".into()),
                limit: 5
            }))
        );
        assert_eq!(
            op(r#"{"id": 2, "session": "ab", "op": {"op": "history", "recent": 20}}"#),
            Ok(RequestOp::Host(HostOp::History { recent: Some(20) }))
        );
        assert_eq!(
            op(r#"{"id": 3, "op": {"op": "skill_stats"}}"#),
            Ok(RequestOp::Host(HostOp::SkillStats))
        );
        let missing = op(r#"{"id": 4, "op": {"op": "stored_sessions"}}"#);
        assert!(
            matches!(&missing, Err(BadRequest { message, .. }) if message.contains("missing field `limit`")),
            "{missing:?}"
        );
        let unknown = op(r#"{"id": 5, "op": {"op": "history", "everything": true}}"#);
        assert!(
            matches!(&unknown, Err(BadRequest { message, .. }) if message.contains("unknown field")),
            "{unknown:?}"
        );
    }

    #[test]
    fn a_search_line_parses_and_a_bad_one_says_why() {
        use crate::gateway::search::SearchAsk;
        let line = r#"{"id": 5, "op": {"op": "search", "query": "staging port", "limit": 3,
            "workspace": "/w", "database": "/d/mnemo.db", "model": "local:m"}}"#;
        let asked = SearchAsk {
            query: "staging port".into(),
            limit: 3,
            workspace: Some("/w".into()),
            database: Some("/d/mnemo.db".into()),
            model: Some("local:m".into()),
            except_session: None,
        };
        assert_eq!(
            parse_request(line).map(|r| r.op),
            Ok(RequestOp::Host(HostOp::Search(asked.clone())))
        );
        // What the client sends is what the daemon reads.
        let sent = serde_json::to_value(HostOp::Search(asked.clone())).map(|op| {
            parse_request(&serde_json::json!({"id": 1, "op": op}).to_string()).map(|r| r.op)
        });
        assert!(matches!(sent, Ok(Ok(RequestOp::Host(HostOp::Search(a)))) if a == asked));
        let bare = parse_request(r#"{"id": 6, "op": {"op": "search", "query": "x"}}"#);
        assert!(
            matches!(bare.map(|r| r.op), Ok(RequestOp::Host(HostOp::Search(a)))
                if a.limit == 10 && a.workspace.is_none() && a.model.is_none())
        );
        let says = |line: &str| parse_request(line).err().map(|bad| bad.message);
        let missing = says(r#"{"id": 7, "op": {"op": "search"}}"#);
        assert!(
            missing
                .as_deref()
                .is_some_and(|m| m.contains("missing field `query`")),
            "{missing:?}"
        );
        let wrong = says(r#"{"id": 8, "op": {"op": "search", "query": "x", "limit": "ten"}}"#);
        assert!(
            wrong.as_deref().is_some_and(|m| m.contains("invalid type")),
            "{wrong:?}"
        );
        let unknown = says(r#"{"id": 9, "op": {"op": "search", "query": "x", "scope": "all"}}"#);
        assert!(
            unknown
                .as_deref()
                .is_some_and(|m| m.contains("unknown field `scope`")),
            "{unknown:?}"
        );
    }
}
