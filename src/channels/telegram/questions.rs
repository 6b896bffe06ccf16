//! The approval questions open in a chat: the key their buttons carry, the message showing
//! them, and their deadline. A question unanswered by its deadline is a denial. Pure: the chat
//! sends the answers and edits the messages.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// The session's id for it.
    pub approval: String,
    pub message: i64,
    /// What the message shows (HTML), kept to add the outcome under it.
    pub html: String,
    pub deadline: Instant,
    /// Denied for want of an answer; the message still waits for the resolution.
    pub timed_out: bool,
}

#[derive(Debug)]
pub struct Questions {
    open: HashMap<u64, Question>,
    last_key: u64,
    timeout: Duration,
}

impl Questions {
    pub fn new(timeout: Duration) -> Self {
        Self {
            open: HashMap::new(),
            last_key: 0,
            timeout,
        }
    }

    /// A key for the next question's buttons (short: button data holds 64 bytes).
    pub fn next_key(&mut self) -> u64 {
        self.last_key += 1;
        self.last_key
    }

    /// Question `key`, shown as `message` from `now` on.
    pub fn open(&mut self, key: u64, approval: String, message: i64, html: String, now: Instant) {
        let deadline = now + self.timeout;
        let question = Question {
            approval,
            message,
            html,
            deadline,
            timed_out: false,
        };
        self.open.insert(key, question);
    }

    /// The approval a button of question `key` answers, while it can be answered.
    pub fn answerable(&self, key: u64) -> Option<&str> {
        let question = self.open.get(&key).filter(|q| !q.timed_out)?;
        Some(&question.approval)
    }

    /// The approvals whose time ran out by `now` (each once).
    pub fn expire(&mut self, now: Instant) -> Vec<String> {
        self.open
            .values_mut()
            .filter(|q| !q.timed_out && q.deadline <= now)
            .map(|q| {
                q.timed_out = true;
                q.approval.clone()
            })
            .collect()
    }

    /// The question of `approval`, closed now that the session resolved it.
    pub fn resolve(&mut self, approval: &str) -> Option<Question> {
        let key = self
            .open
            .iter()
            .find_map(|(key, q)| (q.approval == approval).then_some(*key))?;
        self.open.remove(&key)
    }

    /// The next deadline of a question still waiting.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.open
            .values()
            .filter(|q| !q.timed_out)
            .map(|q| q.deadline)
            .min()
    }

    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }

    pub fn clear(&mut self) {
        self.open.clear();
    }

    /// "10 min", "45 s": how long a question waits, as the chat is told.
    pub fn timeout_text(&self) -> String {
        let secs = self.timeout.as_secs();
        match secs % 60 {
            0 if secs > 0 => format!("{} min", secs / 60),
            _ => format!("{secs} s"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_question_left_unanswered_for_ten_minutes_is_denied_once() {
        let mut questions = Questions::new(Duration::from_secs(600));
        let key = questions.next_key();
        questions.open(key, "approval-1".into(), 7, "❓".into(), Instant::now());
        assert_eq!(questions.answerable(key), Some("approval-1"));

        tokio::time::advance(Duration::from_secs(599)).await;
        assert!(questions.expire(Instant::now()).is_empty(), "not yet");
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(questions.expire(Instant::now()), ["approval-1"]);
        assert!(questions.expire(Instant::now()).is_empty(), "denied once");
        assert_eq!(
            questions.answerable(key),
            None,
            "its buttons no longer answer"
        );
        assert_eq!(questions.next_deadline(), None);

        let closed = questions.resolve("approval-1");
        assert_eq!(closed.map(|q| (q.message, q.timed_out)), Some((7, true)));
        assert!(questions.is_empty());
        assert_eq!(questions.timeout_text(), "10 min");
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_in_time_closes_the_question_without_a_denial() {
        let mut questions = Questions::new(Duration::from_secs(45));
        let key = questions.next_key();
        questions.open(key, "approval-2".into(), 9, "❓".into(), Instant::now());
        tokio::time::advance(Duration::from_secs(44)).await;
        let closed = questions.resolve("approval-2");
        assert_eq!(closed.map(|q| q.timed_out), Some(false));
        tokio::time::advance(Duration::from_secs(10)).await;
        assert!(questions.expire(Instant::now()).is_empty());
        assert_eq!(questions.timeout_text(), "45 s");
    }
}
