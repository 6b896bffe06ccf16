//! Secrets taken out of text that is kept for later: a private key block, the value of an
//! assignment whose name looks like a secret (`OPENAI_API_KEY=…`, `"password": "…"`), a
//! bearer token, and tokens of the well-known shapes (`sk-…`, `ghp_…`, `AKIA…`). The dream
//! scrubs what it reads from the archive and what it writes into the notes with it.

use super::is_secret;

/// What a secret is replaced with.
const REMOVED: &str = "[secret removed]";

/// Prefixes of provider tokens, and the shortest such token.
const TOKEN_PREFIXES: &[&str] = &[
    "sk-",
    "sk_live_",
    "sk_test_",
    "rk_live_",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "xoxa-",
    "xoxs-",
    "AKIA",
    "ASIA",
    "AIza",
    "hf_",
    "npm_",
    "pypi-",
];
const MIN_TOKEN_CHARS: usize = 20;

/// `text` with its secrets replaced by [`REMOVED`].
pub fn scrub_secrets(text: &str) -> String {
    let text = remove_private_keys(text);
    let mut out = String::with_capacity(text.len());
    for (index, line) in text.split('\n').enumerate() {
        if index > 0 {
            out.push('\n');
        }
        out.push_str(&scrub_line(line));
    }
    out
}

fn remove_private_keys(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("-----BEGIN") {
        let Some(header_end) = rest[start..].find("PRIVATE KEY-----") else {
            break;
        };
        let after_header = start + header_end + "PRIVATE KEY-----".len();
        out.push_str(&rest[..start]);
        out.push_str("[private key removed]");
        rest = match rest[after_header..].find("PRIVATE KEY-----") {
            Some(end) => &rest[after_header + end + "PRIVATE KEY-----".len()..],
            // No end line: everything after the header is the key.
            None => "",
        };
    }
    out.push_str(rest);
    out
}

/// Token characters are ASCII, so a cut between a token and anything else is a char boundary.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"_-.+/=~".contains(&b)
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')
}

/// One line: assignments to secret-looking names, bearer tokens and token shapes. Scanned
/// in place: a line may be megabytes long (a call's arguments).
fn scrub_line(line: &str) -> String {
    let bytes = line.as_bytes();
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    // Whether the word just read names a secret whose value comes next.
    let mut pending_secret = false;
    while i < bytes.len() {
        let start = i;
        if !is_token_byte(bytes[i]) {
            while i < bytes.len() && !is_token_byte(bytes[i]) {
                i += 1;
            }
            out.push_str(&line[start..i]);
            continue;
        }
        while i < bytes.len() && is_token_byte(bytes[i]) {
            i += 1;
        }
        let word = &line[start..i];
        // The `=` of `NAME = value` keeps the value pending.
        if word.bytes().all(|b| b == b'=') {
            out.push_str(word);
            continue;
        }
        // `NAME=value` in one word.
        if let Some((name, value)) = word.split_once('=')
            && secret_name(name)
            && !value.is_empty()
        {
            out.push_str(name);
            out.push('=');
            out.push_str(REMOVED);
        } else if (pending_secret && word.len() >= 4) || looks_like_token(word) {
            out.push_str(REMOVED);
        } else {
            out.push_str(word);
        }
        let bearer = word.eq_ignore_ascii_case("bearer");
        let separator = line[i..].trim_start_matches(['"', '\'', ' ']);
        pending_secret = bearer
            || (secret_name(word) && (separator.starts_with(':') || separator.starts_with('=')));
    }
    out
}

fn secret_name(name: &str) -> bool {
    let name = name.trim_start_matches("export").trim_matches(['"', '\'']);
    !name.is_empty()
        && name.chars().all(is_name_char)
        && (is_secret(name)
            || ["password", "passwd", "secret", "token", "api_key", "apikey"]
                .iter()
                .any(|s| name.to_ascii_lowercase().ends_with(s)))
}

fn looks_like_token(word: &str) -> bool {
    let word = word.trim_end_matches(['.', ',']);
    word.len() >= MIN_TOKEN_CHARS
        && TOKEN_PREFIXES.iter().any(|p| word.starts_with(p))
        && word.chars().any(|c| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_of_every_usual_shape_are_removed_and_the_rest_kept() {
        let text = "cat .env printed:\nOPENAI_API_KEY=sk-proj-abc123def456ghi789jkl\n\
            export GITHUB_TOKEN=ghp_0123456789abcdefghijABCDEFGHIJ\n\
            db_password: hunter2hunter2\nSTRIPE_SECRET_KEY = rk9f8e7d6c5b\n\"api_key\": \"k-9f8e7d6c5b4a\"\n\
            Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig\n\
            a stray sk-ant-api03-AbCdEf0123456789xyz in prose\n\
            -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----\n\
            the project uses pnpm; PATH=/usr/bin; token count: 3";
        let scrubbed = scrub_secrets(text);
        for secret in [
            "sk-proj-abc123",
            "ghp_0123",
            "hunter2",
            "rk9f8e7d6c5b",
            "k-9f8e7d6c5b4a",
            "eyJhbGci",
            "sk-ant-api03",
            "b3BlbnNzaC1rZXk",
        ] {
            assert!(!scrubbed.contains(secret), "{secret} left in:\n{scrubbed}");
        }
        assert!(
            scrubbed.contains("OPENAI_API_KEY=[secret removed]"),
            "{scrubbed}"
        );
        assert!(scrubbed.contains("[private key removed]"), "{scrubbed}");
        assert!(
            scrubbed.contains("the project uses pnpm; PATH=/usr/bin; token count: 3"),
            "{scrubbed}"
        );
    }
}
