//! `ask_user`: the model puts a question (with choices, or open) to the person and waits for
//! the answer. The question goes out as `Event::QuestionAsked` and the call waits for
//! `Op::AnswerQuestion`, at most [`QUESTION_WAIT`]; an interrupt withdraws it. Where nobody can
//! answer (`mnemo run`, a job), the model hears so at once and goes on: every outcome is a
//! result it can act on, never a failed call.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Deserialize;
use tokio::sync::{mpsc, oneshot};

use super::{ToolContext, ToolError, TypedTool};
use crate::protocol::{Event, QuestionAnswer};

/// How long a question waits for the person before the model goes on without an answer.
pub const QUESTION_WAIT: Duration = Duration::from_secs(15 * 60);
/// The most choices a question offers (the TUI picks them with the digits 1 to 9).
pub const MAX_CHOICES: usize = 9;
/// The longest question and the longest choice, in characters.
const MAX_QUESTION_CHARS: usize = 2_000;
const MAX_CHOICE_CHARS: usize = 200;

/// The questions of one session (and its sub-agents) that wait for an answer.
#[derive(Debug, Default)]
pub struct Questions {
    pending: Mutex<HashMap<String, oneshot::Sender<QuestionAnswer>>>,
    next_id: AtomicU64,
}

impl Questions {
    fn pending(&self) -> MutexGuard<'_, HashMap<String, oneshot::Sender<QuestionAnswer>>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Passes the answer to the waiting call; `false` when no call waits for `id`.
    pub fn resolve(&self, id: &str, answer: QuestionAnswer) -> bool {
        match self.pending().remove(id) {
            Some(waiting) => waiting.send(answer).is_ok(),
            None => false,
        }
    }

    /// The front end went away: the waiting questions get no answer.
    pub(super) fn clear(&self) {
        self.pending().clear();
    }

    /// Puts `question` to the person through `asker` and waits for the answer.
    async fn ask(
        &self,
        ctx: &ToolContext,
        asker: mpsc::Sender<Event>,
        question: String,
        choices: Vec<String>,
    ) -> Result<Outcome, ToolError> {
        let id = format!(
            "question-{}-{}",
            ctx.session_id,
            self.next_id.fetch_add(1, Ordering::Relaxed)
        );
        let (answer_tx, answer_rx) = oneshot::channel();
        self.pending().insert(id.clone(), answer_tx);
        let open = Open {
            questions: self,
            id: id.clone(),
            asker: asker.clone(),
            answer: None,
        };
        let event = Event::QuestionAsked {
            id,
            call_id: ctx.call_id.clone(),
            question,
            choices,
        };
        if asker.send(event).await.is_err() {
            return Ok(Outcome::Answered(QuestionAnswer::Unavailable));
        }
        let asked = Instant::now();
        let answer = tokio::select! {
            answer = answer_rx => answer.unwrap_or(QuestionAnswer::Unavailable),
            () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
            () = tokio::time::sleep(QUESTION_WAIT) => return Ok(Outcome::NoAnswerInTime),
        };
        let waited = u64::try_from(asked.elapsed().as_millis()).unwrap_or(u64::MAX);
        ctx.waited_ms.fetch_add(waited, Ordering::Relaxed);
        open.answered(answer.clone()).await;
        Ok(Outcome::Answered(answer))
    }
}

enum Outcome {
    Answered(QuestionAnswer),
    NoAnswerInTime,
}

/// A question in flight; dropped unanswered (interrupt, time limit), it is withdrawn.
struct Open<'a> {
    questions: &'a Questions,
    id: String,
    asker: mpsc::Sender<Event>,
    answer: Option<QuestionAnswer>,
}

impl Open<'_> {
    async fn answered(mut self, answer: QuestionAnswer) {
        self.answer = Some(answer.clone());
        let event = Event::QuestionResolved {
            id: self.id.clone(),
            answer,
        };
        let _ = self.asker.send(event).await;
    }
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        if self.answer.is_some() {
            return;
        }
        self.questions.pending().remove(&self.id);
        let _ = self.asker.try_send(Event::QuestionResolved {
            id: std::mem::take(&mut self.id),
            answer: QuestionAnswer::Dismissed,
        });
    }
}

