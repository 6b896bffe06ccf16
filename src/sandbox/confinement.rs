//! What confines a session's commands and file tools besides the policy: the `[sandbox]`
//! config section, and the value built from it once per launch. It says which environment
//! variables pass, which secret locations (and mnemo's own directories) are hidden, and how many
//! processes and how much memory one command may use.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::domains::DomainList;
use super::env_allow::EnvPolicy;
use super::policy::{SandboxConfig, SandboxPolicy};

/// Processes (threads count too) one command may have at once, unless configured.
pub const DEFAULT_MAX_PROCESSES: u32 = 2048;

/// The `[sandbox]` config section.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxSection {
    pub policy: SandboxPolicy,
    /// Whether sandboxed commands reach the network.
    pub network: bool,
    /// Environment variables commands see beyond the built-in allow-list: names, or prefixes
    /// ending in `*`.
    pub env_allow: Vec<String>,
    /// Files and directories hidden from commands and refused by the file tools; `~/` is the
    /// home directory.
    pub deny_read: Vec<String>,
    /// Processes and threads one command may run at once.
    pub max_processes: u32,
    /// Memory one command may use, in MiB; 0 means half of the machine's memory.
    pub max_memory_mb: u64,
    /// Domains commands and `web_fetch` reach through mnemo's filtering proxy while the network
    /// is otherwise off (`crates.io`, `*.pypi.org`).
    pub allow_domains: DomainList,
    /// Set by the loader, never read from a file: the key variables of every configured model.
    #[serde(skip)]
    pub key_vars: Vec<String>,
    /// Set by the loader: mnemo's config and data directories, hidden like secrets.
    #[serde(skip)]
    pub own_dirs: Vec<PathBuf>,
    /// Set by the loader: the database file when it lives outside the data directory; it is
    /// hidden with every file SQLite and mnemo keep beside it.
    #[serde(skip)]
    pub stores: Vec<PathBuf>,
}

impl Default for SandboxSection {
    fn default() -> Self {
        Self {
            policy: SandboxPolicy::default(),
            network: false,
            env_allow: Vec::new(),
            deny_read: Vec::new(),
            max_processes: DEFAULT_MAX_PROCESSES,
            max_memory_mb: 0,
            allow_domains: DomainList::default(),
            key_vars: Vec::new(),
            own_dirs: Vec::new(),
            stores: Vec::new(),
        }
    }
}

impl SandboxSection {
    /// The policy and network choice, which approvals and escalations adjust per command.
    pub fn config(&self) -> SandboxConfig {
        SandboxConfig {
            policy: self.policy,
            network: self.network,
        }
    }
}

/// How much one command may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    pub max_processes: u32,
    pub max_memory_bytes: u64,
}

impl Limits {
    fn from_section(section: &SandboxSection) -> Self {
        let max_memory_bytes = match section.max_memory_mb {
            0 => physical_memory().map_or(8 << 30, |bytes| bytes / 2),
            mb => mb.saturating_mul(1 << 20),
        };
        Self {
            max_processes: section.max_processes.max(1),
            max_memory_bytes,
        }
    }

    pub fn memory_mb(&self) -> u64 {
        self.max_memory_bytes >> 20
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self::from_section(&SandboxSection::default())
    }
}

fn physical_memory() -> Option<u64> {
    // SAFETY: sysconf has no preconditions; a negative answer means unknown.
    let (pages, size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    let pages = u64::try_from(pages).ok()?;
    let size = u64::try_from(size).ok()?;
    Some(pages.saturating_mul(size))
}

/// The confinement of one launch: built once, shared by its sandboxes and file tools (and
/// handed whole to `mnemo sandbox-exec`, see `reentry`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Confinement {
    /// Absolute paths (canonical where they exist) hidden from commands and file tools.
    hidden: Vec<PathBuf>,
    /// Database files (canonical folder) hidden with their companions, see [`store_file`].
    stores: Vec<PathBuf>,
    pub env: EnvPolicy,
    pub limits: Limits,
    /// The configured `allow_domains`.
    pub domains: DomainList,
}

impl Default for Confinement {
    /// The built-in deny list and allow-list, without a config.
    fn default() -> Self {
        Self::from_section(&SandboxSection {
            deny_read: DEFAULT_DENY_READ.iter().map(|s| s.to_string()).collect(),
            ..SandboxSection::default()
        })
    }
}

/// The secret locations hidden unless the user's config says otherwise (the built-in config
/// lists the same, so `mnemo config` shows them).
pub const DEFAULT_DENY_READ: &[&str] = &[
    "~/.ssh",
    "~/.gnupg",
    "~/.aws",
    "~/.azure",
    "~/.config/gcloud",
    "~/.kube",
    "~/.docker",
    "~/.config/gh",
    "~/.config/hub",
    "~/.git-credentials",
    "~/.netrc",
    "~/.npmrc",
    "~/.pypirc",
    "~/.cargo/credentials",
    "~/.cargo/credentials.toml",
    "~/.pgpass",
    "~/.my.cnf",
    "~/.vault-token",
    "~/.terraform.d",
    "~/.password-store",
    "~/.local/share/keyrings",
    "~/.mozilla",
    "~/.config/google-chrome",
    "~/.config/chromium",
];

