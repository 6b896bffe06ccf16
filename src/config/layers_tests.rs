use std::collections::HashMap;

use super::*;
use crate::config::{ProviderKind, resolve_model};

struct Fixture {
    _root: tempfile::TempDir,
    dirs: Dirs,
    workspace: PathBuf,
}

fn fixture(user: Option<&str>, project: Option<&str>) -> Fixture {
    let root = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let config_dir = root.path().join("config");
    let workspace = root.path().join("ws");
    std::fs::create_dir_all(workspace.join(".mnemo")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::create_dir_all(&config_dir).unwrap_or_else(|e| panic!("{e}"));
    if let Some(text) = user {
        std::fs::write(config_dir.join("config.toml"), text).unwrap_or_else(|e| panic!("{e}"));
    }
    if let Some(text) = project {
        std::fs::write(workspace.join(".mnemo/config.toml"), text)
            .unwrap_or_else(|e| panic!("{e}"));
    }
    Fixture {
        dirs: Dirs {
            config: Some(config_dir),
            data: None,
        },
        workspace,
        _root: root,
    }
}

fn load_with(
    fx: &Fixture,
    env: &[(&str, &str)],
    cli: &CliOverrides,
) -> Result<(Config, ConfigSources), ConfigError> {
    let env: HashMap<String, String> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    load(&fx.dirs, &fx.workspace, &|k| env.get(k).cloned(), cli)
}

#[test]
fn shipped_defaults_load_and_every_model_resolves() {
    let fx = fixture(None, None);
    let (config, _) =
        load_with(&fx, &[], &CliOverrides::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config.agent.max_steps, 50);
    assert_eq!(config.agent.tool_timeout_secs, 120);
    for name in ["claude-sonnet", "gpt", "deepseek", "qwen", "kimi", "ollama"] {
        let cli = CliOverrides {
            model: Some(name.into()),
            ..Default::default()
        };
        let model = resolve_model(&config, &cli).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!model.model.is_empty(), "{name}");
        assert!(
            model.context_window > 0 && model.max_output_tokens > 0,
            "{name}"
        );
    }
    let ollama = resolve_model(
        &config,
        &CliOverrides {
            model: Some("ollama".into()),
            ..Default::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ollama.api_key_env, None);
    assert!(ollama.is_local());
}

#[test]
fn a_syntax_error_names_the_file_and_line() {
    let fx = fixture(
        Some("default_model = \"gpt\"\n[agent\nmax_steps = 3\n"),
        None,
    );
    let err = load_with(&fx, &[], &CliOverrides::default())
        .err()
        .unwrap_or_else(|| panic!("broken file accepted"))
        .to_string();
    assert!(err.contains("config.toml"), "{err}");
    assert!(err.contains("line 2"), "{err}");
}

#[test]
fn a_wrong_type_names_file_line_and_dotted_key() {
    let fx = fixture(None, Some("[agent]\n\nmax_steps = \"many\"\n"));
    let err = load_with(&fx, &[], &CliOverrides::default())
        .err()
        .unwrap_or_else(|| panic!("wrong type accepted"))
        .to_string();
    assert!(err.contains(".mnemo/config.toml"), "{err}");
    assert!(err.contains("line 3"), "{err}");
    assert!(err.contains("`agent.max_steps`"), "{err}");
}

#[test]
fn an_unknown_key_is_an_error_not_silently_ignored() {
    let fx = fixture(Some("[models.gpt]\nbase_ulr = \"http://x\"\n"), None);
    let err = load_with(&fx, &[], &CliOverrides::default())
        .err()
        .unwrap_or_else(|| panic!("typo accepted"))
        .to_string();
    assert!(err.contains("models.gpt.base_ulr"), "{err}");
}

#[test]
fn layers_apply_in_order_user_project_env_flags() {
    let fx = fixture(
        Some(
            "default_model = \"gpt\"\n[agent]\nmax_steps = 10\ntool_timeout_secs = 5\n\
             [models.gpt]\nbase_url = \"http://proxy.local/v1\"\n",
        ),
        Some("[agent]\nmax_steps = 20\n[models.gpt]\nmodel = \"gpt-proxy\"\n"),
    );
    let (config, sources) = load_with(&fx, &[("MNEMO_MAX_STEPS", "30")], &CliOverrides::default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config.agent.max_steps, 30);
    assert_eq!(config.agent.tool_timeout_secs, 5);
    assert_eq!(config.default_model, "gpt");
    assert_eq!(sources.files.len(), 2);
    // Partial overrides keep the rest of the shipped entry.
    let gpt = &config.models["gpt"];
    assert_eq!(gpt.base_url.as_deref(), Some("http://proxy.local/v1"));
    assert_eq!(gpt.model, "gpt-proxy");
    assert_eq!(gpt.api_key_env.as_deref(), Some("OPENAI_API_KEY"));

    let cli = CliOverrides {
        max_steps: Some(40),
        ..Default::default()
    };
    let (config, _) =
        load_with(&fx, &[("MNEMO_MAX_STEPS", "30")], &cli).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config.agent.max_steps, 40);
}

