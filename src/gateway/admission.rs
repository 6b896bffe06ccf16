//! Who may hold a connection to the gateway. A connection that has not sent the token yet is
//! *pending*: it may send only a short line, for a short while, and pending connections are
//! capped per peer and in all. Over a cap, a pending connection of the peer holding the most is
//! closed to make room, oldest first, so a flood of idle connections costs the flooder its own
//! connections and never keeps the owner out: the owner's client sends the token within a round
//! trip of connecting. A wrong token costs only the connection that sent it (the token is 256
//! random bits: a lock-out would protect nothing and let anyone lock the owner out).
//! Authenticated connections are capped in all, so file descriptors stay bounded.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

/// Pending connections in all.
pub const MAX_PENDING: usize = 64;
/// Pending connections of one peer (an IP address, or `unix` for the socket).
pub const MAX_PENDING_PER_PEER: usize = 16;
/// Authenticated connections in all.
pub const MAX_CLIENTS: usize = 256;

struct Waiting {
    id: u64,
    peer: String,
    evict: CancellationToken,
}

#[derive(Default)]
struct Pending {
    next_id: u64,
    /// Oldest first.
    waiting: VecDeque<Waiting>,
}

impl Pending {
    fn count(&self, peer: &str) -> usize {
        self.waiting.iter().filter(|w| w.peer == peer).count()
    }

    /// The peer that holds the most pending connections.
    fn busiest_peer(&self) -> Option<String> {
        let mut best: Option<(&str, usize)> = None;
        for waiting in &self.waiting {
            let count = self.count(&waiting.peer);
            if best.is_none_or(|(_, most)| count > most) {
                best = Some((&waiting.peer, count));
            }
        }
        best.map(|(peer, _)| peer.to_string())
    }

    /// Closes the oldest pending connection of `peer`.
    fn evict_oldest_of(&mut self, peer: &str) {
        if let Some(at) = self.waiting.iter().position(|w| w.peer == peer)
            && let Some(waiting) = self.waiting.remove(at)
        {
            waiting.evict.cancel();
        }
    }
}

/// The gateway's bookkeeping of pending and authenticated connections.
pub struct Admission {
    pending: Arc<Mutex<Pending>>,
    clients: Arc<Semaphore>,
}

impl Default for Admission {
    fn default() -> Self {
        Admission {
            pending: Arc::default(),
            clients: Arc::new(Semaphore::new(MAX_CLIENTS)),
        }
    }
}

/// A pending connection's place; given back when dropped (authenticated or gone).
pub struct Ticket {
    pending: Arc<Mutex<Pending>>,
    id: u64,
    /// Cancelled when a newer connection needed the room.
    pub evicted: CancellationToken,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if let Ok(mut pending) = self.pending.lock() {
            pending.waiting.retain(|w| w.id != self.id);
        }
    }
}

impl Admission {
    /// Admits a new connection of `peer` as pending, closing another pending one if a cap is
    /// reached.
    pub fn admit(&self, peer: &str) -> Ticket {
        let evicted = CancellationToken::new();
        let id = match self.pending.lock() {
            Ok(mut pending) => {
                if pending.count(peer) >= MAX_PENDING_PER_PEER {
                    pending.evict_oldest_of(peer);
                } else if pending.waiting.len() >= MAX_PENDING
                    && let Some(busiest) = pending.busiest_peer()
                {
                    pending.evict_oldest_of(&busiest);
                }
                let id = pending.next_id;
                pending.next_id += 1;
                pending.waiting.push_back(Waiting {
                    id,
                    peer: peer.to_string(),
                    evict: evicted.clone(),
                });
                id
            }
            Err(_) => {
                evicted.cancel();
                u64::MAX
            }
        };
        Ticket {
            pending: self.pending.clone(),
            id,
            evicted,
        }
    }

    /// A place for an authenticated connection, or `None` when all are taken.
    pub fn client(&self) -> Option<OwnedSemaphorePermit> {
        self.clients.clone().try_acquire_owned().ok()
    }

    /// Pending connections now.
    #[cfg(test)]
    pub fn pending(&self) -> usize {
        self.pending.lock().map_or(0, |p| p.waiting.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flooding_peer_loses_its_own_oldest_connections_first() {
        let admission = Admission::default();
        let owner = admission.admit("10.0.0.1");
        let flood: Vec<Ticket> = (0..MAX_PENDING_PER_PEER + 5)
            .map(|_| admission.admit("10.0.0.2"))
            .collect();
        assert!(!owner.evicted.is_cancelled(), "another peer's flood");
        let closed = flood.iter().filter(|t| t.evicted.is_cancelled()).count();
        assert_eq!(closed, 5);
        assert!(flood[0].evicted.is_cancelled(), "the oldest goes first");
        assert!(!flood[flood.len() - 1].evicted.is_cancelled());
        assert_eq!(admission.pending(), 1 + MAX_PENDING_PER_PEER);
    }

    #[test]
    fn the_total_cap_makes_room_from_the_busiest_peer() {
        let admission = Admission::default();
        let mut held = Vec::new();
        for peer in 0..MAX_PENDING / MAX_PENDING_PER_PEER {
            let count = MAX_PENDING_PER_PEER + usize::from(peer == 1);
            for _ in 0..count {
                held.push(admission.admit(&format!("peer{peer}")));
            }
        }
        let before: Vec<bool> = held.iter().map(|t| t.evicted.is_cancelled()).collect();
        assert_eq!(
            before.iter().filter(|e| **e).count(),
            1,
            "peer1's own oldest"
        );
        let quiet = admission.admit("quiet");
        assert!(!quiet.evicted.is_cancelled());
        assert!(
            held[0].evicted.is_cancelled(),
            "the first of the busiest peers"
        );
        assert_eq!(admission.pending(), MAX_PENDING);
    }

    #[test]
    fn a_dropped_ticket_gives_its_place_back() {
        let admission = Admission::default();
        let tickets: Vec<Ticket> = (0..MAX_PENDING_PER_PEER)
            .map(|_| admission.admit("unix"))
            .collect();
        drop(tickets);
        assert_eq!(admission.pending(), 0);
        let fresh: Vec<Ticket> = (0..MAX_PENDING_PER_PEER)
            .map(|_| admission.admit("unix"))
            .collect();
        assert!(fresh.iter().all(|t| !t.evicted.is_cancelled()));
    }

    #[test]
    fn authenticated_connections_are_capped_in_all() {
        let admission = Admission::default();
        let permits: Vec<_> = (0..MAX_CLIENTS)
            .filter_map(|_| admission.client())
            .collect();
        assert_eq!(permits.len(), MAX_CLIENTS);
        assert!(admission.client().is_none());
        drop(permits);
        assert!(admission.client().is_some());
    }
}
