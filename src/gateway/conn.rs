//! One client connection: the hello, the token, then requests until the client goes. Lines
//! out go through one bounded queue and one writer; each attached session has a forwarder
//! that feeds it, so a slow socket holds back only this client (its sessions' fan-out detaches
//! it with a lag notice, the agents never wait).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, BufWriter,
};
use tokio::sync::{OwnedSemaphorePermit, mpsc};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::Gateway;
use super::admission::{MAX_CLIENTS, Ticket};
use super::search::SearchAsk;
use super::token::same_token;
use super::wire::{Auth, Hello, HostOp, Lagged, Reply, RequestOp, ServerLine, parse_request};
use crate::host::{Attachment, HostApi, LaunchError};
use crate::protocol::{Event, SessionEvent};

/// The longest line a client may send.
pub const MAX_LINE: usize = 1024 * 1024;
/// The longest line before the token is accepted: the token line is under 100 bytes.
const MAX_AUTH_LINE: usize = 1024;
/// Lines waiting for the socket.
const OUT_QUEUE: usize = 1024;
/// How long a client has to authenticate.
const AUTH_WAIT: Duration = Duration::from_secs(10);
/// A failed authentication is answered after this long, to slow guessing on that connection.
const FAILURE_DELAY: Duration = Duration::from_millis(200);

/// What reading one line gave.
enum Line {
    Text(String),
    TooLong,
    End,
}

/// Reads one line of at most `max` bytes; a longer one is skipped to its end.
async fn read_line(reader: &mut (impl AsyncBufRead + Unpin), max: usize) -> std::io::Result<Line> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(match (too_long, line.is_empty()) {
                (true, _) => Line::TooLong,
                (false, true) => Line::End,
                (false, false) => Line::Text(String::from_utf8_lossy(&line).into_owned()),
            });
        }
        let (take, ends) = match available.iter().position(|&b| b == b'\n') {
            Some(at) => (at, true),
            None => (available.len(), false),
        };
        if line.len() + take > max {
            too_long = true;
            line = Vec::new();
        } else if !too_long {
            line.extend_from_slice(&available[..take]);
        }
        reader.consume(take + usize::from(ends));
        if ends {
            return Ok(match too_long {
                true => Line::TooLong,
                false => Line::Text(String::from_utf8_lossy(&line).into_owned()),
            });
        }
    }
}

/// Writes the queued lines, buffered: lines that queued up while the socket was busy go out
/// in one write, and nothing waits once the queue is empty.
async fn write_lines(
    writer: impl AsyncWrite + Unpin,
    mut lines: mpsc::Receiver<String>,
) -> std::io::Result<()> {
    let mut writer = BufWriter::new(writer);
    while let Some(line) = lines.recv().await {
        writer.write_all(line.as_bytes()).await?;
        if lines.is_empty() {
            writer.flush().await?;
        }
    }
    writer.shutdown().await
}

/// The most stored sessions one request may list.
const MAX_ROWS: usize = 1000;

/// The reply to a read of the host API.
fn answered<T: serde::Serialize>(id: Value, read: Result<T, LaunchError>) -> Reply {
    let sent = read
        .map_err(|e| e.to_string())
        .and_then(|read| serde_json::to_value(read).map_err(|e| format!("cannot send: {e}")));
    match sent {
        Ok(value) => Reply::ok(id, value),
        Err(error) => Reply::error(id, error),
    }
}

