//! What several benches measure the same way.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The `p` quantile (0.0 to 1.0) of sorted durations.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(index).copied().unwrap_or_default()
}

/// The resident memory of process `pid`, in MiB.
pub fn rss_mib(pid: u32) -> Result<f64, Box<dyn std::error::Error>> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kib: f64 = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .ok_or("no VmRSS")?
        .parse()?;
    Ok(kib / 1024.0)
}

/// A `mnemo serve` the bench started on `dir` (config in `dir/cfg`, data in `dir/data`), with
/// the scripted model `script`; stopped with SIGTERM.
pub struct Daemon {
    child: std::process::Child,
    pub data: PathBuf,
}

impl Daemon {
    pub async fn start(
        dir: &Path,
        config: &str,
        script: &serde_json::Value,
        env: &[(&str, &str)],
    ) -> Result<Daemon, Box<dyn std::error::Error>> {
        let script_path = dir.join("script.json");
        std::fs::write(&script_path, script.to_string())?;
        let (cfg, data) = (dir.join("cfg"), dir.join("data"));
        std::fs::create_dir_all(&cfg)?;
        std::fs::write(cfg.join("config.toml"), config)?;
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_mnemo"))
            .args([
                "--model",
                &format!("scripted:{}", script_path.display()),
                "serve",
            ])
            .current_dir(dir)
            .env("MNEMO_CONFIG_DIR", &cfg)
            .env("MNEMO_DATA_DIR", &data)
            .envs(env.iter().copied())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()?;
        let daemon = Daemon { child, data };
        let socket = daemon.data.join("gateway.sock");
        let deadline = Instant::now() + Duration::from_secs(20);
        while !socket.exists() {
            if Instant::now() > deadline {
                return Err("mnemo serve did not start".into());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(daemon)
    }

    /// Its resident memory now, in MiB.
    pub fn rss_mib(&self) -> Result<f64, Box<dyn std::error::Error>> {
        rss_mib(self.child.id())
    }

    pub fn stop(mut self) -> Result<(), Box<dyn std::error::Error>> {
        // SAFETY: stops the daemon this bench started.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        self.child.wait()?;
        Ok(())
    }
}
