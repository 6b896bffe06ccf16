//! A held session lease (`leases.rs`): taken when a session opens, renewed in the
//! background while it lives, given back when it is dropped. Within one process a session is
//! leased once, so two agents of one process never write the same session either.

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use super::error::StoreError;
use super::leases::{Holder, LEASE_RENEW_MS};
use super::store::Store;

/// Sessions leased by this process.
fn held() -> &'static Mutex<HashSet<String>> {
    static HELD: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    HELD.get_or_init(Mutex::default)
}

pub struct SessionLease {
    store: Store,
    session: String,
    holder: Holder,
    renewal: tokio::task::AbortHandle,
}

impl SessionLease {
    /// Takes the lease of session `id`, or says which process holds it.
    pub async fn acquire(store: &Store, id: &str) -> Result<SessionLease, StoreError> {
        let holder = Holder::current();
        let fresh = held()
            .lock()
            .is_ok_and(|mut held| held.insert(id.to_string()));
        if !fresh {
            return Err(busy(id, holder.pid, &holder.host));
        }
        let (session, me) = (id.to_string(), holder.clone());
        let taken = store.call(move |db| db.acquire_lease(&session, &me)).await;
        let refused = match taken {
            Ok(None) => None,
            Ok(Some(other)) => Some(busy(id, other.pid, &other.host)),
            Err(err) => Some(err),
        };
        if let Some(err) = refused {
            forget(id);
            return Err(err);
        }
        let renewal = tokio::spawn(renew(store.clone(), id.to_string(), holder.clone()));
        Ok(SessionLease {
            store: store.clone(),
            session: id.to_string(),
            holder,
            renewal: renewal.abort_handle(),
        })
    }
}

fn busy(id: &str, pid: u32, host: &str) -> StoreError {
    StoreError::SessionBusy {
        id: id.chars().take(8).collect(),
        pid,
        host: host.to_string(),
    }
}

fn forget(id: &str) {
    if let Ok(mut held) = held().lock() {
        held.remove(id);
    }
}

async fn renew(store: Store, session: String, holder: Holder) {
    let mut every = tokio::time::interval(Duration::from_millis(LEASE_RENEW_MS));
    every.tick().await;
    loop {
        every.tick().await;
        let (ids, me) = (vec![session.clone()], holder.clone());
        if store
            .call(move |db| db.renew_leases(&ids, &me))
            .await
            .is_err()
        {
            return;
        }
    }
}

impl Drop for SessionLease {
    fn drop(&mut self) {
        self.renewal.abort();
        forget(&self.session);
        let (session, holder) = (self.session.clone(), self.holder.clone());
        self.store.call_detached(move |db| {
            let _ = db.release_lease(&session, &holder);
        });
    }
}
