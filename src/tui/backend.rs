//! Where the TUI's sessions live: in this process's own session host, or in a running
//! `mnemo serve` reached through the gateway (`mnemo attach`). Either way the app gets an
//! `Attachment`; leaving a served session only detaches from it.

use std::time::Duration;

use crate::config::CliOverrides;
use crate::gateway::client::GatewayClient;
use crate::host::{Attachment, OpenOptions, SessionHost};
use crate::host::{LaunchError, Loaded, SessionChoice};

#[derive(Clone)]
pub enum Backend {
    Local(SessionHost),
    Served(GatewayClient),
}

impl Backend {
    pub(super) async fn open(
        &self,
        loaded: &Loaded,
        cli: &CliOverrides,
        choice: SessionChoice,
        options: OpenOptions,
    ) -> Result<Attachment, LaunchError> {
        let served =
            |err: crate::gateway::client::ClientError| LaunchError::Served(err.to_string());
        match self {
            Backend::Local(host) => host.open(loaded, cli, choice, options).await,
            Backend::Served(client) => match choice {
                SessionChoice::Resume(id) => client.attach(&id).await.map_err(served),
                // The app resolves `Continue` to a stored session before it gets here.
                SessionChoice::New | SessionChoice::Continue => client
                    .create(&loaded.workspace, cli.model.as_deref())
                    .await
                    .map_err(served),
            },
        }
    }

    /// Ends a session of this process; a served one goes on (dropping the attachment
    /// detached from it).
    pub(super) async fn stop(&self, id: &str, wait: Duration) {
        if let Backend::Local(host) = self {
            host.stop(id, wait).await;
        }
    }
}
