//! What `mnemo serve` says when it starts: what it serves, where it logs, how to stop it. A
//! person who started it in a terminal (or reads `journalctl`) knows at once what runs.

use std::path::Path;

use crate::gateway::Listen;

/// What the daemon found to serve at its start.
pub struct Serving<'a> {
    pub pid: u32,
    pub data_dir: &'a Path,
    pub log: &'a Path,
    pub heartbeats: usize,
    pub schedules: usize,
    /// The distinct workspaces the heartbeats and schedules run in.
    pub workspaces: usize,
    pub listen: &'a [Listen],
    pub tls: bool,
    /// Whether the Telegram channel runs; `enabled` says whether the config asked for it.
    pub telegram: bool,
    pub telegram_enabled: bool,
    /// Started by systemd (`INVOCATION_ID` set).
    pub systemd: bool,
}

/// The start lines.
pub fn banner(s: &Serving<'_>) -> String {
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let gateway: Vec<String> = s
        .listen
        .iter()
        .map(|listen| match listen {
            Listen::Unix(path) => format!("socket {}", path.display()),
            Listen::Tcp(addr) => format!("{addr}{}", if s.tls { " (TLS)" } else { "" }),
        })
        .collect();
    let telegram = match (s.telegram, s.telegram_enabled) {
        (true, _) => "on".to_string(),
        (false, true) => "off: it could not start (the reason is in the log)".into(),
        (false, false) => "off ([telegram] enabled = true turns it on)".into(),
    };
    let stop = match s.systemd {
        true => "systemctl --user stop mnemo".to_string(),
        false => format!("Ctrl+C, or kill {}", s.pid),
    };
    format!(
        "mnemo serve {version} (pid {pid})\n  \
         data      {data}\n  \
         runs      {beats} and {schedules} in {workspaces}\n  \
         gateway   {gateway}\n  \
         telegram  {telegram}\n  \
         log       {log}\n  \
         stop      {stop}",
        version = env!("CARGO_PKG_VERSION"),
        pid = s.pid,
        data = s.data_dir.display(),
        beats = plural(s.heartbeats, "heartbeat", "heartbeats"),
        schedules = plural(s.schedules, "schedule", "schedules"),
        workspaces = plural(s.workspaces, "workspace", "workspaces"),
        gateway = gateway.join(", "),
        log = s.log.display(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_lines_say_what_runs_where_it_logs_and_how_to_stop() {
        let listen = [
            Listen::Unix("/d/gateway.sock".into()),
            Listen::Tcp(([127, 0, 0, 1], 7777).into()),
        ];
        let mut serving = Serving {
            pid: 4242,
            data_dir: Path::new("/d"),
            log: Path::new("/d/serve.log"),
            heartbeats: 1,
            schedules: 3,
            workspaces: 2,
            listen: &listen,
            tls: true,
            telegram: false,
            telegram_enabled: false,
            systemd: false,
        };
        let text = banner(&serving);
        for line in [
            "  runs      1 heartbeat and 3 schedules in 2 workspaces",
            "  gateway   socket /d/gateway.sock, 127.0.0.1:7777 (TLS)",
            "  telegram  off ([telegram] enabled = true turns it on)",
            "  log       /d/serve.log",
            "  stop      Ctrl+C, or kill 4242",
        ] {
            assert!(text.lines().any(|l| l == line), "{line}\n{text}");
        }
        serving.systemd = true;
        serving.telegram = true;
        let text = banner(&serving);
        assert!(
            text.contains("stop      systemctl --user stop mnemo"),
            "{text}"
        );
        assert!(text.contains("telegram  on\n"), "{text}");
    }
}
