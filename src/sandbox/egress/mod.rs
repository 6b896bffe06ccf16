//! A network that opens per domain: with `[sandbox] allow_domains` set and the network off, a
//! sandboxed command starts through [`shim`], which hands mnemo a listening socket inside the
//! command's own network namespace; mnemo answers on it as a filtering HTTP(S) proxy
//! ([`proxy`]) and the command is told so through `HTTP_PROXY` and friends. The namespace has
//! nothing but its loopback, so whatever ignores the proxy reaches nothing. What the proxy lets
//! through is a [`Gate`]'s decision: the configured list, or the session's approvals.

pub mod fd_pass;
pub mod proxy;
pub mod shim;

use std::net::IpAddr;
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use futures_util::future::BoxFuture;

use super::domains::DomainList;

/// The port the proxy listens on inside each command's namespace (its own, so never taken).
pub const PROXY_PORT: u16 = 3128;

/// Decides which hosts a command may reach.
pub trait Gate: Send + Sync + std::fmt::Debug {
    /// Whether any domain is allowed at all; without one commands get no proxy.
    fn active(&self) -> bool {
        !self.allowed().is_empty()
    }
    /// The domains allowed now.
    fn allowed(&self) -> DomainList;
    /// `Ok` to let the connection to `host:port` through; else why not, which the command sees.
    fn allow<'a>(&'a self, host: &'a str, port: u16) -> BoxFuture<'a, Result<(), String>>;
    /// Whether `host` itself is named in the configured list (not by a wildcard, not by a
    /// session's grant): only such a name may lead to a private address.
    fn listed_exactly(&self, host: &str) -> bool;
}

/// A fixed list, as `mnemo sandbox-exec` gets it.
#[derive(Debug)]
pub struct ListGate {
    pub list: DomainList,
    pub configured: DomainList,
}

impl Gate for ListGate {
    fn allowed(&self) -> DomainList {
        self.list.clone()
    }

    fn allow<'a>(&'a self, host: &'a str, _port: u16) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            match self.list.allows(host) {
                true => Ok(()),
                false => Err(not_listed(host)),
            }
        })
    }

    fn listed_exactly(&self, host: &str) -> bool {
        listed_exactly(&self.configured, host)
    }
}

/// Whether `host` is one of `list`'s names as written (no wildcard).
pub fn listed_exactly(list: &DomainList, host: &str) -> bool {
    list.patterns()
        .iter()
        .any(|pattern| !pattern.to_string().starts_with("*.") && pattern.matches(host))
}

/// What a command hears when `host` is not allowed.
pub fn not_listed(host: &str) -> String {
    format!(
        "{host} is not in [sandbox] allow_domains, so commands cannot reach it; ask the user to \
         allow it"
    )
}

/// Whether `ip` belongs to this machine, its private network or no one (loopback, private,
/// link-local, unique-local, unspecified, multicast, documentation and shared ranges).
pub fn private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_multicast()
                || v4.is_broadcast()
                || v4.is_documentation()
                || (a == 100 && (64..128).contains(&b))
                || a == 0
        }
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => private(IpAddr::V4(v4)),
            None => {
                let first = v6.segments()[0];
                v6.is_loopback()
                    || v6.is_unspecified()
                    || v6.is_multicast()
                    || (first & 0xfe00) == 0xfc00
                    || (first & 0xffc0) == 0xfe80
            }
        },
    }
}

/// How long resolving a name may take.
const RESOLVE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The address to connect to for `host:port`: the first the name resolves to, all of them
/// public unless `may_be_private` (the name itself is listed), so a listed public name cannot be
/// pointed at this machine's services. mnemo connects to the address checked here, leaving no
/// second lookup for a rebinding DNS server to answer. The error is the reason to give.
pub async fn resolve_checked(
    host: &str,
    port: u16,
    may_be_private: bool,
) -> Result<std::net::SocketAddr, String> {
    use std::net::SocketAddr;
    let addresses: Vec<SocketAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => tokio::time::timeout(RESOLVE_TIMEOUT, tokio::net::lookup_host((host, port)))
            .await
            .map_err(|_| format!("resolving {host} took too long"))?
            .map_err(|e| format!("could not resolve {host}: {e}"))?
            .collect(),
    };
    if !may_be_private && let Some(inside) = addresses.iter().find(|a| private(a.ip())) {
        return Err(format!(
            "{host} resolves to {}, an address of this machine or its private network; list \
             `{host}` itself in [sandbox] allow_domains to reach it",
            inside.ip()
        ));
    }
    addresses
        .into_iter()
        .next()
        .ok_or_else(|| format!("{host} has no address"))
}

/// The variables that point a command's tools at the proxy. `localhost` is the sandbox's own
/// loopback and bypasses the proxy, unless `localhost` itself is listed: then the person asked
/// for this machine's.
pub fn proxy_env(gate: &dyn Gate) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    let url = format!("http://127.0.0.1:{PROXY_PORT}");
    let mut env = Vec::new();
    for name in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ] {
        env.push((name.into(), url.clone().into()));
    }
    let direct = match gate.listed_exactly("localhost") {
        true => "127.0.0.1,::1",
        false => "localhost,127.0.0.1,::1",
    };
    for name in ["NO_PROXY", "no_proxy"] {
        env.push((name.into(), direct.into()));
    }
    env
}

static SHIM_PROGRAM: OnceLock<PathBuf> = OnceLock::new();

/// Names the `mnemo` binary that runs as the shim (tests of the library, whose own program is
/// the test runner, point it at the built `mnemo`). The first call wins.
pub fn use_shim_program(path: PathBuf) {
    let _ = SHIM_PROGRAM.set(path);
}

/// The program run as the shim: the one named, else this very program.
pub fn shim_program() -> std::io::Result<PathBuf> {
    match SHIM_PROGRAM.get() {
        Some(path) => Ok(path.clone()),
        None => std::env::current_exe(),
    }
}

/// One command's proxy: it waits for the shim's listener and serves it while the command
/// runs; dropped, it stops.
pub struct Egress {
    task: tokio::task::JoinHandle<()>,
}

impl Egress {
    /// Starts waiting; the returned descriptor is the child's end, for the shim to send through.
    pub fn start(gate: Arc<dyn Gate>) -> std::io::Result<(Self, OwnedFd)> {
        let (ours, child_end) = fd_pass::pair()?;
        let ours = std::os::unix::net::UnixStream::from(ours);
        ours.set_nonblocking(true)?;
        let ours = tokio::net::UnixStream::from_std(ours)?;
        let task = tokio::spawn(async move {
            let received = ours
                .async_io(tokio::io::Interest::READABLE, || {
                    fd_pass::receive(ours.as_fd())
                })
                .await;
            drop(ours);
            let Ok(Some(fd)) = received else {
                return;
            };
            let listener = std::net::TcpListener::from(fd);
            if listener.set_nonblocking(true).is_err() {
                return;
            }
            if let Ok(listener) = tokio::net::TcpListener::from_std(listener) {
                proxy::serve(listener, gate).await;
            }
        });
        Ok((Self { task }, child_end))
    }
}

impl Drop for Egress {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_addresses_are_told_from_public_ones() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
        ] {
            let parsed: IpAddr = ip.parse().unwrap_or_else(|e| panic!("{ip}: {e}"));
            assert!(private(parsed), "{ip} counted as public");
        }
        for ip in ["93.184.216.34", "2606:4700::1111", "1.1.1.1"] {
            let parsed: IpAddr = ip.parse().unwrap_or_else(|e| panic!("{ip}: {e}"));
            assert!(!private(parsed), "{ip} counted as private");
        }
    }
}
