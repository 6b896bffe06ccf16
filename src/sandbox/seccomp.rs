//! The seccomp program bubblewrap installs before a sandboxed command runs. Unix sockets at file
//! paths ignore the read-only mount (connecting needs no write on the file system), so with the
//! network off any daemon socket bwrap does not know to mask would let a command act outside
//! the sandbox: there, creating an `AF_UNIX` socket is refused (`socketpair`, which reaches
//! nobody else, stays allowed). `io_uring` is refused always: its operations would connect
//! without the `socket` and `connect` calls the filter sees. The only module that names
//! seccompiler types.

use std::collections::BTreeMap;
use std::io;
use std::sync::OnceLock;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// The compiled program as the bytes bwrap reads (`struct sock_filter` in native order), or
/// `None` on an architecture seccompiler does not cover. `unix_sockets` says whether `AF_UNIX`
/// sockets stay allowed (the network is on).
pub fn program(unix_sockets: bool) -> Option<&'static [u8]> {
    static WITH: OnceLock<Option<Vec<u8>>> = OnceLock::new();
    static WITHOUT: OnceLock<Option<Vec<u8>>> = OnceLock::new();
    let cell = if unix_sockets { &WITH } else { &WITHOUT };
    cell.get_or_init(|| compile(unix_sockets).ok()).as_deref()
}

fn compile(unix_sockets: bool) -> Result<Vec<u8>, seccompiler::Error> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(seccompiler::Error::Backend)?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(libc::SYS_io_uring_setup, Vec::new());
    if !unix_sockets {
        let unix = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Eq,
            libc::AF_UNIX as u64,
        )
        .map_err(seccompiler::Error::Backend)?;
        let rule = SeccompRule::new(vec![unix]).map_err(seccompiler::Error::Backend)?;
        rules.insert(libc::SYS_socket, vec![rule]);
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(seccompiler::Error::Backend)?;
    let program: BpfProgram = filter.try_into().map_err(seccompiler::Error::Backend)?;
    let mut bytes = Vec::with_capacity(program.len() * 8);
    for instruction in program {
        bytes.extend_from_slice(&instruction.code.to_ne_bytes());
        bytes.push(instruction.jt);
        bytes.push(instruction.jf);
        bytes.extend_from_slice(&instruction.k.to_ne_bytes());
    }
    Ok(bytes)
}

/// A pipe holding `program` for the child to read from: its read end, close-on-exec in this
/// process. The program is far smaller than a pipe's buffer, so the write never blocks.
pub fn pipe_with(program: &[u8]) -> io::Result<std::os::fd::OwnedFd> {
    use std::io::Write;
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 succeeded, so both descriptors are open and owned by nobody else.
    let (read, write) = unsafe {
        (
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::fs::File::from(std::os::fd::OwnedFd::from_raw_fd(fds[1])),
        )
    };
    let mut write = write;
    write.write_all(program)?;
    Ok(read)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_compile_on_this_machine_and_differ_by_the_socket_rule() {
        let (Some(offline), Some(online)) = (program(false), program(true)) else {
            panic!("seccompiler covers {}", std::env::consts::ARCH);
        };
        assert_eq!(offline.len() % 8, 0);
        assert!(offline.len() > online.len());
    }
}
