//! Opening files beneath the workspace through directory handles. Checking a path and then
//! opening it by name leaves a window in which a command (a background sub-agent's shell, say)
//! can swap a directory for a symlink and send the open outside the workspace. Here every
//! component is opened relative to the handle of its parent, with `O_NOFOLLOW`: a component
//! that is a symlink by then makes the open fail instead of being followed. The path given is
//! the real, already-checked one ([`super::path_guard`] resolves symlinks inside the workspace
//! first), so an honest path never meets a symlink. The only module that names cap-std types.

use std::fs::File;
use std::io::{self, Read, Seek, Write};
use std::path::{Component, Path};

use cap_fs_ext::{DirExt, FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::{Dir, OpenOptions, OpenOptionsExt};

/// What a directory entry is, as listed without following it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    Dir,
    File,
    Symlink,
    Other,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub kind: EntryKind,
    pub size: u64,
}

/// The names of `relative` (inside the workspace, no `..`), or an error for anything else.
fn names(relative: &Path) -> io::Result<Vec<&std::ffi::OsStr>> {
    relative
        .components()
        .filter(|c| *c != Component::CurDir)
        .map(|c| match c {
            Component::Normal(name) => Ok(name),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "only plain names below the workspace can be opened",
            )),
        })
        .collect()
}

/// Opens the directory `names` beneath `workspace`, creating missing ones when `create`.
fn open_dirs(workspace: &Path, names: &[&std::ffi::OsStr], create: bool) -> io::Result<Dir> {
    let mut dir = Dir::open_ambient_dir(workspace, cap_std::ambient_authority())?;
    for name in names {
        dir = match dir.open_dir_nofollow(name) {
            Ok(next) => next,
            Err(e) if create && e.kind() == io::ErrorKind::NotFound => {
                match dir.create_dir(name) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(e),
                }
                dir.open_dir_nofollow(name)?
            }
            Err(e) => return Err(moved(&dir, name, e)),
        };
    }
    Ok(dir)
}

/// An open of `name` in `dir` that met a symlink says so: the checked path had none there, so
/// it changed since.
fn moved(dir: &Dir, name: &std::ffi::OsStr, error: io::Error) -> io::Error {
    let link = error.raw_os_error() == Some(libc::ELOOP)
        || dir
            .symlink_metadata(name)
            .is_ok_and(|m| m.file_type().is_symlink());
    match link {
        true => io::Error::other(
            "the path changed while it was opened (a symbolic link took the place of a \
             checked entry); nothing was read or written",
        ),
        false => error,
    }
}

fn split(relative: &Path) -> io::Result<(Vec<&std::ffi::OsStr>, &std::ffi::OsStr)> {
    let mut names = names(relative)?;
    let last = names.pop().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "the workspace itself is not a file",
        )
    })?;
    Ok((names, last))
}

/// Opens a regular file for reading. Special files (FIFOs, devices, sockets) are refused
/// without blocking on them: the open is non-blocking and the type is checked on the handle.
pub fn open_read(workspace: &Path, relative: &Path) -> io::Result<File> {
    let (parents, name) = split(relative)?;
    let dir = open_dirs(workspace, &parents, false)?;
    let mut options = OpenOptions::new();
    options
        .read(true)
        .follow(FollowSymlinks::No)
        .custom_flags(libc::O_NONBLOCK);
    let file = dir
        .open_with(name, &options)
        .map_err(|e| moved(&dir, name, e))?
        .into_std();
    regular_and_blocking(file)
}

fn regular_and_blocking(file: File) -> io::Result<File> {
    use std::os::fd::AsRawFd;
    let kind = file.metadata()?.file_type();
    if kind.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "is a directory, not a file",
        ));
    }
    if !kind.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "is not a regular file (a FIFO, socket or device); it is not opened",
        ));
    }
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor this function owns.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
    }
    Ok(file)
}

/// Replaces the content of the file at `relative` with `content`, creating it (and missing
/// parent directories) when needed. Returns the previous content, `None` for a new file.
pub fn replace(workspace: &Path, relative: &Path, content: &[u8]) -> io::Result<Option<Vec<u8>>> {
    let (parents, name) = split(relative)?;
    let dir = open_dirs(workspace, &parents, true)?;
    let mut options = OpenOptions::new();
    options
        .read(true)
        .write(true)
        .create(true)
        .follow(FollowSymlinks::No)
        .custom_flags(libc::O_NONBLOCK);
    let existed = dir.symlink_metadata(name).is_ok();
    let file = dir
        .open_with(name, &options)
        .map_err(|e| moved(&dir, name, e))?
        .into_std();
    let mut file = regular_and_blocking(file)?;
    let previous = match existed {
        true => {
            let mut old = Vec::new();
            file.read_to_end(&mut old)?;
            Some(old)
        }
        false => None,
    };
    // Written over in place, then cut to length: truncating first frees the file's blocks
    // only to allocate them again, which costs a rewind of many files several times over.
    file.rewind()?;
    file.write_all(content)?;
    file.set_len(content.len() as u64)?;
    Ok(previous)
}

