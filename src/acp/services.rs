//! The client's file-system and terminal methods as the session's front-end services: what
//! the client advertised at `initialize` is offered to the session, and each request of its
//! tools (already checked and approved by mnemo) becomes `fs/read_text_file`,
//! `fs/write_text_file` or a terminal (`terminal/create`, `wait_for_exit`, `output`,
//! `release`, `kill` when the call stops waiting). Every client call has a time limit.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use acp::Client;
use acp::v1::ConnectionTo;
use acp::v1::schema::{
    ClientCapabilities, CreateTerminalRequest, KillTerminalRequest, ReadTextFileRequest,
    ReleaseTerminalRequest, SessionNotification, SessionUpdate, Terminal, TerminalId,
    TerminalOutputRequest, ToolCallContent, ToolCallUpdate, ToolCallUpdateFields,
    WaitForTerminalExitRequest, WriteTextFileRequest,
};
use agent_client_protocol as acp;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::protocol::{FrontEndReply, FrontEndRequest, FrontEndServices, Op};

/// How long the client may take for one file or terminal-management call.
const CALL_WAIT: Duration = Duration::from_secs(30);

/// The services a client with `capabilities` offers.
pub(super) fn offered(capabilities: &ClientCapabilities) -> FrontEndServices {
    FrontEndServices {
        read_files: capabilities.fs.read_text_file,
        write_files: capabilities.fs.write_text_file,
        terminal: capabilities.terminal,
    }
}

#[derive(Default)]
struct State {
    /// Requests in flight, stopped when the session withdraws them.
    running: HashMap<String, CancellationToken>,
    /// The terminal each tool call's command runs in, so its result keeps showing it.
    terminals: HashMap<String, TerminalId>,
}

/// One session's requests to the client.
#[derive(Clone, Default)]
pub(super) struct Requests(Arc<Mutex<State>>);

/// Where answers go.
#[derive(Clone)]
pub(super) struct Link {
    pub(super) session: String,
    pub(super) ops: mpsc::Sender<Op>,
    pub(super) cx: ConnectionTo<Client>,
}

