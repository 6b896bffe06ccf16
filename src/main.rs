//! The `mnemo` binary: parse flags, pick a front end. Everything else lives in the library.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};
use mnemo::config::{CliOverrides, ProviderKind};
use mnemo::headless::{OutputMode, run_prompt};
use mnemo::launch;

#[derive(Parser)]
#[command(name = "mnemo", version, about = "A terminal coding and ops assistant")]
struct Cli {
    /// A configured model name, `scripted:PATH`, or (with --provider) a wire model id.
    #[arg(long, global = true)]
    model: Option<String>,
    /// Use a model without a config entry: the provider family to speak.
    #[arg(long, global = true, value_enum)]
    provider: Option<ProviderArg>,
    /// API root for --provider (or to override the chosen model's).
    #[arg(long, global = true)]
    base_url: Option<String>,
    /// Environment variable that holds the API key ("" for none).
    #[arg(long, global = true)]
    api_key_env: Option<String>,
    /// Model calls allowed per turn.
    #[arg(long, global = true)]
    max_steps: Option<u32>,
    /// Workspace directory (default: the current directory).
    #[arg(long, short = 'C', global = true)]
    cd: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Clone, Copy, ValueEnum)]
enum ProviderArg {
    Anthropic,
    Openai,
}

#[derive(Subcommand)]
enum Command {
    /// Run one prompt without the TUI and print the reply.
    Run {
        /// The prompt; read from stdin when absent.
        prompt: Option<String>,
        /// Print every event as one JSON line.
        #[arg(long)]
        json: bool,
    },
    /// Print the resolved configuration and which models have a key.
    Config,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match real_main(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("mnemo: {err:#}");
            ExitCode::from(2)
        }
    }
}

fn real_main(cli: Cli) -> anyhow::Result<ExitCode> {
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
    };
    let loaded = launch::load_config(&workspace, &overrides)?;
    match cli.command {
        Some(Command::Config) => {
            let env = |name: &str| std::env::var(name).ok();
            print!(
                "{}",
                mnemo::config::show::render(&loaded.config, &loaded.sources, &env)
            );
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Run { prompt, json }) => {
            let prompt = match prompt {
                Some(prompt) => prompt,
                None => {
                    let mut text = String::new();
                    std::io::stdin()
                        .read_to_string(&mut text)
                        .context("cannot read the prompt from stdin")?;
                    text
                }
            };
            if prompt.trim().is_empty() {
                anyhow::bail!("empty prompt: pass it as an argument or on stdin");
            }
            let mode = if json {
                OutputMode::Json
            } else {
                OutputMode::Text
            };
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()?;
            let report = runtime.block_on(async {
                let session = launch::prepare_session(&loaded, &overrides).await?;
                let handle = mnemo::agent::spawn(session);
                let mut out = std::io::stdout().lock();
                let mut err = std::io::stderr();
                anyhow::Ok(run_prompt(handle, prompt, mode, &mut out, &mut err).await?)
            })?;
            if let Some(reason) = &report.message
                && report.exit_code() != 0
            {
                eprintln!("mnemo: {reason}");
            } else if report.exit_code() != 0 {
                eprintln!("mnemo: turn ended: {:?}", report.status);
            }
            Ok(ExitCode::from(report.exit_code() as u8))
        }
        None => {
            anyhow::bail!(
                "the interactive session is not built yet; use `mnemo run \"PROMPT\"` (see --help)"
            )
        }
    }
}