/// Removes the file at `relative` (a symlink there is removed as a link, never followed).
pub fn remove(workspace: &Path, relative: &Path) -> io::Result<()> {
    let (parents, name) = split(relative)?;
    let dir = open_dirs(workspace, &parents, false)?;
    dir.remove_file(name).map_err(|e| moved(&dir, name, e))
}

/// Reads the whole regular file at `relative`.
pub fn read(workspace: &Path, relative: &Path) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    open_read(workspace, relative)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The entries of the directory at `relative` (the workspace itself when empty), not
/// following symlinks.
pub fn list(workspace: &Path, relative: &Path) -> io::Result<Vec<Entry>> {
    let dir = open_dirs(workspace, &names(relative)?, false)?;
    let mut entries = Vec::new();
    for entry in dir.entries()? {
        let Ok(entry) = entry else { continue };
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let kind = if kind.is_symlink() {
            EntryKind::Symlink
        } else if kind.is_dir() {
            EntryKind::Dir
        } else if kind.is_file() {
            EntryKind::File
        } else {
            EntryKind::Other
        };
        let size = match kind {
            EntryKind::File => entry.metadata().map(|m| m.len()).unwrap_or(0),
            _ => 0,
        };
        entries.push(Entry { name, kind, size });
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    #[test]
    fn replace_creates_parents_and_returns_what_was_there() -> TestResult {
        let dir = tempfile::tempdir()?;
        let ws = dir.path();
        assert_eq!(replace(ws, Path::new("a/b/f.txt"), b"one")?, None);
        assert_eq!(
            replace(ws, Path::new("a/b/f.txt"), b"two")?,
            Some(b"one".to_vec())
        );
        assert_eq!(std::fs::read(ws.join("a/b/f.txt"))?, b"two");
        assert_eq!(read(ws, Path::new("a/b/f.txt"))?, b"two");
        Ok(())
    }

    #[test]
    fn a_symlink_anywhere_in_the_path_is_never_followed() -> TestResult {
        let dir = tempfile::tempdir()?;
        let ws = dir.path().join("ws");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&ws)?;
        std::fs::create_dir_all(&outside)?;
        std::fs::write(outside.join("secret"), "s")?;
        symlink(&outside, ws.join("sub"))?;
        symlink(outside.join("secret"), ws.join("file"))?;
        let message = replace(&ws, Path::new("sub/x"), b"x")
            .err()
            .map(|e| e.to_string());
        assert!(
            message.as_ref().is_some_and(|m| m.contains("path changed")),
            "{message:?}"
        );
        assert!(replace(&ws, Path::new("file"), b"x").is_err());
        assert!(read(&ws, Path::new("file")).is_err());
        assert!(read(&ws, Path::new("sub/secret")).is_err());
        assert!(list(&ws, Path::new("sub")).is_err());
        assert!(!outside.join("x").exists());
        assert_eq!(std::fs::read(outside.join("secret"))?, b"s");
        Ok(())
    }

    #[test]
    fn fifos_are_refused_without_blocking() -> TestResult {
        let dir = tempfile::tempdir()?;
        let fifo = dir.path().join("pipe");
        let name = std::ffi::CString::new(fifo.to_string_lossy().as_bytes())?;
        // SAFETY: mkfifo reads a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let message = read(dir.path(), Path::new("pipe"))
            .err()
            .map(|e| e.to_string());
        assert!(message.is_some_and(|m| m.contains("not a regular file")));
        Ok(())
    }

    #[test]
    fn listing_marks_symlinks_without_following_them() -> TestResult {
        let dir = tempfile::tempdir()?;
        std::fs::create_dir(dir.path().join("d"))?;
        std::fs::write(dir.path().join("f"), "12345")?;
        symlink("/etc", dir.path().join("l"))?;
        let mut entries = list(dir.path(), Path::new(""))?;
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        let kinds: Vec<_> = entries
            .iter()
            .map(|e| (e.name.as_str(), e.kind, e.size))
            .collect();
        assert_eq!(
            kinds,
            [
                ("d", EntryKind::Dir, 0),
                ("f", EntryKind::File, 5),
                ("l", EntryKind::Symlink, 0)
            ]
        );
        Ok(())
    }
}