pub struct AskUser;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskUserArgs {
    /// The question, complete on its own.
    pub question: String,
    /// Up to 9 short answers to pick from; the user may also type their own.
    #[serde(default)]
    pub choices: Vec<String>,
}

impl TypedTool for AskUser {
    type Args = AskUserArgs;
    const NAME: &'static str = "ask_user";
    const DESCRIPTION: &'static str = "Ask the user a question and wait for the answer. Only \
        when you cannot go on well without their decision.";
    const MUTATES: bool = false;
    // A question waits up to its own limit for the person.
    const OWN_TIME_LIMIT: bool = true;

    async fn run(&self, args: AskUserArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let (question, choices) = checked(args)?;
        let outcome = match ctx.approvals.question_asker() {
            Ok(asker) => {
                let questions = ctx.approvals.questions();
                questions.ask(ctx, asker, question, choices).await?
            }
            Err(unattended) => return Ok(nobody_there(unattended.as_deref())),
        };
        Ok(match outcome {
            Outcome::Answered(QuestionAnswer::Text { text }) => {
                format!("The user answered: {text}")
            }
            Outcome::Answered(QuestionAnswer::Dismissed) => "The user closed the question \
                without answering. Go on with your best judgement, or ask in your reply."
                .to_string(),
            Outcome::Answered(QuestionAnswer::Unavailable) => {
                nobody_there(Some("this front end cannot put questions to the user"))
            }
            Outcome::NoAnswerInTime => format!(
                "No answer came within {} minutes. Go on with your best judgement and say in \
                 your reply what you assumed.",
                QUESTION_WAIT.as_secs() / 60
            ),
        })
    }
}

/// What the model is told when nobody can answer (`why`, when the session runs unattended).
fn nobody_there(why: Option<&str>) -> String {
    let why = why.unwrap_or("`mnemo run` has no one to ask");
    format!(
        "No one can answer here ({why}). Go on with your best judgement and say in your reply \
         what you assumed."
    )
}

