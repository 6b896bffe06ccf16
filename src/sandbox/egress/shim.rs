//! The first program of a sandboxed command whose network opens per domain. Inside the
//! sandbox's network namespace it listens on the proxy's port, hands that listening socket to
//! mnemo outside (which answers on it as the filtering proxy), and then becomes the command.
//! Only the namespace's loopback exists there, so the proxy is the one way out.

use std::ffi::OsString;
use std::io;
use std::os::fd::{AsFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;

use super::{PROXY_PORT, fd_pass};

/// The argument that makes `mnemo` run as the shim: `mnemo __egress-shim FD COMMAND...`.
pub const ARG: &str = "__egress-shim";

/// Runs the shim with the arguments after [`ARG`]; returns only when the command could not
/// start (its exit code).
pub fn main(args: &[OsString]) -> i32 {
    let Some((fd, command)) = args.split_first() else {
        eprintln!("mnemo: {ARG} needs a descriptor and a command");
        return 2;
    };
    let fd: Option<RawFd> = fd.to_str().and_then(|s| s.parse().ok());
    if let Err(err) = fd.map_or(Err(io::ErrorKind::InvalidInput.into()), hand_over) {
        eprintln!("mnemo: the sandbox's proxy did not start ({err}); the network stays closed");
    }
    let Some((program, rest)) = command.split_first() else {
        eprintln!("mnemo: {ARG} needs a command");
        return 2;
    };
    let err = std::process::Command::new(program).args(rest).exec();
    eprintln!(
        "mnemo: could not start {}: {err}",
        program.to_string_lossy()
    );
    127
}

/// Listens on the proxy's port of this namespace and sends the socket through `fd`, which is
/// closed afterwards (the command must not reach mnemo through it).
fn hand_over(fd: RawFd) -> io::Result<()> {
    // SAFETY: the descriptor was given to this process by mnemo for this purpose alone and
    // nothing else owns it.
    let socket = unsafe { OwnedFd::from_raw_fd(fd) };
    let listener = std::net::TcpListener::bind(("127.0.0.1", PROXY_PORT))?;
    fd_pass::send(socket.as_fd(), listener.as_fd())
}