impl Confinement {
    pub fn from_section(section: &SandboxSection) -> Self {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let mut hidden: Vec<PathBuf> = Vec::new();
        let entries = section.deny_read.iter().filter_map(|entry| {
            let path = match entry.strip_prefix("~/") {
                Some(rest) => home.as_ref()?.join(rest),
                None => PathBuf::from(entry),
            };
            path.is_absolute().then_some(path)
        });
        for path in entries.chain(section.own_dirs.iter().cloned()) {
            let path = std::fs::canonicalize(&path).unwrap_or(path);
            if !hidden.contains(&path) {
                hidden.push(path);
            }
        }
        let stores = section
            .stores
            .iter()
            .filter_map(|db| {
                let db = std::path::absolute(db).ok()?;
                let name = db.file_name()?.to_owned();
                let dir = db.parent()?;
                Some(
                    std::fs::canonicalize(dir)
                        .unwrap_or(dir.to_path_buf())
                        .join(name),
                )
            })
            .collect();
        Self {
            hidden,
            stores,
            env: EnvPolicy {
                extra: section.env_allow.clone(),
                never: section.key_vars.clone(),
            },
            limits: Limits::from_section(section),
            domains: section.allow_domains.clone(),
        }
    }

    /// Every hidden path, existing or not.
    pub fn hidden(&self) -> &[PathBuf] {
        &self.hidden
    }

    /// Every hidden path that exists now: the hidden paths, and each database with the files
    /// beside it (its write-ahead log, shared memory, journal, piece files), which come and go.
    pub fn hidden_now(&self) -> Vec<PathBuf> {
        let mut now = self.hidden.clone();
        for db in &self.stores {
            let (Some(dir), Some(name)) = (db.parent(), db.file_name()) else {
                continue;
            };
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            let mut files: Vec<PathBuf> = entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|path| path.file_name().is_some_and(|f| store_file(name, f)))
                .filter(|path| !now.contains(path))
                .collect();
            files.sort();
            now.extend(files);
        }
        now
    }

    /// The hidden path that covers `path` (absolute, symlinks resolved), if any.
    pub fn hiding(&self, path: &Path) -> Option<&Path> {
        let store = self.stores.iter().find(|db| {
            db.parent() == path.parent()
                && match (db.file_name(), path.file_name()) {
                    (Some(name), Some(file)) => store_file(name, file),
                    _ => false,
                }
        });
        self.hidden
            .iter()
            .find(|hidden| path.starts_with(hidden))
            .or(store)
            .map(PathBuf::as_path)
    }
}

/// Whether `file` is the database called `db` or one of the files kept beside it.
fn store_file(db: &std::ffi::OsStr, file: &std::ffi::OsStr) -> bool {
    let (Some(db), Some(file)) = (db.to_str(), file.to_str()) else {
        return db == file;
    };
    match file.strip_prefix(db) {
        Some("" | "-wal" | "-shm" | "-journal") => true,
        Some(rest) => rest.starts_with(".pieces-"),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_relative_entries_and_own_dirs_are_hidden_and_relative_ones_ignored() {
        let Some(home) = std::env::var_os("HOME").map(PathBuf::from) else {
            return;
        };
        let section = SandboxSection {
            deny_read: vec!["~/.ssh".into(), "relative/path".into(), "/srv/keys".into()],
            own_dirs: vec![PathBuf::from("/var/lib/mnemo-test")],
            ..SandboxSection::default()
        };
        let confinement = Confinement::from_section(&section);
        let ssh = std::fs::canonicalize(home.join(".ssh")).unwrap_or(home.join(".ssh"));
        assert_eq!(
            confinement.hidden(),
            [
                ssh.clone(),
                PathBuf::from("/srv/keys"),
                PathBuf::from("/var/lib/mnemo-test")
            ]
        );
        assert_eq!(
            confinement.hiding(&ssh.join("id_ed25519")),
            Some(ssh.as_path())
        );
        assert_eq!(confinement.hiding(Path::new("/srv/keysmith")), None);
    }

    #[test]
    fn a_database_is_hidden_with_every_file_beside_it() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let base = dir.path().canonicalize()?;
        let db = base.join("store.db");
        for file in [
            "store.db",
            "store.db-wal",
            "store.db-shm",
            "store.db.pieces-m",
            "notes",
        ] {
            std::fs::write(base.join(file), "x")?;
        }
        let section = SandboxSection {
            stores: vec![db.clone()],
            ..SandboxSection::default()
        };
        let confinement = Confinement::from_section(&section);
        for file in [
            "store.db",
            "store.db-wal",
            "store.db-shm",
            "store.db-journal",
            "store.db.pieces-m",
            "store.db.pieces-m.lock",
        ] {
            assert_eq!(
                confinement.hiding(&base.join(file)),
                Some(db.as_path()),
                "{file}"
            );
        }
        for file in ["notes", "store.dbx", "other/store.db-wal"] {
            assert_eq!(confinement.hiding(&base.join(file)), None, "{file}");
        }
        let now = confinement.hidden_now();
        let names: Vec<_> = now.iter().filter_map(|p| p.file_name()).collect();
        assert_eq!(
            names,
            [
                "store.db",
                "store.db-shm",
                "store.db-wal",
                "store.db.pieces-m"
            ]
        );
        Ok(())
    }

    #[test]
    fn memory_limit_defaults_to_half_the_machine() {
        let limits = Limits::default();
        let half = physical_memory().map_or(8 << 30, |b| b / 2);
        assert_eq!(limits.max_memory_bytes, half);
        let section = SandboxSection {
            max_memory_mb: 512,
            max_processes: 0,
            ..SandboxSection::default()
        };
        let limits = Limits::from_section(&section);
        assert_eq!((limits.max_processes, limits.memory_mb()), (1, 512));
    }
}
