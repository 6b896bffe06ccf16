//! An in-test editor: an ACP client that offers its file system (with unsaved buffers) and a
//! terminal that really runs what it is asked to, and records every request it gets.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use acp::schema::ProtocolVersion;
use acp::v1::ConnectionTo;
use acp::v1::schema::{
    ClientCapabilities, CreateTerminalRequest, CreateTerminalResponse, FileSystemCapabilities,
    InitializeRequest, KillTerminalRequest, KillTerminalResponse, PermissionOptionKind,
    ReadTextFileRequest, ReadTextFileResponse, ReleaseTerminalRequest, ReleaseTerminalResponse,
    RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SelectedPermissionOutcome, SessionNotification, TerminalExitStatus, TerminalOutputRequest,
    TerminalOutputResponse, WaitForTerminalExitRequest, WaitForTerminalExitResponse,
    WriteTextFileRequest, WriteTextFileResponse,
};
use acp::{AcpAgent, Agent, Client};
use agent_client_protocol as acp;
use tokio::sync::watch;

use super::{Seen, Workspace};

/// A command's end in the editor's terminal: its output and exit code.
type Ended = Option<(String, Option<u32>)>;

/// A program and its arguments.
pub type Launched = (String, Vec<String>);

/// What the editor has and what it was asked.
#[derive(Clone, Default)]
pub struct Editor {
    /// Open buffers with unsaved changes, by absolute path.
    pub buffers: Arc<Mutex<HashMap<PathBuf, String>>>,
    /// Every path asked to be read, in order.
    pub reads: Arc<Mutex<Vec<PathBuf>>>,
    /// Every write asked for.
    pub writes: Arc<Mutex<Vec<(PathBuf, String)>>>,
    /// Every command asked to run: the program and its arguments.
    pub commands: Arc<Mutex<Vec<Launched>>>,
    /// Terminals asked to kill their command.
    pub kills: Arc<Mutex<Vec<String>>>,
    /// Fails every file and terminal request with a JSON-RPC error.
    pub failing: bool,
    terminals: Arc<Mutex<HashMap<String, Running>>>,
}

/// A command in a terminal: its end when it comes, and the task that kills it when aborted.
struct Running {
    ended: watch::Receiver<Ended>,
    task: tokio::task::AbortHandle,
}

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| panic!("{e}"))
}

impl Editor {
    /// An editor with `text` unsaved in the buffer of `name` in `ws`.
    pub fn with_buffer(ws: &Workspace, name: &str, text: &str) -> Self {
        let editor = Editor::default();
        let path = std::fs::canonicalize(ws.path())
            .unwrap_or_else(|e| panic!("{e}"))
            .join(name);
        locked(&editor.buffers).insert(path, text.to_string());
        editor
    }

    pub fn failing() -> Self {
        Editor {
            failing: true,
            ..Editor::default()
        }
    }

    pub fn reads(&self) -> Vec<PathBuf> {
        locked(&self.reads).clone()
    }

    pub fn writes(&self) -> Vec<(PathBuf, String)> {
        locked(&self.writes).clone()
    }

    pub fn kills(&self) -> Vec<String> {
        locked(&self.kills).clone()
    }

    pub fn commands(&self) -> Vec<Launched> {
        locked(&self.commands).clone()
    }

    fn refuse<T>(&self) -> Option<Result<T, acp::Error>> {
        self.failing
            .then(|| Err(acp::Error::internal_error().data("the test editor refuses")))
    }

    fn read(&self, request: ReadTextFileRequest) -> Result<ReadTextFileResponse, acp::Error> {
        locked(&self.reads).push(request.path.clone());
        if let Some(refused) = self.refuse() {
            return refused;
        }
        let buffered = locked(&self.buffers).get(&request.path).cloned();
        let content = match buffered {
            Some(text) => text,
            None => std::fs::read_to_string(&request.path)
                .map_err(|e| acp::Error::internal_error().data(e.to_string()))?,
        };
        Ok(ReadTextFileResponse::new(content))
    }

    fn write(&self, request: WriteTextFileRequest) -> Result<WriteTextFileResponse, acp::Error> {
        locked(&self.writes).push((request.path.clone(), request.content.clone()));
        if let Some(refused) = self.refuse() {
            return refused;
        }
        locked(&self.buffers).insert(request.path, request.content);
        Ok(WriteTextFileResponse::new())
    }

    fn create(&self, request: CreateTerminalRequest) -> Result<CreateTerminalResponse, acp::Error> {
        locked(&self.commands).push((request.command.clone(), request.args.clone()));
        if let Some(refused) = self.refuse() {
            return refused;
        }
        let mut command = tokio::process::Command::new(&request.command);
        command
            .args(&request.args)
            .stdin(Stdio::null())
            .kill_on_drop(true);
        if let Some(cwd) = &request.cwd {
            command.current_dir(cwd);
        }
        let (tx, rx) = watch::channel(None);
        let task = tokio::spawn(async move {
            let ended = match command.output().await {
                Ok(out) => {
                    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
                    text.push_str(&String::from_utf8_lossy(&out.stderr));
                    let code = out.status.code().and_then(|c| u32::try_from(c).ok());
                    (text, code)
                }
                Err(e) => (format!("could not start: {e}"), Some(127)),
            };
            let _ = tx.send(Some(ended));
        });
        let id = format!("term-{}", locked(&self.terminals).len() + 1);
        let running = Running {
            ended: rx,
            task: task.abort_handle(),
        };
        locked(&self.terminals).insert(id.clone(), running);
        Ok(CreateTerminalResponse::new(id))
    }

