//! A session's events on their way to the client: each becomes `session/update`s, an
//! approval becomes `session/request_permission` (denied when the client does not answer in
//! time, or fails), and the end of a turn answers the prompt waiting for it.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp::Client;
use acp::ErrorCode;
use acp::v1::schema::{
    PermissionOption, PermissionOptionKind, PromptResponse, RequestPermissionOutcome,
    RequestPermissionRequest, SessionNotification, StopReason,
};
use acp::v1::{ConnectionTo, Responder};
use agent_client_protocol as acp;
use tokio::sync::mpsc;

use super::services::{Link, Requests};
use super::sessions::{ended, error};
use super::updates;
use crate::host::Attachment;
use crate::protocol::{ApprovalAction, ApprovalDecision, Event, Op, QuestionAnswer, TurnStatus};

/// How long the client has to answer a permission request before it counts as denied.
const PERMISSION_WAIT: Duration = Duration::from_secs(600);

/// The prompt whose turn runs, answered when it ends.
#[derive(Clone, Default)]
pub(super) struct Waiting(Arc<Mutex<Option<Responder<PromptResponse>>>>);

impl Waiting {
    /// Holds `responder` until the turn ends; whether it does (a prompt that comes while
    /// another waits is answered with an error at once).
    pub(super) fn wait(&self, responder: Responder<PromptResponse>) -> bool {
        let mut slot = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_some() {
            let busy = "a prompt is running in this session; cancel it or wait for it to end";
            let _ = responder.respond_with_error(error(ErrorCode::INVALID_REQUEST, busy));
            return false;
        }
        *slot = Some(responder);
        true
    }

    /// Answers the waiting prompt, if one waits.
    pub(super) fn end(&self, answer: Result<PromptResponse, acp::Error>) {
        let responder = self.0.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(responder) = responder {
            let _ = match answer {
                Ok(response) => responder.respond(response),
                Err(e) => responder.respond_with_error(e),
            };
        }
    }
}

/// What the pump needs to know of its session's configuration.
pub(super) struct Setting {
    pub(super) workspace: PathBuf,
    /// The configured models, for the model picker.
    pub(super) models: Vec<String>,
}

pub(super) async fn run(
    mut attached: Attachment,
    waiting: Waiting,
    setting: Setting,
    cx: ConnectionTo<Client>,
) {
    let Setting { workspace, models } = setting;
    let id = attached.session.clone();
    let mut outputs = updates::Outputs::default();
    let requests = Requests::default();
    let link = Link {
        session: id.clone(),
        ops: attached.ops.clone(),
        cx: cx.clone(),
    };
    while let Some(numbered) = attached.events.recv().await {
        let event = numbered.event;
        let mut shown = updates::live(&event, &workspace);
        if let Event::ToolCallFinished { call_id, .. } = &event
            && let Some(terminal) = requests.terminal_of(call_id)
        {
            for update in &mut shown {
                updates::keep_terminal(update, call_id, terminal.clone());
            }
        }
        for update in shown {
            let _ = cx.send_notification(SessionNotification::new(id.clone(), update));
        }
        match event {
            Event::FrontEndRequest {
                id: asked,
                call_id,
                request,
            } => requests.start(&link, asked, call_id, request),
            Event::FrontEndWithdrawn { id: asked } => requests.withdraw(&asked),
            Event::ToolOutput { call_id, chunk } => {
                if let Some(update) = outputs.add(&call_id, &chunk) {
                    let _ = cx.send_notification(SessionNotification::new(id.clone(), update));
                }
            }
            Event::ToolCallFinished { call_id, .. } => outputs.finished(&call_id),
            Event::SessionStarted { model, .. } | Event::ModelChanged { model, .. } => {
                let update = updates::model_update(&model, &models);
                let _ = cx.send_notification(SessionNotification::new(id.clone(), update));
            }
            Event::ApprovalRequested {
                id: asked,
                call_id,
                action,
                reason,
                session_grant,
                ..
            } => {
                let request = permission(
                    &id,
                    &call_id,
                    &action,
                    &reason,
                    session_grant.as_deref(),
                    &workspace,
                );
                tokio::spawn(answer(asked, request, attached.ops.clone(), cx.clone()));
            }
            Event::TurnFinished {
                status, message, ..
            } => waiting.end(turn_end(status, message)),
            // ACP has no way to put a free question to the person: the model goes on.
            Event::QuestionAsked { id: asked, .. } => {
                let answer = QuestionAnswer::Unavailable;
                let op = Op::AnswerQuestion { id: asked, answer };
                let _ = attached.ops.send(op).await;
            }
            _ => {}
        }
    }
    waiting.end(Err(ended()));
}

fn turn_end(status: TurnStatus, message: Option<String>) -> Result<PromptResponse, acp::Error> {
    let stop = match status {
        TurnStatus::Completed => StopReason::EndTurn,
        TurnStatus::Interrupted => StopReason::Cancelled,
        TurnStatus::LoopDetected | TurnStatus::StepLimit => StopReason::MaxTurnRequests,
        TurnStatus::CutOff => StopReason::MaxTokens,
        TurnStatus::Refused => StopReason::Refusal,
        TurnStatus::Failed => {
            let message = message.unwrap_or_else(|| "the model call failed".to_string());
            return Err(error(ErrorCode::INTERNAL_ERROR, message));
        }
    };
    Ok(PromptResponse::new(stop))
}

const ALLOW_ONCE: &str = "allow_once";
const ALLOW_SESSION: &str = "allow_session";
const DENY: &str = "deny";

fn permission(
    session: &str,
    call_id: &str,
    action: &ApprovalAction,
    reason: &str,
    session_grant: Option<&str>,
    workspace: &std::path::Path,
) -> RequestPermissionRequest {
    let mut options = vec![PermissionOption::new(
        ALLOW_ONCE,
        "Allow once",
        PermissionOptionKind::AllowOnce,
    )];
    if let Some(grant) = session_grant {
        options.push(PermissionOption::new(
            ALLOW_SESSION,
            format!("Allow for this session: {grant}"),
            PermissionOptionKind::AllowAlways,
        ));
    }
    options.push(PermissionOption::new(
        DENY,
        "Deny",
        PermissionOptionKind::RejectOnce,
    ));
    let call = updates::asking(call_id, action, reason, workspace);
    RequestPermissionRequest::new(session.to_string(), call, options)
}

/// Asks the client and answers the session; anything but a chosen allow is a denial.
async fn answer(
    asked: String,
    request: RequestPermissionRequest,
    ops: mpsc::Sender<Op>,
    cx: ConnectionTo<Client>,
) {
    let reply = tokio::time::timeout(PERMISSION_WAIT, cx.send_request(request).block_task()).await;
    let decision = match reply {
        Ok(Ok(response)) => match response.outcome {
            RequestPermissionOutcome::Selected(chosen) => match &*chosen.option_id.0 {
                ALLOW_ONCE => ApprovalDecision::AllowOnce,
                ALLOW_SESSION => ApprovalDecision::AllowSession,
                _ => ApprovalDecision::Deny,
            },
            _ => ApprovalDecision::Deny,
        },
        Ok(Err(_)) | Err(_) => ApprovalDecision::Deny,
    };
    let _ = ops
        .send(Op::Approval {
            id: asked,
            decision,
        })
        .await;
}
