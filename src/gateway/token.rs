//! The gateway's shared secret: 32 random bytes as hex in `<data dir>/gateway-token`, mode
//! 0600, written at start and removed at shutdown. A client proves it may drive sessions by
//! sending it first; the comparison takes the same time wherever the first difference is.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

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
    fn tokens_compare_whole() {
        assert!(same_token("abc", "abc"));
        assert!(!same_token("abd", "abc"));
        assert!(!same_token("ab", "abc"));
        assert!(!same_token("abcd", "abc"));
        assert!(!same_token("", "abc"));
    }
}
