//! The gateway's shared secret: 32 random bytes as hex in `<data dir>/gateway-token`, mode
//! 0600, written at start and removed at shutdown. A client proves it may drive sessions by
//! sending it first; the comparison takes the same time wherever the first difference is,
//! and an address that keeps failing is turned away for a while.

use std::collections::HashMap;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failed attempts an address may make per `FAILURE_WINDOW` before it is turned away.
const MAX_FAILURES: u32 = 5;
const FAILURE_WINDOW: Duration = Duration::from_secs(60);

/// The token file of a data directory.
pub fn token_path(data_dir: &Path) -> PathBuf {
    data_dir.join("gateway-token")
}

/// The token file while the gateway runs; removed when dropped.
pub struct TokenFile {
    path: PathBuf,
    token: String,
}

impl TokenFile {
    /// Writes a new random token (replacing one a killed daemon left behind).
    pub fn create(data_dir: &Path) -> std::io::Result<TokenFile> {
        let mut bytes = [0u8; 32];
        getrandom(&mut bytes)?;
        let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let path = token_path(data_dir);
        let _ = std::fs::remove_file(&path);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)?;
        file.write_all(token.as_bytes())?;
        Ok(TokenFile { path, token })
    }

    pub fn token(&self) -> &str {
        &self.token
    }
}

impl Drop for TokenFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn getrandom(bytes: &mut [u8]) -> std::io::Result<()> {
    use std::io::Read;
    std::fs::File::open("/dev/urandom")?.read_exact(bytes)
}

/// Whether `given` is `expected`, in time that does not depend on where they differ.
pub fn same_token(given: &str, expected: &str) -> bool {
    let (given, expected) = (given.as_bytes(), expected.as_bytes());
    let mut difference = given.len() ^ expected.len();
    for (i, byte) in expected.iter().enumerate() {
        difference |= usize::from(byte ^ given.get(i).copied().unwrap_or(0));
    }
    difference == 0
}

/// Failed attempts per client address.
#[derive(Default)]
pub struct Failures {
    seen: Mutex<HashMap<String, (u32, Instant)>>,
}

impl Failures {
    /// Whether `address` may try now.
    pub fn allowed(&self, address: &str, now: Instant) -> bool {
        let Ok(seen) = self.seen.lock() else {
            return false;
        };
        seen.get(address).is_none_or(|(count, since)| {
            *count < MAX_FAILURES || now.duration_since(*since) > FAILURE_WINDOW
        })
    }

    pub fn failed(&self, address: &str, now: Instant) {
        if let Ok(mut seen) = self.seen.lock() {
            let entry = seen.entry(address.to_string()).or_insert((0, now));
            if now.duration_since(entry.1) > FAILURE_WINDOW {
                *entry = (0, now);
            }
            entry.0 += 1;
            // Forgotten addresses keep the map small under a spray of sources.
            seen.retain(|_, (_, since)| now.duration_since(*since) <= FAILURE_WINDOW);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_token_file_is_private_random_and_removed() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let first = TokenFile::create(dir.path())?;
        let path = token_path(dir.path());
        assert_eq!(
            std::fs::metadata(&path)?.permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(std::fs::read_to_string(&path)?, first.token());
        assert_eq!(first.token().len(), 64);
        drop(first);
        assert!(!path.exists());
        let (a, b) = (
            TokenFile::create(dir.path())?.token().to_string(),
            TokenFile::create(dir.path())?.token().to_string(),
        );
        assert_ne!(a, b);
        Ok(())
    }

    #[test]
    fn tokens_compare_whole_and_failures_are_limited_per_address() {
        assert!(same_token("abc", "abc"));
        assert!(!same_token("abd", "abc"));
        assert!(!same_token("ab", "abc"));
        assert!(!same_token("abcd", "abc"));
        assert!(!same_token("", "abc"));
        let failures = Failures::default();
        let now = Instant::now();
        for _ in 0..MAX_FAILURES {
            assert!(failures.allowed("1.2.3.4", now));
            failures.failed("1.2.3.4", now);
        }
        assert!(!failures.allowed("1.2.3.4", now));
        assert!(failures.allowed("5.6.7.8", now));
        assert!(failures.allowed("1.2.3.4", now + FAILURE_WINDOW + Duration::from_secs(1)));
    }
}
