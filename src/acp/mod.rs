//! `mnemo acp`: mnemo as an Agent Client Protocol agent on stdin/stdout, for editors (Zed
//! natively; JetBrains, Neovim and Emacs through plugins). It stands only on the host API:
//! sessions are opened, prompted and cancelled through `HostApi` with `Op`s, and their
//! `Event`s become `session/update`s. The ACP crate's types stay inside this module.

mod mcp;
mod pump;
mod services;
mod sessions;
mod updates;

use std::sync::Arc;

use acp::v1::schema::{
    CancelNotification, InitializeRequest, LoadSessionRequest, NewSessionRequest, PromptRequest,
    SetSessionConfigOptionRequest, SetSessionModeRequest,
};
use agent_client_protocol as acp;

use crate::config::CliOverrides;
use crate::host::{HostApi, Loaded};
use sessions::Front;

#[derive(Debug, thiserror::Error)]
pub enum AcpError {
    #[error("the ACP connection failed: {0}")]
    Connection(String),
}

/// Serves one ACP client on stdin/stdout until it closes the connection, then ends the
/// sessions this process runs (a served host's sessions go on). `loaded` is the configuration
/// mnemo started with: each session's workspace is the client's `cwd`, loaded like it.
pub async fn serve(
    host: Arc<dyn HostApi>,
    loaded: Arc<Loaded>,
    cli: CliOverrides,
) -> Result<(), AcpError> {
    let front = Arc::new(Front::new(host, loaded, cli));
    let served = acp::Agent
        .v1()
        .name("mnemo")
        .on_receive_request(
            {
                let front = front.clone();
                async move |request: InitializeRequest, responder, _cx| {
                    responder.respond(front.initialize(&request))
                }
            },
            acp::on_receive_request!(),
        )
        .on_receive_request(
            {
                let front = front.clone();
                async move |request: NewSessionRequest, responder, cx| {
                    let front = front.clone();
                    tokio::spawn(async move { front.new_session(request, responder, cx).await });
                    Ok(())
                }
            },
            acp::on_receive_request!(),
        )
        .on_receive_request(
            {
                let front = front.clone();
                async move |request: LoadSessionRequest, responder, cx| {
                    let front = front.clone();
                    tokio::spawn(async move { front.load_session(request, responder, cx).await });
                    Ok(())
                }
            },
            acp::on_receive_request!(),
        )
        .on_receive_request(
            {
                let front = front.clone();
                async move |request: PromptRequest, responder, _cx| {
                    let front = front.clone();
                    tokio::spawn(async move { front.prompt(request, responder).await });
                    Ok(())
                }
            },
            acp::on_receive_request!(),
        )
        .on_receive_request(
            {
                let front = front.clone();
                async move |request: SetSessionModeRequest, responder, _cx| {
                    let front = front.clone();
                    tokio::spawn(async move { front.set_mode(request, responder).await });
                    Ok(())
                }
            },
            acp::on_receive_request!(),
        )
        .on_receive_request(
            {
                let front = front.clone();
                async move |request: SetSessionConfigOptionRequest, responder, _cx| {
                    let front = front.clone();
                    tokio::spawn(async move { front.set_option(request, responder).await });
                    Ok(())
                }
            },
            acp::on_receive_request!(),
        )
        .on_receive_notification(
            {
                let front = front.clone();
                async move |cancel: CancelNotification, _cx| {
                    front.cancel(&cancel.session_id.0);
                    Ok(())
                }
            },
            acp::on_receive_notification!(),
        )
        .connect_to(acp::Stdio::new())
        .await;
    front.stop_all().await;
    match served {
        // A client that closed the connection while mnemo still had something to say (the
        // release of a terminal after a cancel) went away as at the end of its input.
        Err(error) if error.to_string().contains(&broken_pipe()) => Ok(()),
        other => other.map_err(|error| AcpError::Connection(error.to_string())),
    }
}

/// How the crate words a write to a client that is gone.
fn broken_pipe() -> String {
    std::io::Error::from_raw_os_error(libc::EPIPE).to_string()
}