/// The question and its choices, trimmed, or what is wrong with them.
fn checked(args: AskUserArgs) -> Result<(String, Vec<String>), ToolError> {
    let invalid = |message: String| ToolError::InvalidArguments {
        tool: AskUser::NAME.to_string(),
        message,
    };
    let question = args.question.trim().to_string();
    if question.is_empty() {
        return Err(invalid("`question` is empty".into()));
    }
    if question.chars().count() > MAX_QUESTION_CHARS {
        return Err(invalid(format!(
            "`question` is longer than {MAX_QUESTION_CHARS} characters"
        )));
    }
    if args.choices.len() > MAX_CHOICES {
        return Err(invalid(format!(
            "{} choices given; offer at most {MAX_CHOICES}",
            args.choices.len()
        )));
    }
    let mut choices = Vec::with_capacity(args.choices.len());
    for (n, choice) in args.choices.iter().enumerate() {
        let choice = choice.trim();
        if choice.is_empty() || choice.chars().count() > MAX_CHOICE_CHARS {
            return Err(invalid(format!(
                "choice {} must have 1 to {MAX_CHOICE_CHARS} characters",
                n + 1
            )));
        }
        choices.push(choice.to_string());
    }
    Ok((question, choices))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Tool;
    use crate::tools::builtin::test_support::{TestResult, context, error_text, workspace};
    use serde_json::json;

    #[tokio::test]
    async fn a_question_goes_to_the_front_end_and_the_answer_comes_back() -> TestResult {
        let (_dir, ws) = workspace()?;
        let ctx = context(&ws);
        let (tx, mut rx) = mpsc::channel(8);
        ctx.approvals.attach(tx);
        ctx.approvals.enable_questions();
        let answer = async {
            let Some(Event::QuestionAsked {
                id,
                question,
                choices,
                ..
            }) = rx.recv().await
            else {
                panic!("no question");
            };
            assert_eq!(question, "Which one?");
            assert_eq!(choices, ["red", "blue"]);
            let text = QuestionAnswer::Text {
                text: "blue".into(),
            };
            assert!(ctx.approvals.questions().resolve(&id, text));
            let Some(Event::QuestionResolved { id: closed, .. }) = rx.recv().await else {
                panic!("the question was not closed");
            };
            assert_eq!(closed, id);
        };
        let input = json!({"question": " Which one? ", "choices": ["red", " blue"]});
        let (result, ()) = tokio::join!(AskUser.call(input, &ctx), answer);
        assert_eq!(result?, "The user answered: blue");
        Ok(())
    }

    #[tokio::test]
    async fn an_interrupt_withdraws_the_question() -> TestResult {
        let (_dir, ws) = workspace()?;
        let ctx = context(&ws);
        let (tx, mut rx) = mpsc::channel(8);
        ctx.approvals.attach(tx);
        ctx.approvals.enable_questions();
        let interrupt = async {
            let Some(Event::QuestionAsked { id, .. }) = rx.recv().await else {
                panic!("no question");
            };
            ctx.cancel.cancel();
            id
        };
        let (result, id) = tokio::join!(AskUser.call(json!({"question": "Go?"}), &ctx), interrupt);
        assert!(matches!(result, Err(ToolError::Cancelled)));
        let Some(Event::QuestionResolved { id: closed, answer }) = rx.recv().await else {
            panic!("the question was not withdrawn");
        };
        assert_eq!(
            (closed.as_str(), answer),
            (id.as_str(), QuestionAnswer::Dismissed)
        );
        assert!(
            !ctx.approvals
                .questions()
                .resolve(&id, QuestionAnswer::Dismissed)
        );
        Ok(())
    }

    #[tokio::test]
    async fn without_anyone_to_ask_the_model_hears_so_at_once() -> TestResult {
        let (_dir, ws) = workspace()?;
        let ctx = context(&ws);
        let (tx, _rx) = mpsc::channel(8);
        ctx.approvals.attach(tx);
        let said = AskUser.call(json!({"question": "Go?"}), &ctx).await?;
        assert!(said.starts_with("No one can answer here"), "{said}");
        ctx.approvals.run_unattended("a scheduled job");
        let said = AskUser.call(json!({"question": "Go?"}), &ctx).await?;
        assert!(said.contains("(a scheduled job)"), "{said}");
        Ok(())
    }

    #[tokio::test]
    async fn bad_questions_are_refused_with_what_is_wrong() -> TestResult {
        let (_dir, ws) = workspace()?;
        let ctx = context(&ws);
        let empty = error_text(AskUser.call(json!({"question": "  "}), &ctx).await);
        assert!(empty.contains("`question` is empty"), "{empty}");
        let many: Vec<String> = (0..10).map(|n| n.to_string()).collect();
        let input = json!({"question": "Which?", "choices": many});
        let too_many = error_text(AskUser.call(input, &ctx).await);
        assert!(too_many.contains("at most 9"), "{too_many}");
        let input = json!({"question": "Which?", "choices": ["a", ""]});
        let blank = error_text(AskUser.call(input, &ctx).await);
        assert!(blank.contains("choice 2"), "{blank}");
        Ok(())
    }
}

#[cfg(test)]
mod schema_cost {
    use super::*;
    use crate::tools::Tool;

    /// The tool's spec rides in every request: it must stay small.
    #[test]
    fn the_spec_costs_at_most_130_tokens() -> Result<(), Box<dyn std::error::Error>> {
        let spec = AskUser.spec();
        let json = serde_json::json!({
            "name": spec.name,
            "description": spec.description,
            "input_schema": *spec.input_schema,
        })
        .to_string();
        let tokens = tiktoken_rs::o200k_base()?.encode_ordinary(&json).len();
        println!("ask_user spec: {} bytes, {tokens} tokens", json.len());
        assert!(tokens <= 130, "{tokens} tokens");
        Ok(())
    }
}
