//! The environment a sandboxed command inherits, minus secrets. mnemo itself holds API keys in
//! its environment; a command the model wrote must not be able to print or send them, nor reach
//! the user's cloud accounts, agents or session bus through inherited variables.

use std::ffi::{OsStr, OsString};

/// Names ending like this hold secrets (`OPENAI_API_KEY`, `GITHUB_TOKEN`, `DB_PASSWORD`, …).
const SECRET_SUFFIXES: &[&str] = &[
    "_API_KEY",
    "_APIKEY",
    "_KEY_ID",
    "_ACCESS_KEY",
    "_SECRET_KEY",
    "_PRIVATE_KEY",
    "_TOKEN",
    "_SECRET",
    "_PASSWORD",
    "_PASSWD",
    "_PASS",
    "_CREDENTIAL",
    "_CREDENTIALS",
    "_AUTH",
];

/// Names starting like this belong to cloud credential sets as a whole.
const SECRET_PREFIXES: &[&str] = &["AWS_", "AZURE_", "ARM_CLIENT_", "GOOGLE_", "GCLOUD_"];

/// Exact names: bare secrets, credential files and sockets of agents that sign or authenticate.
const SECRET_NAMES: &[&str] = &[
    "API_KEY",
    "APIKEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "CLOUDSDK_AUTH_ACCESS_TOKEN",
    "KUBECONFIG",
    "NETRC",
    "PGPASSFILE",
    "SSH_AUTH_SOCK",
    "GPG_AGENT_INFO",
    "DBUS_SESSION_BUS_ADDRESS",
    "DOCKER_HOST",
];

/// Whether a variable of this name must not reach a sandboxed command (case-insensitive).
pub fn is_secret(name: &str) -> bool {
    let name = name.to_ascii_uppercase();
    SECRET_NAMES.contains(&name.as_str())
        || SECRET_PREFIXES.iter().any(|p| name.starts_with(p))
        || SECRET_SUFFIXES.iter().any(|s| name.ends_with(s))
}

/// The variables to pass on: everything but secrets. A name that is not valid UTF-8 is dropped
/// too, since it cannot be checked.
pub fn scrub_env<I, K, V>(vars: I) -> Vec<(OsString, OsString)>
where
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<OsStr>,
    V: AsRef<OsStr>,
{
    vars.into_iter()
        .filter(|(name, _)| name.as_ref().to_str().is_some_and(|n| !is_secret(n)))
        .map(|(name, value)| (name.as_ref().to_owned(), value.as_ref().to_owned()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn api_keys_tokens_passwords_and_cloud_credentials_are_secret() {
        for name in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "openrouter_api_key",
            "GITHUB_TOKEN",
            "GH_TOKEN",
            "HF_TOKEN",
            "NPM_TOKEN",
            "CLIENT_SECRET",
            "DB_PASSWORD",
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "AWS_PROFILE",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "AZURE_CLIENT_SECRET",
            "AZURE_TENANT_ID",
            "SSH_AUTH_SOCK",
            "API_KEY",
        ] {
            assert!(is_secret(name), "{name} should be scrubbed");
        }
    }

    #[test]
    fn ordinary_variables_pass() {
        for name in [
            "PATH",
            "HOME",
            "LANG",
            "TERM",
            "CARGO_HOME",
            "RUSTUP_TOOLCHAIN",
            "KEYBOARD",
            "TOKENIZERS_PARALLELISM",
            "PASSENGER",
        ] {
            assert!(!is_secret(name), "{name} should be kept");
        }
    }

    #[test]
    fn scrub_keeps_order_and_drops_secrets_and_undecodable_names() {
        let bad_name = OsStr::from_bytes(b"X\xff").to_owned();
        let vars = vec![
            (OsString::from("PATH"), OsString::from("/bin")),
            (OsString::from("OPENAI_API_KEY"), OsString::from("sk-1")),
            (bad_name, OsString::from("v")),
            (OsString::from("HOME"), OsString::from("/home/u")),
        ];
        let kept: Vec<_> = scrub_env(vars).into_iter().map(|(k, _)| k).collect();
        assert_eq!(kept, [OsString::from("PATH"), OsString::from("HOME")]);
    }
}
