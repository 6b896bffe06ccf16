//! The Telegram channel run in-process against the in-test Bot API server, for the tests of
//! the channel: a set-up that outlives restarts, a running channel, and waiting for what the
//! bot showed a chat.

// Each test binary uses a different part of this module.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use crate::jobs_support::SharedBuffer;
use crate::telegram_support::BotServer;
use mnemo::config::{CliOverrides, Dirs};
use mnemo::host::Loaded;
use mnemo::host::SessionHost;
use mnemo::jobs::delivery::Log;
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub type TestResult = Result<(), Box<dyn std::error::Error>>;
pub type AnyResult<T> = Result<T, Box<dyn std::error::Error>>;

pub const TOKEN: &str = "123456:test-token";
pub const ADA: i64 = 4242;
pub const WAIT: Duration = Duration::from_secs(20);

/// A data directory, config and script that outlive channel restarts.
pub struct Setup {
    pub dir: tempfile::TempDir,
    pub cli: CliOverrides,
    pub dirs: Dirs,
}

impl Setup {
    /// `config` goes at the top of the config file, `telegram` into its `[telegram]`.
    pub fn new(
        server: &BotServer,
        script: Value,
        config: &str,
        telegram: &str,
    ) -> AnyResult<Setup> {
        let dir = tempfile::tempdir()?;
        let (cfg, data, ws) = (
            dir.path().join("cfg"),
            dir.path().join("data"),
            dir.path().join("ws"),
        );
        for d in [&cfg, &data, &ws] {
            std::fs::create_dir_all(d)?;
        }
        let config = format!(
            "{config}\n[telegram]\nenabled = true\nbase_url = \"{}\"\npoll_timeout_secs = 5\n{telegram}",
            server.base_url()
        );
        std::fs::write(cfg.join("config.toml"), config)?;
        let script_path = dir.path().join("script.json");
        std::fs::write(&script_path, script.to_string())?;
        let cli = CliOverrides {
            model: Some(format!("scripted:{}", script_path.display())),
            ..Default::default()
        };
        let dirs = Dirs {
            config: Some(cfg),
            data: Some(data),
        };
        Ok(Setup { dir, cli, dirs })
    }

    pub fn workspace(&self) -> std::path::PathBuf {
        self.dir.path().join("ws")
    }

    pub fn loaded(&self) -> AnyResult<Loaded> {
        Ok(mnemo::host::load_config_from(
            &self.dirs,
            &self.workspace(),
            &self.cli,
        )?)
    }

    /// Starts the channel as `mnemo serve` would.
    pub fn start(&self) -> AnyResult<Running> {
        let loaded = Arc::new(self.loaded()?);
        let host = SessionHost::new();
        let cancel = CancellationToken::new();
        let log = SharedBuffer::default();
        let ctx = mnemo::channels::telegram::Ctx::with_token(
            loaded.clone(),
            host.clone(),
            self.cli.clone(),
            Arc::new(Log::new(log.clone())),
            cancel.clone(),
            TOKEN,
        )?;
        let task = tokio::spawn(mnemo::channels::telegram::run(Arc::new(ctx)));
        Ok(Running {
            loaded,
            host,
            cancel,
            log,
            task: Some(task),
        })
    }

    /// `mnemo telegram pair CODE`, its config loaded as the binary loads it.
    pub async fn pair(&self, code: &str) -> AnyResult<String> {
        let (dirs, workspace, cli) = (self.dirs.clone(), self.workspace(), self.cli.clone());
        let loaded = tokio::task::spawn_blocking(move || {
            mnemo::host::load_config_from(&dirs, &workspace, &cli).map_err(|e| e.to_string())
        })
        .await??;
        let mut out = Vec::new();
        mnemo::commands::telegram::pair(&loaded, code, &mut out)
            .await
            .map_err(|e| e.to_string())?;
        Ok(String::from_utf8(out)?)
    }
}

pub struct Running {
    pub loaded: Arc<Loaded>,
    pub host: SessionHost,
    pub cancel: CancellationToken,
    pub log: SharedBuffer,
    pub task: Option<JoinHandle<()>>,
}

impl Running {
    pub async fn stop(mut self) -> AnyResult<()> {
        self.cancel.cancel();
        if let Some(task) = self.task.take() {
            tokio::time::timeout(WAIT, task).await??;
        }
        self.host.stop_all(Duration::from_secs(5)).await;
        Ok(())
    }

    /// The user messages stored in the chat's current session.
    pub async fn user_messages(&self, chat: i64) -> AnyResult<Vec<String>> {
        let store = self.loaded.store()?;
        let texts = store
            .call(move |db| {
                let Some(session) = db.paired_chat(chat)?.and_then(|c| c.session_id) else {
                    return Ok(Vec::new());
                };
                let messages = db.all_messages(&session)?;
                Ok(messages
                    .into_iter()
                    .filter(|m| m.message.role == mnemo::llm::Role::User)
                    .map(|m| m.message.text())
                    .filter(|text| !text.is_empty())
                    .collect())
            })
            .await?;
        Ok(texts)
    }
}

/// The code in the pairing message the bot sent `chat`.
pub async fn pairing_code(server: &BotServer, chat: i64) -> AnyResult<String> {
    let message = server
        .wait_until(WAIT, |s| {
            s.messages(chat)
                .into_iter()
                .find(|m| m.text.contains("mnemo telegram pair"))
        })
        .await
        .ok_or("no pairing code was sent")?;
    let code = message
        .text
        .split("mnemo telegram pair ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .ok_or("no code in the message")?;
    Ok(code.to_string())
}

/// Pairs `chat` through the bot and the terminal command.
pub async fn paired(server: &BotServer, setup: &Setup, chat: i64) -> AnyResult<()> {
    server.send_text(chat, "hi");
    let code = pairing_code(server, chat).await?;
    setup.pair(&code).await?;
    Ok(())
}

/// The bot's last message in `chat` once it contains `text`.
pub async fn shown(
    server: &BotServer,
    chat: i64,
    text: &str,
) -> AnyResult<crate::telegram_support::BotMessage> {
    let found = server
        .wait_until(WAIT, |s| {
            s.messages(chat)
                .into_iter()
                .rev()
                .find(|m| m.text.contains(text))
        })
        .await;
    Ok(found.ok_or_else(|| {
        format!(
            "no message with {text:?}; the chat shows {:?}",
            server
                .messages(chat)
                .iter()
                .map(|m| m.text.clone())
                .collect::<Vec<_>>()
        )
    })?)
}

/// Waits for the question's message and returns its buttons' data.
pub async fn question(server: &BotServer, chat: i64) -> AnyResult<(i64, Vec<String>)> {
    let message = shown(server, chat, "wants to").await?;
    let buttons: Vec<String> = message.reply_markup["inline_keyboard"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|row| row.as_array().cloned().unwrap_or_default())
        .filter_map(|b| b["callback_data"].as_str().map(str::to_string))
        .collect();
    Ok((message.message_id, buttons))
}

pub fn write_script() -> Value {
    json!({"turns": [
        {"when": "write", "tool_calls": [{"name": "write_file",
            "arguments": {"path": "note.txt", "content": "from the phone"}}]},
        {"text": "Done with the file."}
    ]})
}