impl Requests {
    fn state(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Carries out request `id` of tool call `call_id` and answers the session.
    pub(super) fn start(&self, link: &Link, id: String, call_id: String, request: FrontEndRequest) {
        let stop = CancellationToken::new();
        self.state().running.insert(id.clone(), stop.clone());
        let (requests, link) = (self.clone(), link.clone());
        tokio::spawn(async move {
            // A withdrawn request is dropped here, which kills its terminal (see `Running`).
            let reply = tokio::select! {
                reply = requests.serve(&link, &call_id, request) => Some(reply),
                () = stop.cancelled() => None,
            };
            requests.state().running.remove(&id);
            if let Some(reply) = reply {
                let _ = link.ops.send(Op::FrontEndReply { id, reply }).await;
            }
        });
    }

    /// The session no longer waits for `id`: its command is killed.
    pub(super) fn withdraw(&self, id: &str) {
        if let Some(stop) = self.state().running.remove(id) {
            stop.cancel();
        }
    }

    /// The terminal tool call `call_id` ran in, if it ran in one.
    pub(super) fn terminal_of(&self, call_id: &str) -> Option<TerminalId> {
        self.state().terminals.remove(call_id)
    }

    async fn serve(&self, link: &Link, call_id: &str, request: FrontEndRequest) -> FrontEndReply {
        let session = link.session.clone();
        match request {
            FrontEndRequest::ReadTextFile { path } => {
                let asked = ReadTextFileRequest::new(session, PathBuf::from(path));
                match call(&link.cx, asked).await {
                    Ok(read) => FrontEndReply::Text {
                        content: read.content,
                    },
                    Err(message) => FrontEndReply::Failed { message },
                }
            }
            FrontEndRequest::WriteTextFile { path, content } => {
                let asked = WriteTextFileRequest::new(session, PathBuf::from(path), content);
                match call(&link.cx, asked).await {
                    Ok(_) => FrontEndReply::Written,
                    Err(message) => FrontEndReply::Failed { message },
                }
            }
            FrontEndRequest::RunCommand {
                program,
                args,
                cwd,
                timeout_ms,
                output_limit,
                ..
            } => {
                let asked = CreateTerminalRequest::new(session, program)
                    .args(args)
                    .cwd(PathBuf::from(cwd))
                    .output_byte_limit(output_limit);
                let terminal = match call(&link.cx, asked).await {
                    Ok(created) => created.terminal_id,
                    Err(message) => {
                        return FrontEndReply::Failed {
                            message: format!("it could not start the command: {message}"),
                        };
                    }
                };
                self.state()
                    .terminals
                    .insert(call_id.to_string(), terminal.clone());
                show_terminal(link, call_id, &terminal);
                let limit = Duration::from_millis(timeout_ms);
                let running = Running {
                    link: link.clone(),
                    terminal,
                    ended: false,
                };
                running.finish(limit).await
            }
        }
    }
}

/// Sends `request` to the client, waiting at most `CALL_WAIT`; the error says why.
async fn call<R: acp::JsonRpcRequest>(
    cx: &ConnectionTo<Client>,
    request: R,
) -> Result<R::Response, String> {
    match tokio::time::timeout(CALL_WAIT, cx.send_request(request).block_task()).await {
        Ok(Ok(response)) => Ok(response),
        Ok(Err(error)) => Err(error.message.clone()),
        Err(_) => Err(format!("no answer within {} s", CALL_WAIT.as_secs())),
    }
}

/// The tool call shows the terminal its command runs in.
fn show_terminal(link: &Link, call_id: &str, terminal: &TerminalId) {
    let content = vec![ToolCallContent::Terminal(Terminal::new(terminal.clone()))];
    let update = ToolCallUpdate::new(
        call_id.to_string(),
        ToolCallUpdateFields::new().content(content),
    );
    let update = SessionUpdate::ToolCallUpdate(update);
    let notification = SessionNotification::new(link.session.clone(), update);
    let _ = link.cx.send_notification(notification);
}

/// A command running in a client terminal; dropped before it ended (withdrawn), it is killed
/// and released.
struct Running {
    link: Link,
    terminal: TerminalId,
    ended: bool,
}

impl Running {
    /// Waits for the command for at most `limit`, killing it then, and gives its output.
    async fn finish(mut self, limit: Duration) -> FrontEndReply {
        let (session, terminal) = (self.link.session.clone(), self.terminal.clone());
        let waited = WaitForTerminalExitRequest::new(session.clone(), terminal.clone());
        let exited = tokio::select! {
            exited = self.link.cx.send_request(waited).block_task() => Some(exited),
            () = tokio::time::sleep(limit) => None,
        };
        let timed_out = exited.is_none();
        if timed_out {
            let _ = call(
                &self.link.cx,
                KillTerminalRequest::new(session.clone(), terminal.clone()),
            )
            .await;
        }
        let output = call(&self.link.cx, TerminalOutputRequest::new(session, terminal)).await;
        self.release().await;
        let output = match output {
            Ok(output) => output,
            Err(message) => {
                return FrontEndReply::Failed {
                    message: format!(
                        "the command ran, but its output could not be read: {message}"
                    ),
                };
            }
        };
        let status = match exited {
            Some(Ok(exited)) => Some(exited.exit_status),
            _ => output.exit_status,
        };
        FrontEndReply::Exited {
            output: output.output,
            exit_code: status.as_ref().and_then(|s| s.exit_code),
            signal: status.and_then(|s| s.signal),
            truncated: output.truncated,
            timed_out,
        }
    }

    async fn release(&mut self) {
        self.ended = true;
        let released =
            ReleaseTerminalRequest::new(self.link.session.clone(), self.terminal.clone());
        let _ = call(&self.link.cx, released).await;
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.ended {
            return;
        }
        let (link, terminal) = (self.link.clone(), self.terminal.clone());
        tokio::spawn(async move {
            let session = link.session.clone();
            let _ = call(
                &link.cx,
                KillTerminalRequest::new(session.clone(), terminal.clone()),
            )
            .await;
            let _ = call(&link.cx, ReleaseTerminalRequest::new(session, terminal)).await;
        });
    }
}
