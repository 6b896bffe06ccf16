//! The environment a sandboxed command gets. mnemo itself holds API keys and the user's shell
//! holds more secrets (`DATABASE_URL`, `PGPASSWORD`, cloud credentials) than any name-based
//! filter can know, so commands get an environment built from an allow-list: the variables
//! programs need to find their tools, locale and terminal, plus what the user's own config adds
//! with `[sandbox] env_allow`. The key variables of configured models are never passed, even
//! when allowed.

use std::ffi::{OsStr, OsString};

use crate::text::is_secret;

/// What every command may see: search paths, identity, locale, terminal, and where toolchains
/// live. `LC_*` and other entries ending in `*` are prefixes.
pub const BASE_ALLOW: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "HOSTNAME",
    "TMPDIR",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TZ",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "EDITOR",
    "VISUAL",
    "PAGER",
    "CI",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "GOPATH",
    "GOROOT",
    "GOCACHE",
    "JAVA_HOME",
    "PYENV_ROOT",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "NVM_DIR",
    "NODE_PATH",
];

/// Which variables pass into commands.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EnvPolicy {
    /// Names or `PREFIX*` patterns from the user's `[sandbox] env_allow`.
    pub extra: Vec<String>,
    /// Never passed: the key variables of every configured model.
    pub never: Vec<String>,
}

impl EnvPolicy {
    /// Whether `name` may reach a command. A name matched only through a pattern must not
    /// look like a secret either; an exact name the user listed passes as listed.
    pub fn allows(&self, name: &str) -> bool {
        if self.never.iter().any(|never| never == name) {
            return false;
        }
        let matches = |entry: &str| match entry.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix) && !is_secret(name),
            None => entry == name,
        };
        BASE_ALLOW.iter().any(|entry| matches(entry)) || self.extra.iter().any(|e| matches(e))
    }

    /// The variables of `vars` that pass, in their order. A name that is not valid UTF-8 is
    /// dropped, since it cannot be checked.
    pub fn filter<I, K, V>(&self, vars: I) -> Vec<(OsString, OsString)>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        vars.into_iter()
            .filter(|(name, _)| name.as_ref().to_str().is_some_and(|n| self.allows(n)))
            .map(|(name, value)| (name.as_ref().to_owned(), value.as_ref().to_owned()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;

    fn names(policy: &EnvPolicy, vars: &[(&str, &str)]) -> Vec<String> {
        policy
            .filter(vars.iter().copied())
            .into_iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn only_allowed_variables_pass_whatever_their_names_look_like() {
        let vars = [
            ("PATH", "/bin"),
            ("HOME", "/home/u"),
            ("LC_ALL", "C"),
            ("LLM_KEY", "k"),
            ("STRIPE_KEY", "sk"),
            ("OPENAI_KEY", "sk"),
            ("PGPASSWORD", "p"),
            ("DATABASE_URL", "postgres://u:p@h/db"),
            ("GH_PAT", "ghp"),
            ("ANTHROPIC_API_KEY", "sk-ant"),
            ("SOMETHING_HARMLESS", "x"),
        ];
        assert_eq!(
            names(&EnvPolicy::default(), &vars),
            ["PATH", "HOME", "LC_ALL"]
        );
    }

    #[test]
    fn the_users_allow_list_adds_names_and_patterns_but_never_model_keys() {
        let policy = EnvPolicy {
            extra: vec!["NPM_TOKEN".into(), "MYAPP_*".into(), "LLM_KEY".into()],
            never: vec!["LLM_KEY".into()],
        };
        let vars = [
            ("NPM_TOKEN", "t"),
            ("MYAPP_MODE", "dev"),
            ("MYAPP_SECRET", "s"),
            ("LLM_KEY", "k"),
        ];
        assert_eq!(names(&policy, &vars), ["NPM_TOKEN", "MYAPP_MODE"]);
    }

    #[test]
    fn undecodable_names_are_dropped() {
        let bad = OsStr::from_bytes(b"PATH\xff").to_owned();
        let vars = vec![(bad, OsString::from("v")), ("PATH".into(), "/bin".into())];
        let kept: Vec<_> = EnvPolicy::default()
            .filter(vars)
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(kept, [OsString::from("PATH")]);
    }
}
