//! Handing one descriptor across a Unix socket (`SCM_RIGHTS`): the shim inside the sandbox
//! sends the listening socket it made in the sandbox's network namespace to mnemo outside.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// Sends `fd` over the connected Unix socket `socket`, with one byte of data.
pub fn send(socket: BorrowedFd<'_>, fd: BorrowedFd<'_>) -> io::Result<()> {
    let mut byte = [1u8];
    let mut iov = one_byte(&mut byte);
    let mut control = control_buffer();
    let msg = header(&mut iov, &mut control);
    // SAFETY: the control buffer has room for one header and one descriptor (CMSG_SPACE), so
    // CMSG_FIRSTHDR is non-null and CMSG_DATA points inside the buffer.
    unsafe {
        let header = libc::CMSG_FIRSTHDR(&msg);
        (*header).cmsg_level = libc::SOL_SOCKET;
        (*header).cmsg_type = libc::SCM_RIGHTS;
        (*header).cmsg_len = libc::CMSG_LEN(size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(header).cast::<RawFd>(), fd.as_raw_fd());
    }
    // SAFETY: msg points at live buffers for the duration of the call.
    match unsafe { libc::sendmsg(socket.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) } {
        -1 => Err(io::Error::last_os_error()),
        _ => Ok(()),
    }
}

fn one_byte(byte: &mut [u8; 1]) -> libc::iovec {
    libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    }
}

/// Room for one control header carrying one descriptor.
fn control_buffer() -> Vec<u8> {
    // SAFETY: CMSG_SPACE only computes a size.
    vec![0u8; unsafe { libc::CMSG_SPACE(size_of::<RawFd>() as u32) } as usize]
}

/// A message of `iov`'s one byte with `control` for its ancillary data.
fn header(iov: &mut libc::iovec, control: &mut [u8]) -> libc::msghdr {
    // SAFETY: msghdr is plain data; zeroed is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = control.len() as _;
    msg
}

/// Receives one descriptor from `socket`; `Ok(None)` when the peer closed without sending.
/// Descriptors arrive close-on-exec.
pub fn receive(socket: BorrowedFd<'_>) -> io::Result<Option<OwnedFd>> {
    let mut byte = [0u8];
    let mut iov = one_byte(&mut byte);
    let mut control = control_buffer();
    let mut msg = header(&mut iov, &mut control);
    // SAFETY: msg points at live buffers for the duration of the call.
    let read = unsafe { libc::recvmsg(socket.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
    if read == -1 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: recvmsg filled msg; the macros walk the control buffer it describes, and a
    // header of type SCM_RIGHTS holds at least one descriptor, now owned by this process.
    unsafe {
        let header = libc::CMSG_FIRSTHDR(&msg);
        if header.is_null()
            || (*header).cmsg_level != libc::SOL_SOCKET
            || (*header).cmsg_type != libc::SCM_RIGHTS
        {
            return Ok(None);
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(header).cast::<RawFd>());
        Ok(Some(OwnedFd::from_raw_fd(fd)))
    }
}

/// A connected pair of Unix stream sockets, both close-on-exec.
pub fn pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors socketpair writes.
    let made = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if made != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: socketpair succeeded: both descriptors are open and owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::fd::AsFd;

    #[test]
    fn a_descriptor_crosses_the_socket_and_still_works() -> io::Result<()> {
        let (ours, theirs) = pair()?;
        let (mut reader, writer) = std::os::unix::net::UnixStream::pair()?;
        send(theirs.as_fd(), writer.as_fd())?;
        drop(writer);
        let Some(received) = receive(ours.as_fd())? else {
            panic!("nothing was received");
        };
        let mut copy = std::os::unix::net::UnixStream::from(received);
        copy.write_all(b"through the copy")?;
        drop(copy);
        let mut text = String::new();
        reader.read_to_string(&mut text)?;
        assert_eq!(text, "through the copy");
        Ok(())
    }

    #[test]
    fn a_peer_that_closes_without_sending_gives_none() -> io::Result<()> {
        let (ours, theirs) = pair()?;
        drop(theirs);
        assert!(receive(ours.as_fd())?.is_none());
        Ok(())
    }
}
