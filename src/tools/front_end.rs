//! The front end's services as the tools reach them: like an approval question, a request
//! goes out as `Event::FrontEndRequest` and the call waits for `Op::FrontEndReply`, for a
//! limited time. Only what the front end offered (`Op::OfferServices`) is asked for, and only
//! after the tool's own checks passed. A request nobody answers in time, or one the call stops
//! waiting for, is withdrawn (`Event::FrontEndWithdrawn`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use super::{ToolContext, ToolError};
use crate::protocol::{Event, FrontEndReply, FrontEndRequest, FrontEndServices};

/// How long a file read or write through the front end may take before it counts as failed.
pub const FILE_WAIT: Duration = Duration::from_secs(30);

#[derive(Debug, Default)]
struct State {
    offered: FrontEndServices,
    asker: Option<mpsc::Sender<Event>>,
    pending: HashMap<String, oneshot::Sender<FrontEndReply>>,
}

/// One session's link to its front end's services; shared with its sub-agents.
#[derive(Debug, Default)]
pub struct FrontEnd {
    state: Mutex<State>,
    next_id: AtomicU64,
}

/// Why a request got no answer.
#[derive(Debug)]
pub enum Unanswered {
    /// The user interrupted the call.
    Cancelled,
    /// Nobody answered in time, or the front end went away: what to tell.
    Silent(String),
}

impl Unanswered {
    /// The error a tool that cannot fall back reports.
    pub fn into_error(self, what: &str) -> ToolError {
        match self {
            Unanswered::Cancelled => ToolError::Cancelled,
            Unanswered::Silent(why) => ToolError::Failed(format!("{what}: {why}")),
        }
    }
}

impl FrontEnd {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What the front end offers now (nothing while none is attached).
    pub fn offered(&self) -> FrontEndServices {
        let state = self.state();
        match state.asker {
            Some(_) => state.offered,
            None => FrontEndServices::default(),
        }
    }

    pub fn offer(&self, services: FrontEndServices) {
        self.state().offered = services;
    }

    pub(super) fn attach(&self, events: mpsc::Sender<Event>) {
        self.state().asker = Some(events);
    }

    /// The front end left: its offer ends and waiting requests get no answer.
    pub(super) fn detach(&self) {
        let mut state = self.state();
        state.asker = None;
        state.offered = FrontEndServices::default();
        state.pending.clear();
    }

    /// Passes the front end's reply to the waiting call; `false` when none waits for `id`.
    pub fn resolve(&self, id: &str, reply: FrontEndReply) -> bool {
        match self.state().pending.remove(id) {
            Some(waiting) => waiting.send(reply).is_ok(),
            None => false,
        }
    }

    /// Asks the front end to do `request` for the call of `ctx`, waiting at most `limit`.
    pub async fn ask(
        &self,
        ctx: &ToolContext,
        request: FrontEndRequest,
        limit: Duration,
    ) -> Result<FrontEndReply, Unanswered> {
        let id = format!(
            "front-end-{}-{}",
            ctx.session_id,
            self.next_id.fetch_add(1, Ordering::Relaxed)
        );
        let (reply_tx, reply_rx) = oneshot::channel();
        let asker = {
            let mut state = self.state();
            let asker = state.asker.clone();
            if asker.is_some() {
                state.pending.insert(id.clone(), reply_tx);
            }
            asker
        };
        let gone = || Unanswered::Silent("the editor is no longer connected".into());
        let asker = asker.ok_or_else(gone)?;
        let waiting = Waiting {
            front_end: self,
            id: id.clone(),
            asker: asker.clone(),
            answered: false,
        };
        let event = Event::FrontEndRequest {
            id,
            call_id: ctx.call_id.clone(),
            request,
        };
        if asker.send(event).await.is_err() {
            return Err(gone());
        }
        let reply = tokio::select! {
            reply = reply_rx => reply.map_err(|_| gone())?,
            () = ctx.cancel.cancelled() => return Err(Unanswered::Cancelled),
            () = tokio::time::sleep(limit) => {
                return Err(Unanswered::Silent(format!(
                    "the editor did not answer within {} s",
                    limit.as_secs()
                )));
            }
        };
        waiting.done();
        Ok(reply)
    }
}

/// A request in flight; dropped unanswered, it is withdrawn.
struct Waiting<'a> {
    front_end: &'a FrontEnd,
    id: String,
    asker: mpsc::Sender<Event>,
    answered: bool,
}

impl Waiting<'_> {
    fn done(mut self) {
        self.answered = true;
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if self.answered {
            return;
        }
        self.front_end.state().pending.remove(&self.id);
        let _ = self.asker.try_send(Event::FrontEndWithdrawn {
            id: std::mem::take(&mut self.id),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::builtin::test_support::{TestResult, context, workspace};

    fn read(path: &str) -> FrontEndRequest {
        FrontEndRequest::ReadTextFile { path: path.into() }
    }

    #[tokio::test]
    async fn an_answered_request_gives_the_reply_and_offers_end_with_the_front_end() -> TestResult {
        let (_dir, ws) = workspace()?;
        let ctx = context(&ws);
        let front_end = ctx.approvals.front_end();
        let (tx, mut rx) = mpsc::channel(8);
        let offered = FrontEndServices {
            read_files: true,
            ..FrontEndServices::default()
        };
        front_end.offer(offered);
        assert!(
            !front_end.offered().any(),
            "nothing is offered with nobody attached"
        );
        ctx.approvals.attach(tx);
        assert_eq!(front_end.offered(), offered);
        let answer = async {
            let Some(Event::FrontEndRequest { id, call_id, .. }) = rx.recv().await else {
                panic!("no request");
            };
            assert_eq!(call_id, "call");
            let reply = FrontEndReply::Text {
                content: "buffer".into(),
            };
            assert!(front_end.resolve(&id, reply));
        };
        let (reply, ()) = tokio::join!(
            front_end.ask(&ctx, read("/ws/a"), Duration::from_secs(5)),
            answer
        );
        assert!(matches!(reply, Ok(FrontEndReply::Text { content }) if content == "buffer"));
        ctx.approvals.detach();
        assert!(!front_end.offered().any());
        Ok(())
    }

    #[tokio::test]
    async fn a_request_nobody_answers_in_time_is_withdrawn() -> TestResult {
        let (_dir, ws) = workspace()?;
        let ctx = context(&ws);
        let (tx, mut rx) = mpsc::channel(8);
        ctx.approvals.attach(tx);
        let front_end = ctx.approvals.front_end();
        let reply = front_end
            .ask(&ctx, read("/ws/a"), Duration::from_millis(50))
            .await;
        assert!(matches!(reply, Err(Unanswered::Silent(why)) if why.contains("did not answer")));
        let Some(Event::FrontEndRequest { id: asked, .. }) = rx.recv().await else {
            panic!("no request");
        };
        let Some(Event::FrontEndWithdrawn { id }) = rx.recv().await else {
            panic!("the request was not withdrawn");
        };
        assert_eq!(id, asked);
        assert!(
            !front_end.resolve(&id, FrontEndReply::Written),
            "a late reply fits nothing"
        );
        Ok(())
    }

    #[tokio::test]
    async fn without_a_front_end_a_request_fails_at_once() -> TestResult {
        let (_dir, ws) = workspace()?;
        let ctx = context(&ws);
        let reply = ctx
            .approvals
            .front_end()
            .ask(&ctx, read("/ws/a"), Duration::from_secs(60))
            .await;
        assert!(
            matches!(reply, Err(Unanswered::Silent(why)) if why.contains("no longer connected"))
        );
        Ok(())
    }
}
