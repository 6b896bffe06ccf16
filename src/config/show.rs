//! `mnemo config`: the resolved configuration and, per model, whether its key is available.
//! Key values are never printed; only the names of the variables that hold them.

use std::fmt::Write;

use super::{Config, ConfigSources, KeyStatus, select};

pub fn render(
    config: &Config,
    sources: &ConfigSources,
    env: &dyn Fn(&str) -> Option<String>,
) -> String {
    let mut out = String::from("# layers read (later wins): built-in defaults");
    for file in &sources.files {
        let _ = write!(out, ", {}", file.display());
    }
    out.push('\n');
    if let Some(warning) = sources.ignored_warning() {
        let _ = writeln!(out, "# {warning}");
    }
    out.push('\n');
    out.push_str(&toml::to_string(config).unwrap_or_else(|e| format!("# cannot render: {e}\n")));
    out.push_str("\n# API keys (values are never shown)\n");
    for name in config.models.keys() {
        let Ok(model) = select::named(config, name) else {
            continue;
        };
        let status = match model.key_status(env) {
            KeyStatus::NotNeeded => "no key needed".to_string(),
            KeyStatus::Available(var) => format!("key available in {var}"),
            KeyStatus::Missing(var) if model.is_local() => {
                format!("local; {var} not set (optional)")
            }
            KeyStatus::Missing(var) => format!("missing: set {var}"),
        };
        let marker = if *name == config.default_model {
            " (default)"
        } else {
            ""
        };
        let _ = writeln!(out, "#   {name:<16} {status}{marker}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_key_availability_without_values() {
        let (config, sources) = crate::config::load(
            &crate::config::Dirs {
                config: None,
                data: None,
            },
            std::path::Path::new("/nonexistent-workspace"),
            &|_| None,
            &Default::default(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let secret = "sk-ant-very-secret";
        let env = |name: &str| (name == "ANTHROPIC_API_KEY").then(|| secret.to_string());
        let text = render(&config, &sources, &env);
        assert!(!text.contains(secret));
        assert!(
            text.contains("claude-sonnet    key available in ANTHROPIC_API_KEY (default)"),
            "{text}"
        );
        assert!(
            text.contains("gpt              missing: set OPENAI_API_KEY"),
            "{text}"
        );
        assert!(text.contains("ollama           no key needed"), "{text}");
        assert!(text.contains("[models.deepseek]"), "{text}");
    }
}