#[test]
fn a_bad_environment_value_is_reported_with_its_variable() {
    let fx = fixture(None, None);
    let err = load_with(
        &fx,
        &[("MNEMO_MAX_STEPS", "lots")],
        &CliOverrides::default(),
    )
    .err()
    .unwrap_or_else(|| panic!("accepted"))
    .to_string();
    assert!(
        err.contains("MNEMO_MAX_STEPS") && err.contains("lots"),
        "{err}"
    );
}

#[test]
fn a_new_model_without_its_id_names_the_file_that_defined_it() {
    let fx = fixture(Some("[models.mine]\nprovider = \"openai\"\n"), None);
    let err = load_with(&fx, &[], &CliOverrides::default())
        .err()
        .unwrap_or_else(|| panic!("accepted"))
        .to_string();
    assert!(
        err.contains("config.toml") && err.contains("models.mine.model"),
        "{err}"
    );
}

#[test]
fn unknown_model_lists_the_configured_ones() {
    let fx = fixture(None, None);
    let (config, _) =
        load_with(&fx, &[], &CliOverrides::default()).unwrap_or_else(|e| panic!("{e}"));
    let cli = CliOverrides {
        model: Some("gpt-9000".into()),
        ..Default::default()
    };
    let err = resolve_model(&config, &cli)
        .err()
        .unwrap_or_else(|| panic!("accepted"))
        .to_string();
    assert!(
        err.contains("gpt-9000") && err.contains("claude-sonnet"),
        "{err}"
    );
}

#[test]
fn ad_hoc_provider_flags_need_no_config_entry() {
    let fx = fixture(None, None);
    let (config, _) =
        load_with(&fx, &[], &CliOverrides::default()).unwrap_or_else(|e| panic!("{e}"));
    let cli = CliOverrides {
        model: Some("llama3".into()),
        provider: Some(ProviderKind::OpenAi),
        base_url: Some("http://127.0.0.1:8080/v1".into()),
        ..Default::default()
    };
    let model = resolve_model(&config, &cli).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(model.model, "llama3");
    assert_eq!(model.base_url, "http://127.0.0.1:8080/v1");
    assert_eq!(model.api_key_env.as_deref(), Some("OPENAI_API_KEY"));
    assert!(model.is_local());
    let no_id = CliOverrides {
        provider: Some(ProviderKind::Anthropic),
        ..Default::default()
    };
    assert!(resolve_model(&config, &no_id).is_err());
}

#[test]
fn a_number_out_of_range_from_the_environment_is_named_too() {
    let fx = fixture(None, None);
    let env = [("MNEMO_TOOL_TIMEOUT_SECS", "4000000000")];
    let message = load_with(&fx, &env, &CliOverrides::default())
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(message.contains("agent.tool_timeout_secs"), "{message}");
    assert!(message.contains("MNEMO_*"), "{message}");
}
