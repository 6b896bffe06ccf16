//! The `mnemo` binary: parse flags, pick a front end. Everything else lives in the library.

use std::io::{Read, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context;
use clap::Parser;
use mnemo::commands::{self, sessions::ExportFormat};
use mnemo::config::{CliOverrides, ProviderKind};
use mnemo::headless::{OutputMode, run_prompt};
use mnemo::host::{self, HostApi, SessionChoice};
use mnemo::memory::StoreError;
use mnemo::protocol::Op;
use mnemo::tui::start_questions;

mod cli_args;

use cli_args::*;

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    if args
        .next()
        .is_some_and(|first| first == mnemo::sandbox::egress::shim::ARG)
    {
        let rest: Vec<_> = args.collect();
        return ExitCode::from(
            u8::try_from(mnemo::sandbox::egress::shim::main(&rest)).unwrap_or(1),
        );
    }
    for (name, value) in mnemo::memory::local_embed::thread_env() {
        if std::env::var_os(name).is_none() {
            // SAFETY: no other thread exists yet: main has not started the runtime or
            // anything else.
            unsafe { std::env::set_var(name, value) };
        }
    }
    let cli = Cli::parse();
    if let Some(Command::SandboxExec { spec }) = &cli.command {
        return sandbox_exec(spec);
    }
    match real_main(cli) {
        Ok(code) => code,
        // The reader has what it wanted (`mnemo status | head -1`): stop quietly, as Unix
        // tools do.
        Err(_) if STDOUT_CLOSED.load(Ordering::Relaxed) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("mnemo: {err:#}");
            ExitCode::from(2)
        }
    }
}

/// `mnemo sandbox-exec SPEC`: the command's own exit code, 2 when it could not run.
fn sandbox_exec(spec: &str) -> ExitCode {
    let ran = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(mnemo::sandbox::reentry::ReentryError::from)
        .and_then(|runtime| runtime.block_on(mnemo::sandbox::reentry::run(spec)));
    match ran {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(err) => {
            eprintln!("{err}");
            ExitCode::from(2)
        }
    }
}

/// Set once a write to stdout found its reader gone.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Stdout for the commands' output, noting a reader that went away.
struct Out(std::io::StdoutLock<'static>);

impl Out {
    fn noted<T>(result: std::io::Result<T>) -> std::io::Result<T> {
        if let Err(error) = &result
            && error.kind() == std::io::ErrorKind::BrokenPipe
        {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
        }
        result
    }
}

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        Self::noted(self.0.write(buf))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Self::noted(self.0.flush())
    }
}

/// Runs `future` on a runtime of its own, then shuts the runtime down without waiting more
/// than a moment for blocking work (a read stuck on a special file must not keep mnemo from
/// exiting).
fn block_on<F: std::future::Future>(future: F) -> anyhow::Result<F::Output> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let output = runtime.block_on(future);
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    Ok(output)
}

/// The daemon's sessions through its gateway with `--attach`, else a host in this process that
/// only this process watches.
async fn session_host(
    choice: &HostChoice,
    loaded: &Arc<host::Loaded>,
) -> anyhow::Result<Arc<dyn HostApi>> {
    let HostChoice { attach, url, tls } = choice;
    if !attach {
        return Ok(Arc::new(host::LocalHost::new(
            host::SessionHost::in_process_only(),
            loaded.clone(),
        )));
    }
    let data = loaded
        .dirs
        .data
        .clone()
        .context("mnemo has no data directory")?;
    let files = tls.files();
    let client = mnemo::gateway::client::GatewayClient::connect(&data, target(url, &files)).await?;
    Ok(Arc::new(client))
}

fn target<'a>(
    url: &'a Option<String>,
    tls: &'a Option<mnemo::gateway::tls::ClientTlsFiles>,
) -> mnemo::gateway::client::Target<'a> {
    match url {
        Some(url) => mnemo::gateway::client::Target::Tcp {
            url,
            tls: tls.as_ref(),
        },
        None => mnemo::gateway::client::Target::Socket,
    }
}

fn answer(done: Result<(), commands::CommandError>) -> anyhow::Result<ExitCode> {
    match done {
        Ok(()) => Ok(ExitCode::SUCCESS),
        // An unknown name is an answer, like grep finding nothing: exit 1, not 2.
        Err(commands::CommandError::Usage(message)) => {
            eprintln!("mnemo: {message}");
            Ok(ExitCode::from(1))
        }
        Err(other) => Err(other.into()),
    }
}