    fn ended(&self, terminal: &str) -> Result<watch::Receiver<Ended>, acp::Error> {
        locked(&self.terminals)
            .get(terminal)
            .map(|running| running.ended.clone())
            .ok_or_else(|| acp::Error::invalid_params().data("no such terminal"))
    }
}

/// Connects to `agent` as `editor`, offering its file system and terminal; permissions are
/// allowed once. Runs `main` with the connection.
pub async fn run<R>(
    agent: AcpAgent,
    seen: &Seen,
    editor: &Editor,
    main: impl AsyncFnOnce(ConnectionTo<Agent>) -> Result<R, acp::Error>,
) -> Result<R, acp::Error> {
    let updates = seen.updates.clone();
    let asked = seen.asked.clone();
    let (e1, e2, e3, e4, e5, e6) = (
        editor.clone(),
        editor.clone(),
        editor.clone(),
        editor.clone(),
        editor.clone(),
        editor.clone(),
    );
    Client
        .v1()
        .name("mnemo-test-editor")
        .on_receive_notification(
            async move |notification: SessionNotification, _cx| {
                locked(&updates).push(notification.update);
                Ok(())
            },
            acp::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: RequestPermissionRequest, responder, _cx| {
                let chosen = request
                    .options
                    .iter()
                    .find(|option| option.kind == PermissionOptionKind::AllowOnce)
                    .map(|option| option.option_id.clone());
                locked(&asked).push(request);
                let outcome = match chosen {
                    Some(id) => {
                        RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id))
                    }
                    None => RequestPermissionOutcome::Cancelled,
                };
                responder.respond(RequestPermissionResponse::new(outcome))
            },
            acp::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ReadTextFileRequest, responder, _cx| match e1.read(request) {
                Ok(read) => responder.respond(read),
                Err(e) => responder.respond_with_error(e),
            },
            acp::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: WriteTextFileRequest, responder, _cx| match e2.write(request) {
                Ok(written) => responder.respond(written),
                Err(e) => responder.respond_with_error(e),
            },
            acp::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: CreateTerminalRequest, responder, _cx| match e3.create(request) {
                Ok(created) => responder.respond(created),
                Err(e) => responder.respond_with_error(e),
            },
            acp::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: WaitForTerminalExitRequest, responder, _cx| {
                let mut ended = match e4.ended(&request.terminal_id.0) {
                    Ok(ended) => ended,
                    Err(e) => return responder.respond_with_error(e),
                };
                // Answered from a task: the connection's loop must go on meanwhile.
                tokio::spawn(async move {
                    let done = ended.wait_for(Option::is_some).await.map(|d| d.clone());
                    let code = done.ok().flatten().and_then(|(_, code)| code);
                    let status = TerminalExitStatus::new().exit_code(code);
                    responder.respond(WaitForTerminalExitResponse::new(status))
                });
                Ok(())
            },
            acp::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: TerminalOutputRequest, responder, _cx| {
                let ended = match e5.ended(&request.terminal_id.0) {
                    Ok(ended) => ended.borrow().clone(),
                    Err(e) => return responder.respond_with_error(e),
                };
                let (output, code) = ended.unwrap_or_default();
                let status = code.map(|code| TerminalExitStatus::new().exit_code(code));
                responder.respond(TerminalOutputResponse::new(output, false).exit_status(status))
            },
            acp::on_receive_request!(),
        )
        .on_receive_request(
            async move |_request: ReleaseTerminalRequest, responder, _cx| {
                responder.respond(ReleaseTerminalResponse::new())
            },
            acp::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: KillTerminalRequest, responder, _cx| {
                let id = request.terminal_id.0.to_string();
                // Dropping the command's task kills the command.
                if let Some(running) = locked(&e6.terminals).get(&id) {
                    running.task.abort();
                }
                locked(&e6.kills).push(id);
                responder.respond(KillTerminalResponse::new())
            },
            acp::on_receive_request!(),
        )
        .connect_with(agent, main)
        .await
}

/// Initializes offering the file system and a terminal, and opens a session in `ws`.
pub async fn new_session(cx: &ConnectionTo<Agent>, ws: &Workspace) -> Result<String, acp::Error> {
    let fs = FileSystemCapabilities::new()
        .read_text_file(true)
        .write_text_file(true);
    let capabilities = ClientCapabilities::new().fs(fs).terminal(true);
    cx.send_request(InitializeRequest::new(ProtocolVersion::V1).client_capabilities(capabilities))
        .block_task()
        .await?;
    let session = cx
        .send_request(acp::v1::schema::NewSessionRequest::new(ws.path()))
        .block_task()
        .await?;
    Ok(session.session_id.0.to_string())
}
