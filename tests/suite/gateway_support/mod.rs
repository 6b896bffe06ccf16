//! A gateway served in-process over a Unix socket for the tests, and a line-level client
//! that speaks to it as another program would.

// Each test binary uses a different part of it.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use mnemo::config::{CliOverrides, Dirs};
use mnemo::gateway::{self, Listen};
use mnemo::host::SessionHost;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio_util::sync::CancellationToken;

pub type AnyResult<T> = Result<T, Box<dyn std::error::Error>>;

pub struct Served {
    pub dir: tempfile::TempDir,
    pub socket: std::path::PathBuf,
    pub token: String,
    pub running: Option<gateway::Running>,
    pub cancel: CancellationToken,
    pub host: SessionHost,
    pub loaded: Arc<mnemo::host::Loaded>,
}

/// A gateway in a new directory whose sessions run `script`, with `config` as config.toml.
pub async fn serve(script: Value, config: &str) -> AnyResult<Served> {
    serve_in(tempfile::tempdir()?, script, config, false).await
}

/// Like [`serve`], answering searches with the daemon's searcher as `mnemo serve` does.
pub async fn serve_searching(script: Value, config: &str) -> AnyResult<Served> {
    serve_in(tempfile::tempdir()?, script, config, true).await
}

/// The daemon stops (its sessions and journal as `mnemo serve` stops them) and a new one
/// starts on the same directory, running `script`.
pub async fn restart(mut served: Served, script: Value) -> AnyResult<Served> {
    served.cancel.cancel();
    served.host.stop_all(Duration::from_secs(10)).await;
    // The stopped sessions' leases are released on the old store's thread: wait for it.
    served.loaded.store()?.call(|_| Ok(())).await?;
    served.running.take();
    serve_in(served.dir, script, "", false).await
}

async fn serve_in(
    dir: tempfile::TempDir,
    script: Value,
    config: &str,
    searching: bool,
) -> AnyResult<Served> {
    let (cfg, data, ws) = (
        dir.path().join("cfg"),
        dir.path().join("data"),
        dir.path().join("ws"),
    );
    for d in [&cfg, &data, &ws] {
        std::fs::create_dir_all(d)?;
    }
    std::fs::write(cfg.join("config.toml"), config)?;
    let script_path = dir.path().join("script.json");
    std::fs::write(&script_path, script.to_string())?;
    let cli = CliOverrides {
        model: Some(format!("scripted:{}", script_path.display())),
        ..Default::default()
    };
    let dirs = Dirs {
        config: Some(cfg),
        data: Some(data.clone()),
    };
    let loaded = Arc::new(mnemo::host::load_config_from(&dirs, &ws, &cli)?);
    let socket = dir.path().join("gw.sock");
    let cancel = CancellationToken::new();
    let host = SessionHost::new();
    let searcher = match searching {
        true => {
            let log = mnemo::serve::log::ServeLog::open(&data)?;
            let searcher =
                mnemo::serve::searcher::Searcher::new(loaded.clone(), log, cancel.clone());
            Some(searcher as Arc<dyn gateway::search::ArchiveSearcher>)
        }
        false => None,
    };
    let running = gateway::start(
        host.clone(),
        loaded.clone(),
        cli,
        &gateway::GatewayOptions {
            listen: vec![Listen::Unix(socket.clone())],
            tls: None,
            jobs_changed: None,
            searcher,
            telegram_paired: None,
        },
        cancel.clone(),
    )
    .await?;
    let token = std::fs::read_to_string(data.join("gateway-token"))?;
    Ok(Served {
        dir,
        socket,
        token,
        running: Some(running),
        cancel,
        host,
        loaded,
    })
}

pub struct Client {
    pub lines: tokio::io::Lines<BufReader<OwnedReadHalf>>,
    pub write: OwnedWriteHalf,
}

impl Client {
    pub async fn connect(served: &Served, token: Option<&str>) -> AnyResult<(Client, Value)> {
        let stream = UnixStream::connect(&served.socket).await?;
        let (read, write) = stream.into_split();
        let mut client = Client {
            lines: BufReader::new(read).lines(),
            write,
        };
        let hello = client.next().await?;
        assert_eq!(hello, json!({"gateway": "mnemo", "version": 1}));
        let Some(token) = token else {
            return Ok((client, Value::Null));
        };
        client
            .send_raw(&json!({ "token": token }).to_string())
            .await?;
        let answer = client.next().await?;
        Ok((client, answer))
    }

    pub async fn send_raw(&mut self, line: &str) -> AnyResult<()> {
        self.write.write_all(line.as_bytes()).await?;
        self.write.write_all(b"\n").await?;
        Ok(())
    }

    pub async fn next(&mut self) -> AnyResult<Value> {
        let line = tokio::time::timeout(Duration::from_secs(20), self.lines.next_line())
            .await??
            .ok_or("connection closed")?;
        Ok(serde_json::from_str(&line)?)
    }

    /// Sends a request and returns its reply, keeping events that arrive first.
    pub async fn request(
        &mut self,
        id: u64,
        body: Value,
        events: &mut Vec<Value>,
    ) -> AnyResult<Value> {
        let mut line = body;
        line["id"] = json!(id);
        self.send_raw(&line.to_string()).await?;
        loop {
            let got = self.next().await?;
            if got.get("id") == Some(&json!(id)) {
                return Ok(got);
            }
            events.push(got);
        }
    }

    /// Events until the turn ends, after `seen`.
    pub async fn until_turn_finished(&mut self, mut seen: Vec<Value>) -> AnyResult<Vec<Value>> {
        while !seen.iter().any(|e| e["event"]["type"] == "turn_finished") {
            seen.push(self.next().await?);
        }
        Ok(seen)
    }
}