fn real_main(cli: Cli) -> anyhow::Result<ExitCode> {
    mnemo::crash::install(mnemo::config::Dirs::from_env().data.as_deref());
    let workspace = match &cli.cd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let overrides = CliOverrides {
        model: cli.model.clone(),
        provider: cli.provider.map(|p| match p {
            ProviderArg::Anthropic => ProviderKind::Anthropic,
            ProviderArg::Openai => ProviderKind::OpenAi,
        }),
        base_url: cli.base_url.clone(),
        api_key_env: cli.api_key_env.clone(),
        max_steps: cli.max_steps,
        db: cli.db.clone(),
        sandbox: cli.sandbox,
        network: cli.network,
        approval: cli.approval,
        fallbacks: cli.fallbacks.clone(),
        broad_workspace: cli.broad_workspace,
        distrust_workspace: false,
    };
    let choice = match (&cli.resume.resume, cli.resume.continue_last) {
        (Some(id), _) if !id.is_empty() => SessionChoice::Resume(id.clone()),
        (Some(_), _) => SessionChoice::Continue,
        (None, true) => SessionChoice::Continue,
        (None, false) => SessionChoice::New,
    };
    let mut loaded = host::load_config(&workspace, &overrides)?;
    // Sessions of this process tell a running `mnemo serve` of the schedules they make.
    loaded.services = std::sync::Arc::new(mnemo::serve::notice::DaemonNotice::new(
        loaded.dirs.data.clone(),
    ));
    mnemo::crash::set_webhook(loaded.config.crash_webhook.clone());
    let mut out = Out(std::io::stdout().lock());
    match cli.command {
        Some(Command::Config) => {
            block_on(commands::config::config(&loaded, &overrides, &mut out))??;
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Sessions {
            all,
            tree,
            runs,
            limit,
            action,
        }) => {
            match action {
                None => {
                    let shown = commands::sessions::Shown { all, tree, runs };
                    commands::sessions::list(&loaded, shown, limit, &mut out)?
                }
                Some(SessionAction::Rm { id }) => {
                    commands::sessions::remove(&loaded, &id, &mut out)?
                }
                Some(SessionAction::Rename { id, title }) => {
                    commands::sessions::rename(&loaded, &id, &title, &mut out)?
                }
                Some(SessionAction::Fork { id }) => {
                    commands::sessions::fork(&loaded, &id, &mut out)?
                }
                Some(SessionAction::Rewind {
                    id,
                    turn,
                    files,
                    conversation,
                    both: _,
                }) => {
                    let what = match (files, conversation) {
                        (true, _) => mnemo::protocol::RewindWhat::Files,
                        (_, true) => mnemo::protocol::RewindWhat::Conversation,
                        _ => mnemo::protocol::RewindWhat::Both,
                    };
                    let rewind = commands::rewind::rewind(&loaded, &id, turn, what, &mut out);
                    block_on(rewind)??
                }
                Some(SessionAction::Export { id, format }) => {
                    let format = match format {
                        FormatArg::Md => ExportFormat::Markdown,
                        FormatArg::Json => ExportFormat::Json,
                    };
                    commands::sessions::export(&loaded, &id, format, &mut out)?
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Memory { action }) => {
            match action {
                MemoryAction::Search { query, limit, here } => {
                    let query = query.join(" ");
                    block_on(commands::memory::search(
                        &loaded, &query, limit, here, &mut out,
                    ))??
                }
                MemoryAction::Reindex => {
                    block_on(commands::memory::reindex(&loaded, &mut std::io::stderr()))??
                }
                MemoryAction::Model {
                    action: ModelAction::Install { from },
                } => block_on(commands::memory::install_model(&loaded, from, &mut out))??,
                MemoryAction::Remember { text, global } => {
                    commands::memory::remember(&loaded, &text.join(" "), global, &mut out)?
                }
                MemoryAction::Forget { id } => commands::memory::forget(&loaded, id, &mut out)?,
                MemoryAction::List => commands::memory::list(&loaded, &mut out)?,
                MemoryAction::Notes {
                    history,
                    undo,
                    pending,
                    accept,
                    reject,
                } => {
                    use commands::memory::NotesAction;
                    let action = match (history, undo, pending, accept, reject) {
                        (true, ..) => NotesAction::History,
                        (_, true, ..) => NotesAction::Undo,
                        (_, _, true, ..) => NotesAction::Pending,
                        (_, _, _, Some(id), _) => NotesAction::Accept(id),
                        (_, _, _, _, Some(id)) => NotesAction::Reject(id),
                        _ => NotesAction::Show,
                    };
                    return answer(commands::memory::notes(&loaded, action, &mut out));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Capabilities { action }) => {
            let done = match action {
                CapabilityAction::List => commands::capabilities::list(&loaded, &mut out),
                CapabilityAction::Show { name, version } => {
                    commands::capabilities::show(&loaded, &name, version, &mut out)
                }
                CapabilityAction::Rm { name } => {
                    commands::capabilities::remove(&loaded, &name, &mut out)
                }
                CapabilityAction::Pin { name, off } => {
                    commands::capabilities::pin(&loaded, &name, !off, &mut out)
                }
            };
            answer(done)
        }
        Some(Command::Skills { action }) => {
            let done = match action {
                SkillAction::List => {
                    commands::skills::list(&loaded, &mut out, &mut std::io::stderr())
                }
                SkillAction::Show { name } => commands::skills::show(&loaded, &name, &mut out),
                SkillAction::Verify { name } => {
                    let name = name.as_deref();
                    match block_on(commands::skills::verify(&loaded, name, &mut out))? {
                        Ok(true) => Ok(()),
                        Ok(false) => return Ok(ExitCode::from(1)),
                        Err(error) => Err(error),
                    }
                }
                SkillAction::Pin { name, off } => {
                    commands::skills::pin(&loaded, &name, !off, &mut out)
                }
                SkillAction::Rm { name } => commands::skills::remove(&loaded, &name, &mut out),
                SkillAction::Drafts => commands::skill_drafts::drafts(&loaded, &mut out),
                SkillAction::Accept { name } => {
                    commands::skill_drafts::accept(&loaded, &name, &mut out)
                }
                SkillAction::Reject { name } => {
                    commands::skill_drafts::reject(&loaded, &name, &mut out)
                }
            };
            answer(done)
        }
        Some(Command::Mcp { action }) => {
            let McpAction::List { tools } = action;
            block_on(commands::mcp::list(&loaded, tools, &mut out))??;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Serve {
            listen,
            tls_cert,
            tls_key,
            client_ca,
        }) => {
            let tls = match (tls_cert, tls_key) {
                (Some(cert), Some(key)) => Some(mnemo::gateway::tls::TlsFiles {
                    cert,
                    key,
                    client_ca,
                }),
                _ => None,
            };
            let options = mnemo::serve::ServeOptions {
                gateway: mnemo::gateway::GatewayOptions {
                    listen,
                    tls,
                    jobs_changed: None,
                    searcher: None,
                    telegram_paired: None,
                },
                cli: overrides.clone(),
            };
            let stop = block_on(mnemo::serve::serve(loaded, options))??;
            eprintln!("mnemo serve: stopped by {}", stop.name());
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Status) => {
            block_on(commands::status::status(&loaded, &mut out))??;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Telegram { action }) => answer(match action {
            TelegramAction::Pair { code } => {
                block_on(commands::telegram::pair(&loaded, &code, &mut out))?
            }
            TelegramAction::List => commands::telegram::list(&loaded, &mut out),
            TelegramAction::Unpair { chat } => commands::telegram::unpair(&loaded, chat, &mut out),
        }),
        Some(Command::Schedule { action }) => answer(match action {
            ScheduleAction::List => commands::schedules::list(&loaded, &mut out),
            ScheduleAction::Rm { id } => commands::schedules::remove(&loaded, id, &mut out),
        }),
        Some(Command::Dream) => {
            block_on(commands::dream::dream(&loaded, &overrides, &mut out))??;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Doctor) => {
            let healthy = block_on(commands::doctor::doctor(&loaded, &overrides, &mut out))??;
            Ok(if healthy {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Some(Command::Trust { revoke, list }) => {
            let dirs = &loaded.dirs;
            if list {
                commands::trust::list(dirs, &mut out)?;
            } else if revoke {
                commands::trust::revoke(dirs, &loaded.workspace, &mut out)?;
            } else {
                commands::trust::trust(dirs, &loaded.workspace, &loaded.sources, &mut out)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Attach { session, url, tls }) => {
            let data = loaded
                .dirs
                .data
                .clone()
                .context("mnemo has no data directory")?;
            let start = mnemo::tui::TuiStart::Session(match session {
                Some(id) => SessionChoice::Resume(id),
                None => SessionChoice::Continue,
            });
            // The connection's tasks live on the runtime the TUI runs on.
            let stopped = block_on(async {
                let files = tls.files();
                let client =
                    mnemo::gateway::client::GatewayClient::connect(&data, target(&url, &files))
                        .await?;
                let host: Arc<dyn HostApi> = Arc::new(client);
                anyhow::Ok(mnemo::tui::run(Arc::new(loaded), overrides, start, host).await?)
            })??;
            Ok(stopped.map_or(ExitCode::SUCCESS, |stop| ExitCode::from(stop.exit_code())))
        }
        // `main` runs it before the configuration is read; this arm completes the match.
        Some(Command::SandboxExec { spec }) => Ok(sandbox_exec(&spec)),
        Some(Command::Acp { host }) => {
            // The protocol owns stdout: holding its lock here would stall every message.
            drop(out);
            block_on(async {
                let loaded = Arc::new(loaded);
                let host = session_host(&host, &loaded).await?;
                anyhow::Ok(mnemo::acp::serve(host, loaded, overrides).await?)
            })??;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Run {
            prompt,
            json,
            images,
            plan,
            approve_plan,
            host,
        }) => {
            let prompt = match prompt {
                Some(prompt) => prompt,
                None if approve_plan => String::new(),
                None => {
                    let mut text = String::new();
                    std::io::stdin()
                        .read_to_string(&mut text)
                        .context("cannot read the prompt from stdin")?;
                    text
                }
            };
            if prompt.trim().is_empty() && !approve_plan {
                anyhow::bail!("empty prompt: pass it as an argument or on stdin");
            }
            let cwd = std::env::current_dir().context("cannot read the working directory")?;
            let images = mnemo::llm::image_attach::for_run(&prompt, &images, &cwd)
                .map_err(anyhow::Error::msg)?;
            let input = Op::UserInput {
                text: prompt.clone(),
                images,
            };
            let opening = match (plan, approve_plan) {
                (_, true) => vec![Op::ApprovePlan { plan: None }],
                (true, false) => vec![Op::SetPlanMode { on: true }, input],
                (false, false) => vec![input],
            };
            let mode = if json {
                OutputMode::Json
            } else {
                OutputMode::Text
            };
            let report = block_on(async {
                let loaded = Arc::new(loaded);
                let host = session_host(&host, &loaded).await?;
                let options = mnemo::host::OpenOptions {
                    approval_mode: None,
                    questions: false,
                    delivery: mnemo::host::Delivery::Wait,
                };
                let attached = match host.open(&loaded, &overrides, choice, options).await {
                    Ok(attached) => attached,
                    // The prompt must not be lost with the session it could not reach.
                    Err(busy @ host::LaunchError::Session(StoreError::SessionBusy { .. })) => {
                        anyhow::bail!("{busy}. Your prompt was not sent:\n{prompt}")
                    }
                    Err(other) => return Err(other.into()),
                };
                let id = attached.session.clone();
                let mut err = std::io::stderr();
                let report = run_prompt(attached, opening, mode, &mut out, &mut err).await?;
                host.stop(&id, std::time::Duration::from_secs(10)).await;
                anyhow::Ok(report)
            })??;
            match &report.message {
                _ if report.exit_code() == 0 => {}
                // Printed already as the turn's error.
                Some(_) if report.shown => {}
                Some(reason) => eprintln!("mnemo: {reason}"),
                None => eprintln!("mnemo: turn ended: {:?}", report.status),
            }
            Ok(ExitCode::from(report.exit_code() as u8))
        }
        None => {
            // `--resume` without an id opens the picker of this directory's sessions.
            let start = match cli.resume.resume.as_deref() {
                Some("") => mnemo::tui::TuiStart::Pick,
                _ => mnemo::tui::TuiStart::Session(choice),
            };
            let mut overrides = overrides;
            let questions = start_questions::ask(
                loaded,
                &mut overrides,
                &mut std::io::stdin().lock(),
                &mut std::io::stderr(),
            )?;
            let loaded = match questions {
                start_questions::Outcome::Start(loaded) => *loaded,
                start_questions::Outcome::Quit => return Ok(ExitCode::from(2)),
            };
            let loaded = Arc::new(loaded);
            let host = mnemo::host::LocalHost::new(
                mnemo::host::SessionHost::in_process_only(),
                loaded.clone(),
            );
            let host: Arc<dyn HostApi> = Arc::new(host);
            let stopped = block_on(mnemo::tui::run(loaded, overrides, start, host))??;
            Ok(stopped.map_or(ExitCode::SUCCESS, |stop| ExitCode::from(stop.exit_code())))
        }
    }
}
