//! What a session lets commands touch, as one small value that config files, flags and (later)
//! approvals can all name: the policy (`read_only`, `workspace_write`, `full_access`) and whether
//! the network is reachable from inside the sandbox.

use std::fmt;

use serde::{Deserialize, Serialize};

/// How far commands may reach. Kebab-case spellings (`workspace-write`) are accepted too, so
/// config files and flags read the same.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
pub enum SandboxPolicy {
    /// Commands may read everything but write only in the session's scratch directory and
    /// their private `/tmp`; the file tools write nothing.
    #[serde(alias = "read-only")]
    #[value(alias = "read_only")]
    ReadOnly,
    /// Commands may also write in the workspace (not in its `.git/` through the file tools).
    #[default]
    #[serde(alias = "workspace-write")]
    #[value(alias = "workspace_write")]
    WorkspaceWrite,
    /// No sandbox at all: commands run as the user, with the network.
    #[serde(alias = "full-access")]
    #[value(alias = "full_access")]
    FullAccess,
}

impl SandboxPolicy {
    /// The spelling used in messages, flags and the issue text.
    pub fn label(self) -> &'static str {
        match self {
            SandboxPolicy::ReadOnly => "read-only",
            SandboxPolicy::WorkspaceWrite => "workspace-write",
            SandboxPolicy::FullAccess => "full-access",
        }
    }
}

impl fmt::Display for SandboxPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// The `[sandbox]` config section: `policy = "workspace_write"`, `network = false`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    pub policy: SandboxPolicy,
    /// Whether sandboxed commands reach the network (always true under full access).
    pub network: bool,
}

impl SandboxConfig {
    /// Whether commands run inside a sandbox at all.
    pub fn is_sandboxed(&self) -> bool {
        self.policy != SandboxPolicy::FullAccess
    }

    /// Whether commands reach the network.
    pub fn network_allowed(&self) -> bool {
        self.network || !self.is_sandboxed()
    }

    /// "workspace-write, network off": how the model and the user are told the rules.
    pub fn describe(&self) -> String {
        let network = if self.network_allowed() { "on" } else { "off" };
        format!("{}, network {network}", self.policy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[derive(Debug, Deserialize)]
    struct File {
        sandbox: SandboxConfig,
    }

    #[test]
    fn config_reads_snake_and_kebab_case_and_defaults_to_workspace_write_offline()
    -> Result<(), toml::de::Error> {
        let file: File = toml::from_str("[sandbox]\npolicy = \"read_only\"\nnetwork = true\n")?;
        assert_eq!(file.sandbox.policy, SandboxPolicy::ReadOnly);
        assert!(file.sandbox.network);
        let file: File = toml::from_str("[sandbox]\npolicy = \"full-access\"\n")?;
        assert_eq!(file.sandbox.policy, SandboxPolicy::FullAccess);
        let file: File = toml::from_str("[sandbox]\n")?;
        assert_eq!(file.sandbox, SandboxConfig::default());
        assert_eq!(file.sandbox.policy, SandboxPolicy::WorkspaceWrite);
        assert!(!file.sandbox.network_allowed());
        assert!(toml::from_str::<File>("[sandbox]\nnet = true\n").is_err());
        Ok(())
    }

    #[test]
    fn serializes_as_snake_case() -> Result<(), serde_json::Error> {
        let json = serde_json::to_string(&SandboxPolicy::WorkspaceWrite)?;
        assert_eq!(json, "\"workspace_write\"");
        Ok(())
    }

    #[test]
    fn flags_take_both_spellings() {
        for (text, policy) in [
            ("read-only", SandboxPolicy::ReadOnly),
            ("workspace_write", SandboxPolicy::WorkspaceWrite),
            ("full-access", SandboxPolicy::FullAccess),
        ] {
            assert_eq!(SandboxPolicy::from_str(text, false), Ok(policy));
        }
    }

    #[test]
    fn full_access_always_has_the_network() {
        let config = SandboxConfig {
            policy: SandboxPolicy::FullAccess,
            network: false,
        };
        assert!(config.network_allowed() && !config.is_sandboxed());
        assert_eq!(config.describe(), "full-access, network on");
        assert_eq!(
            SandboxConfig::default().describe(),
            "workspace-write, network off"
        );
    }
}
