//! The signals that stop mnemo from outside, shared by the front ends: SIGINT (Ctrl+C), SIGTERM
//! (a service manager, `kill`) and SIGHUP (the terminal went away). Each stops the work in
//! flight as an interrupt does (what was shown is kept, child processes are killed) and the
//! process then exits with the shell's code for the signal.

use std::io;

use tokio::signal::unix::{Signal, SignalKind, signal};

/// Which signal arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    Interrupt,
    Terminate,
    Hangup,
}

impl Stop {
    /// 128 plus the signal number, as shells report a process ended by it.
    pub fn exit_code(self) -> u8 {
        match self {
            Stop::Interrupt => 130,
            Stop::Terminate => 143,
            Stop::Hangup => 129,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Stop::Interrupt => "SIGINT",
            Stop::Terminate => "SIGTERM",
            Stop::Hangup => "SIGHUP",
        }
    }
}

pub struct Signals {
    interrupt: Signal,
    terminate: Signal,
    hangup: Signal,
}

impl Signals {
    /// Listens from now on; the default action (dying at once) no longer applies.
    pub fn new() -> io::Result<Self> {
        Ok(Self {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
            hangup: signal(SignalKind::hangup())?,
        })
    }

    pub async fn recv(&mut self) -> Stop {
        tokio::select! {
            _ = self.interrupt.recv() => Stop::Interrupt,
            _ = self.terminate.recv() => Stop::Terminate,
            _ = self.hangup.recv() => Stop::Hangup,
        }
    }
}
