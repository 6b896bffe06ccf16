//! The domains commands and `web_fetch` may reach when the network is otherwise off:
//! `[sandbox] allow_domains = ["crates.io", "*.pypi.org"]`. A pattern is a host name, or
//! `*.` and a host name for its subdomains (not the name itself, as in TLS certificates).

use serde::{Deserialize, Serialize};

/// One allowed domain pattern, checked when the config is read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct DomainPattern {
    /// Lower-case host name without the `*.`.
    host: String,
    subdomains: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not a domain pattern: write a host name such as `crates.io` or `*.pypi.org`, \
     without a scheme, port or path"
)]
pub struct BadPattern(pub String);

impl DomainPattern {
    pub fn parse(text: &str) -> Result<Self, BadPattern> {
        let bad = || BadPattern(text.to_string());
        let lower = text.trim().to_ascii_lowercase();
        let (subdomains, host) = match lower.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, lower.as_str()),
        };
        let host = host.strip_suffix('.').unwrap_or(host);
        if !is_host_name(host) {
            return Err(bad());
        }
        Ok(Self {
            host: host.to_string(),
            subdomains,
        })
    }

    /// Whether `host` (a name from a URL or a CONNECT line, any case) is covered.
    pub fn matches(&self, host: &str) -> bool {
        let host = host.strip_suffix('.').unwrap_or(host);
        if self.subdomains {
            host.len() > self.host.len() + 1
                && host.as_bytes()[host.len() - self.host.len() - 1] == b'.'
                && host[host.len() - self.host.len()..].eq_ignore_ascii_case(&self.host)
        } else {
            host.eq_ignore_ascii_case(&self.host)
        }
    }
}

impl TryFrom<String> for DomainPattern {
    type Error = BadPattern;
    fn try_from(text: String) -> Result<Self, BadPattern> {
        Self::parse(&text)
    }
}

impl From<DomainPattern> for String {
    fn from(pattern: DomainPattern) -> String {
        pattern.to_string()
    }
}

impl std::fmt::Display for DomainPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.subdomains {
            f.write_str("*.")?;
        }
        f.write_str(&self.host)
    }
}

/// Letters, digits, hyphens and dots, in labels of at most 63 bytes: no IP address literal
/// with a port, no wildcard inside a name, nothing a URL parser would read differently.
fn is_host_name(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

/// A list of allowed domain patterns.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DomainList(Vec<DomainPattern>);

impl std::fmt::Display for DomainList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, pattern) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{pattern}")?;
        }
        Ok(())
    }
}

impl DomainList {
    pub fn new(patterns: Vec<DomainPattern>) -> Self {
        Self(patterns)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn allows(&self, host: &str) -> bool {
        self.0.iter().any(|pattern| pattern.matches(host))
    }

    /// Adds `pattern` unless it is there already.
    pub fn add(&mut self, pattern: DomainPattern) {
        if !self.0.contains(&pattern) {
            self.0.push(pattern);
        }
    }

    pub fn patterns(&self) -> &[DomainPattern] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(patterns: &[&str]) -> DomainList {
        DomainList::new(
            patterns
                .iter()
                .map(|p| DomainPattern::parse(p).unwrap_or_else(|e| panic!("{e}")))
                .collect(),
        )
    }

    #[test]
    fn an_exact_name_allows_only_itself() {
        let allowed = list(&["crates.io"]);
        assert!(allowed.allows("crates.io"));
        assert!(allowed.allows("Crates.IO."));
        assert!(!allowed.allows("static.crates.io"));
        assert!(!allowed.allows("evilcrates.io"));
        assert!(!allowed.allows("crates.io.evil.com"));
    }

    #[test]
    fn a_wildcard_allows_subdomains_but_not_the_name_or_lookalikes() {
        let allowed = list(&["*.pypi.org"]);
        assert!(allowed.allows("files.pypi.org"));
        assert!(allowed.allows("a.b.pypi.org"));
        assert!(!allowed.allows("pypi.org"));
        assert!(!allowed.allows("notpypi.org"));
        assert!(!allowed.allows("xpypi.org"));
    }

    #[test]
    fn patterns_with_schemes_ports_paths_or_inner_wildcards_are_refused() {
        for bad in [
            "",
            "https://crates.io",
            "crates.io:443",
            "crates.io/path",
            "a.*.org",
            "*",
            "*.",
            "-x.org",
            "a b.org",
        ] {
            let err = DomainPattern::parse(bad).err();
            assert!(err.is_some(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn a_config_list_reads_and_a_bad_entry_names_itself() {
        let read: Result<DomainList, _> = serde_json::from_str(r#"["crates.io", "*.pypi.org"]"#);
        let read = read.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read, list(&["crates.io", "*.pypi.org"]));
        let bad = serde_json::from_str::<DomainList>(r#"["crates.io:443"]"#)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(bad.contains("crates.io:443"), "{bad}");
    }
}
