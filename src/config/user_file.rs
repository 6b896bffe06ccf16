//! Writes the model a person chose in the set-up panel into their user config file: the
//! `[models.NAME]` entry of a local server and `default_model`. The rest of the file (other
//! settings, comments, layout) is kept; a key is never written, only where none is needed.

use std::io::Write;
use std::path::{Path, PathBuf};

/// A model on an OpenAI-compatible server, as the set-up panel found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedModel {
    pub base_url: String,
    /// The model id the server expects.
    pub model: String,
}

#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is not valid TOML ({message}); fix it, then choose again", .path.display())]
    Broken { path: PathBuf, message: String },
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Makes `name` the default model in `file`, first writing its entry when `served` is given
/// (replacing an entry of that name). The file and its directory are created when missing.
pub fn choose_model(
    file: &Path,
    name: &str,
    served: Option<&ServedModel>,
) -> Result<(), SaveError> {
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(source) => {
            return Err(SaveError::Read {
                path: file.to_path_buf(),
                source,
            });
        }
    };
    let broken = |message: String| SaveError::Broken {
        path: file.to_path_buf(),
        message,
    };
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e| broken(format!("{e}")))?;
    doc["default_model"] = toml_edit::value(name);
    if let Some(served) = served {
        let models = doc
            .entry("models")
            .or_insert_with(|| {
                let mut table = toml_edit::Table::new();
                table.set_implicit(true);
                toml_edit::Item::Table(table)
            })
            .as_table_mut()
            .ok_or_else(|| broken("`models` is not a table".into()))?;
        let mut entry = toml_edit::Table::new();
        entry["provider"] = toml_edit::value("openai");
        entry["base_url"] = toml_edit::value(served.base_url.as_str());
        entry["model"] = toml_edit::value(served.model.as_str());
        // The server needs no key: none is sent to it, not even OPENAI_API_KEY.
        entry["api_key_env"] = toml_edit::value("");
        models.insert(name, toml_edit::Item::Table(entry));
    }
    let text = doc.to_string();
    // Written only when mnemo will read it back.
    toml::from_str::<super::Config>(&text).map_err(|e| broken(e.message().to_string()))?;
    write_whole(file, &text)
}

/// Writes the file whole through a temporary file beside it, renamed into place.
fn write_whole(file: &Path, text: &str) -> Result<(), SaveError> {
    let error = |source| SaveError::Write {
        path: file.to_path_buf(),
        source,
    };
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent).map_err(error)?;
    }
    let temp = file.with_extension(format!("toml.{}", std::process::id()));
    let mut out = std::fs::File::create(&temp).map_err(error)?;
    out.write_all(text.as_bytes()).map_err(error)?;
    out.sync_all().map_err(error)?;
    std::fs::rename(&temp, file).map_err(error)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn served(model: &str) -> ServedModel {
        ServedModel {
            base_url: "http://127.0.0.1:8080/v1".into(),
            model: model.into(),
        }
    }

    fn load(dir: &Path) -> crate::config::Config {
        let dirs = crate::config::Dirs {
            config: Some(dir.to_path_buf()),
            data: None,
        };
        let (config, _) = crate::config::load(
            &dirs,
            Path::new("/nonexistent-workspace"),
            &|_| None,
            &Default::default(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        config
    }

    #[test]
    fn a_new_file_gets_the_entry_and_the_default() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let file = dir.path().join("mnemo").join("config.toml");
        choose_model(&file, "local", Some(&served("qwen"))).unwrap_or_else(|e| panic!("{e}"));
        let config = load(&dir.path().join("mnemo"));
        assert_eq!(config.default_model, "local");
        let model =
            crate::config::select::named(&config, "local").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(model.base_url, "http://127.0.0.1:8080/v1");
        assert_eq!(model.model, "qwen");
        assert_eq!(model.api_key_env, None);
    }

    #[test]
    fn an_existing_file_is_kept_and_a_second_choice_replaces_the_entry() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let file = dir.path().join("config.toml");
        let before = "# my settings\napproval = \"ask\"\n\n[agent]\nmax_steps = 7\n\n\
                      [models.mine]\nprovider = \"openai\"\nmodel = \"x\"\n";
        std::fs::write(&file, before).unwrap_or_else(|e| panic!("{e}"));
        choose_model(&file, "local", Some(&served("qwen"))).unwrap_or_else(|e| panic!("{e}"));
        choose_model(&file, "local", Some(&served("llama"))).unwrap_or_else(|e| panic!("{e}"));
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{e}"));
        assert!(text.starts_with("# my settings\n"), "{text}");
        assert_eq!(text.matches("[models.local]").count(), 1, "{text}");
        assert_eq!(text.matches("default_model").count(), 1, "{text}");
        assert!(!text.contains("qwen"), "{text}");
        let config = load(dir.path());
        assert_eq!(config.default_model, "local");
        assert_eq!(config.agent.max_steps, 7);
        assert!(config.models.contains_key("mine"));
        assert_eq!(config.models["local"].model, "llama");

        // A model the config already has only becomes the default.
        choose_model(&file, "claude-sonnet", None).unwrap_or_else(|e| panic!("{e}"));
        let config = load(dir.path());
        assert_eq!(config.default_model, "claude-sonnet");
        assert_eq!(config.models["local"].model, "llama");
    }

    #[test]
    fn a_broken_file_is_left_as_it_is() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let file = dir.path().join("config.toml");
        std::fs::write(&file, "approval = [oops\n").unwrap_or_else(|e| panic!("{e}"));
        let error = choose_model(&file, "local", Some(&served("qwen")))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("is not valid TOML"), "{error}");
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(text, "approval = [oops\n");
    }
}