/// One line, its newline included.
fn encode(line: &impl serde::Serialize) -> String {
    let mut text = serde_json::to_string(line).unwrap_or_else(|e| format!(r#"{{"error": "{e}"}}"#));
    text.push('\n');
    text
}

struct Client {
    gateway: Arc<Gateway>,
    out: mpsc::Sender<String>,
    attached: HashMap<String, JoinHandle<()>>,
    /// Cancelled to end the connection (a client that lagged is disconnected).
    closing: CancellationToken,
}

/// Serves one client until it disconnects or the gateway stops; `ticket` is its place among
/// the connections waiting for their token.
pub(super) async fn serve_client(
    gateway: Arc<Gateway>,
    stream: impl AsyncRead + AsyncWrite + Send + 'static,
    ticket: Ticket,
) {
    let (read, write) = tokio::io::split(stream);
    let mut reader = BufReader::new(read);
    let (out, lines) = mpsc::channel::<String>(OUT_QUEUE);
    let writer = tokio::spawn(write_lines(write, lines));
    let _ = out.send(encode(&Hello::current())).await;
    let refuse = |message: &str| encode(&Reply::error(Value::Null, message));
    let admitted = tokio::select! {
        admitted = authenticate(&gateway, &mut reader, &out) => admitted,
        () = tokio::time::sleep(AUTH_WAIT) => {
            let _ = out.send(refuse("no token in time")).await;
            None
        }
        () = ticket.evicted.cancelled() => {
            let _ = out.send(refuse("too many connections are waiting to send a token; closing")).await;
            None
        }
        () = gateway.cancel.cancelled() => None,
    };
    drop(ticket);
    if let Some(_permit) = admitted {
        let mut client = Client {
            gateway: gateway.clone(),
            out: out.clone(),
            attached: HashMap::new(),
            closing: gateway.cancel.child_token(),
        };
        loop {
            let line = tokio::select! {
                line = read_line(&mut reader, MAX_LINE) => line,
                () = client.closing.cancelled() => break,
            };
            match line {
                Ok(Line::Text(text)) if text.trim().is_empty() => {}
                Ok(Line::Text(text)) => client.handle(&text).await,
                Ok(Line::TooLong) => {
                    let too_long = format!("line longer than {MAX_LINE} bytes, ignored");
                    client.reply(Reply::error(Value::Null, too_long)).await;
                }
                Ok(Line::End) | Err(_) => break,
            }
        }
        for (_, forwarder) in client.attached.drain() {
            forwarder.abort();
        }
    }
    drop(out);
    let _ = tokio::time::timeout(Duration::from_secs(1), writer).await;
}

/// Reads the token line; a right token takes a client place (held by the returned permit).
async fn authenticate(
    gateway: &Gateway,
    reader: &mut (impl AsyncBufRead + Unpin),
    out: &mpsc::Sender<String>,
) -> Option<OwnedSemaphorePermit> {
    let given = match read_line(reader, MAX_AUTH_LINE).await {
        Ok(Line::Text(text)) => serde_json::from_str::<Auth>(&text).ok(),
        _ => None,
    };
    if !given.is_some_and(|auth| same_token(&auth.token, &gateway.token)) {
        tokio::time::sleep(FAILURE_DELAY).await;
        let wrong = Reply::error(Value::Null, "missing or wrong token; closing");
        let _ = out.send(encode(&wrong)).await;
        return None;
    }
    let Some(permit) = gateway.admission.client() else {
        let full =
            format!("too many clients are connected ({MAX_CLIENTS}); close one and try again");
        let _ = out.send(encode(&Reply::error(Value::Null, full))).await;
        return None;
    };
    let _ = out
        .send(encode(&Reply::ok(Value::Null, json!("authenticated"))))
        .await;
    Some(permit)
}

impl Client {
    async fn reply(&self, reply: Reply) {
        let _ = self.out.send(encode(&reply)).await;
    }

    async fn handle(&mut self, text: &str) {
        let request = match parse_request(text) {
            Ok(request) => request,
            Err(bad) => return self.reply(Reply::error(bad.id, bad.message)).await,
        };
        let id = request.id.clone();
        let reply = match (request.op, request.session) {
            (RequestOp::Host(HostOp::JobsChanged), _) => match &self.gateway.jobs_changed {
                Some(scheduler) => {
                    scheduler.jobs_changed();
                    Reply::ok(id, json!("reloading"))
                }
                None => Reply::error(id, "this gateway runs no schedules"),
            },
            (RequestOp::Host(HostOp::TelegramPaired { chat }), _) => {
                match &self.gateway.telegram_paired {
                    Some(telegram) if telegram.paired(chat).await => Reply::ok(id, json!("told")),
                    Some(_) => Reply::error(id, "the chat could not be told (see serve.log)"),
                    None => Reply::error(id, "this daemon runs no Telegram channel"),
                }
            }
            (RequestOp::Host(HostOp::Search(ask)), _) => return self.search(id, ask),
            (RequestOp::Host(HostOp::ListSessions), _) => {
                let live = self.gateway.local.live_sessions().await;
                answered(id, live.map(|sessions| json!({ "sessions": sessions })))
            }
            (RequestOp::Host(HostOp::StoredSessions { workspace, limit }), _) => {
                let limit = limit.min(MAX_ROWS);
                answered(
                    id,
                    self.gateway.local.stored_sessions(workspace, limit).await,
                )
            }
            (RequestOp::Host(HostOp::LatestSession { workspace }), _) => {
                answered(id, self.gateway.local.latest_session(workspace).await)
            }
            (RequestOp::Host(HostOp::SkillStats), _) => {
                answered(id, self.gateway.local.skill_stats().await)
            }
            (RequestOp::Host(HostOp::Capabilities), _) => {
                answered(id, self.gateway.local.capabilities().await)
            }
            (RequestOp::Host(HostOp::Schedules { workspace }), _) => {
                answered(id, self.gateway.local.schedules(workspace).await)
            }
            (RequestOp::Host(HostOp::Daemon), _) => answered(id, self.gateway.local.daemon().await),
            (RequestOp::Host(HostOp::CreateSession { workspace, model }), _) => {
                let create = self.gateway.create(workspace, model);
                match crate::crash::answered("gateway:create_session", create).await {
                    Ok(attachment) => {
                        let session = attachment.session.clone();
                        self.forward(attachment, None);
                        Reply::ok(id, json!({ "session": session }))
                    }
                    Err(err) => Reply::error(id, err),
                }
            }
            (RequestOp::Host(_) | RequestOp::Session(_), None) => {
                Reply::error(id, "this op needs a `session`")
            }
            (RequestOp::Host(HostOp::Attach { from_seq }), Some(session)) => {
                let attach = self.gateway.attach(&session, from_seq);
                match crate::crash::answered("gateway:attach", attach).await {
                    Ok(attachment) => {
                        let host = &self.gateway.host;
                        let last = host.last_seq(&attachment.session);
                        let session = attachment.session.clone();
                        // Announced again (as seq 0, outside the numbered stream) unless the
                        // client goes on from a sequence number: it needs model and workspace.
                        let announce = match from_seq {
                            None => host.started(&session),
                            Some(_) => None,
                        };
                        self.forward(attachment, announce);
                        Reply::ok(id, json!({"session": session, "last_seq": last}))
                    }
                    Err(err) => Reply::error(id, err),
                }
            }
            (RequestOp::Host(HostOp::StoredSession), Some(session)) => {
                answered(id, self.gateway.local.stored_session(session).await)
            }
            (RequestOp::Host(HostOp::RenameSession { title }), Some(session)) => {
                answered(id, self.gateway.local.rename(session, title).await)
            }
            (RequestOp::Host(HostOp::History { recent }), Some(session)) => {
                answered(id, self.gateway.local.history(session, recent).await)
            }
            (RequestOp::Host(HostOp::Detach), Some(session)) => {
                match self.attached.remove(&session) {
                    Some(forwarder) => {
                        forwarder.abort();
                        Reply::ok(id, json!({ "session": session }))
                    }
                    None => Reply::error(id, format!("not attached to session {session}")),
                }
            }
            (RequestOp::Session(op), Some(session)) => match self.gateway.host.ops(&session) {
                Some(ops) => match ops.send(op).await {
                    Ok(()) => Reply::ok(id, json!("sent")),
                    Err(_) => Reply::error(id, format!("session {session} has ended")),
                },
                None => Reply::error(
                    id,
                    format!("unknown session {session} (attach to it first)"),
                ),
            },
        };
        self.reply(reply).await;
    }

    /// Answers a search once it is done; this client's other requests do not wait for it.
    fn search(&self, id: Value, ask: SearchAsk) {
        let (searcher, out) = (self.gateway.searcher.clone(), self.out.clone());
        tokio::spawn(async move {
            let found = match searcher {
                Some(searcher) => searcher.answer(ask).await,
                None => Err("this gateway answers no searches".to_string()),
            };
            let found = found.and_then(|found| {
                serde_json::to_value(found).map_err(|e| format!("cannot send the hits: {e}"))
            });
            let reply = match found {
                Ok(found) => Reply::ok(id, found),
                Err(error) => Reply::error(id, error),
            };
            let _ = out.send(encode(&reply)).await;
        });
    }

    /// Feeds one attached session's events to this client until it detaches or lags.
    fn forward(&mut self, mut attachment: Attachment, announce: Option<Event>) {
        let out = self.out.clone();
        let host = self.gateway.host.clone();
        let closing = self.closing.clone();
        let session = attachment.session.clone();
        let forwarder = tokio::spawn(async move {
            if let Some(event) = announce {
                let session = attachment.session.clone();
                let announced = SessionEvent {
                    session,
                    seq: 0,
                    event,
                };
                if out
                    .send(encode(&ServerLine::Event(announced)))
                    .await
                    .is_err()
                {
                    return;
                }
            }
            let mut last = 0;
            while let Some(event) = attachment.events.recv().await {
                last = event.seq;
                if out.send(encode(&ServerLine::Event(event))).await.is_err() {
                    return;
                }
            }
            // The fan-out let go of this client while the session still runs: it fell behind.
            if host.last_seq(&attachment.session).is_some() {
                let lagged = Lagged {
                    session: attachment.session.clone(),
                    lagged_after_seq: last,
                };
                let _ = out.send(encode(&ServerLine::Lagged(lagged))).await;
                closing.cancel();
            }
        });
        if let Some(before) = self.attached.insert(session, forwarder) {
            before.abort();
        }
    }
}
