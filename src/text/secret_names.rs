//! Which variable names hold secrets: the sandbox never passes them to commands, and the
//! scrubber removes their values from text that is kept.

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
    "_KEY",
    "_PAT",
    "_DSN",
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
    "PGPASSWORD",
    "DATABASE_URL",
    "SSH_AUTH_SOCK",
    "GPG_AGENT_INFO",
    "DBUS_SESSION_BUS_ADDRESS",
    "DOCKER_HOST",
];

/// Whether a variable of this name looks like a secret (case-insensitive): a pattern of the
/// sandbox's environment allow-list never lets such a name through.
pub fn is_secret(name: &str) -> bool {
    let name = name.to_ascii_uppercase();
    SECRET_NAMES.contains(&name.as_str())
        || SECRET_PREFIXES.iter().any(|p| name.starts_with(p))
        || SECRET_SUFFIXES.iter().any(|s| name.ends_with(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_looking_names_are_recognised() {
        for name in [
            "OPENAI_API_KEY",
            "openrouter_api_key",
            "GITHUB_TOKEN",
            "STRIPE_KEY",
            "GH_PAT",
            "PGPASSWORD",
            "DATABASE_URL",
            "AWS_PROFILE",
            "SSH_AUTH_SOCK",
        ] {
            assert!(is_secret(name), "{name} should look secret");
        }
        for name in ["PATH", "KEYBOARD", "TOKENIZERS_PARALLELISM", "PASSENGER"] {
            assert!(!is_secret(name), "{name} should not look secret");
        }
    }
}
