//! The fallback chain: the session's model first, then the configured fallbacks. Retryable
//! errors back off exponentially (honouring `retry-after`), a failing model cools down and is
//! skipped while it does, and the next model takes over. The chain is shared (`Arc`) so that
//! every session and sub-agent of a process respects the same cooldowns.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use super::Price;
use super::{Provider, ProviderError};

/// One model of the chain with what the agent needs to account for it.
#[derive(Clone)]
pub struct ChainModel {
    pub name: String,
    pub provider: Arc<dyn Provider>,
    pub context_window: u64,
    pub max_output_tokens: u32,
    pub price: Price,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Attempts per model before moving on.
    pub attempts: u32,
    pub base_delay: Duration,
    pub max_delay: Duration,
    /// Cooldown after rate limiting, overload or repeated server errors.
    pub cooldown: Duration,
    pub auth_cooldown: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            attempts: 3,
            base_delay: Duration::from_secs(2),
            max_delay: Duration::from_secs(30),
            cooldown: Duration::from_secs(60),
            auth_cooldown: Duration::from_secs(600),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `attempt` (1 = the first retry): `base` doubling up to
    /// `max`, with up to 25 % jitter either way so that clients do not retry in step, or
    /// exactly the server's `retry-after` when it gave one.
    pub fn backoff(&self, attempt: u32, retry_after: Option<Duration>, jitter: f64) -> Duration {
        let doubled = self
            .base_delay
            .saturating_mul(2u32.saturating_pow(attempt.saturating_sub(1)));
        let capped = doubled.min(self.max_delay);
        let factor = 1.0 + 0.25 * (jitter.clamp(0.0, 1.0) * 2.0 - 1.0);
        let jittered = capped.mul_f64(factor).min(self.max_delay);
        retry_after.unwrap_or(jittered)
    }
}

/// What the chain reports while it works, for `Event::Retry` and `Event::ModelFallback`.
#[derive(Debug, Clone, PartialEq)]
pub enum ChainNotice {
    Retry {
        model: String,
        attempt: u32,
        delay: Duration,
        reason: String,
    },
    Fallback {
        from: String,
        to: String,
        reason: String,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum ChainError {
    #[error("cancelled")]
    Cancelled,
    #[error("the context is too long for {model}: {message}")]
    ContextTooLong { model: String, message: String },
    #[error("every model failed: {}", .causes.join("; "))]
    Exhausted { causes: Vec<String> },
    /// The only model tried is served on this machine, and nothing answers there.
    #[error("{0}")]
    NotAnswering(String),
}

/// Until when each model rests after a failure, by model name. Chains built from one
/// `Cooldowns` (every chain of a process: the sessions', the sub-agents') share what they learn.
pub type Cooldowns = Arc<Mutex<HashMap<String, Instant>>>;

pub struct FallbackChain {
    models: Vec<ChainModel>,
    policy: RetryPolicy,
    cooling_until: Cooldowns,
}

impl FallbackChain {
    /// A chain with cooldowns of its own.
    pub fn new(models: Vec<ChainModel>, policy: RetryPolicy) -> Self {
        Self::sharing(models, policy, Cooldowns::default())
    }

    /// A chain that shares `cooldowns` with the other chains built from them.
    pub fn sharing(models: Vec<ChainModel>, policy: RetryPolicy, cooldowns: Cooldowns) -> Self {
        Self {
            models,
            policy,
            cooling_until: cooldowns,
        }
    }

    /// The session's own model.
    pub fn primary(&self) -> Option<&ChainModel> {
        self.models.first()
    }

    fn cooling(&self, name: &str) -> Option<Duration> {
        let now = Instant::now();
        let guard = self.cooling_until.lock().ok()?;
        guard
            .get(name)
            .filter(|until| **until > now)
            .map(|until| *until - now)
    }

    fn cool_down(&self, name: &str, err: &ProviderError) {
        let length = match err {
            ProviderError::Auth { .. } | ProviderError::QuotaExhausted { .. } => {
                self.policy.auth_cooldown
            }
            ProviderError::RateLimit {
                retry_after: Some(wait),
                ..
            } => (*wait).max(self.policy.cooldown),
            _ => self.policy.cooldown,
        };
        if let Ok(mut guard) = self.cooling_until.lock() {
            guard.insert(name.to_string(), Instant::now() + length);
        }
    }

    /// Starts one model call's walk down the chain.
    pub fn start(&self) -> ChainRun<'_> {
        ChainRun {
            chain: self,
            next_index: 0,
            attempt: 0,
            current: None,
            tried: false,
            causes: Vec::new(),
            not_answering: None,
        }
    }
}

/// What to do after a failed attempt.
#[derive(Debug)]
pub enum Decision {
    /// Wait `delay`, then try the same model again; report `notice` first.
    Retry {
        delay: Duration,
        notice: ChainNotice,
    },
    /// Give up on this model; ask `next_model` for the next one.
    NextModel,
    /// Stop: the caller must act (compact the context) before trying again.
    Stop(ChainError),
}

/// The state of one model call's walk down the chain. The caller drives it:
/// `next_model`, attempt, and on failure `failed`, until an attempt succeeds or
/// `next_model` has nothing left (then `exhausted` says why).
pub struct ChainRun<'a> {
    chain: &'a FallbackChain,
    next_index: usize,
    attempt: u32,
    current: Option<ChainModel>,
    /// Whether any model was tried; when all of them rest, the first is tried anyway.
    tried: bool,
    causes: Vec<String>,
    /// The words of the last local server that did not answer.
    not_answering: Option<String>,
}

impl ChainRun<'_> {
    /// The next model to try, skipping models that cool down, with a notice to report
    /// when it takes over from a model that failed.
    pub fn next_model(&mut self) -> Option<(ChainModel, Option<ChainNotice>)> {
        while let Some(model) = self.chain.models.get(self.next_index) {
            self.next_index += 1;
            if let Some(left) = self.chain.cooling(&model.name) {
                self.causes.push(format!(
                    "{} is cooling down for {} s after an earlier failure",
                    model.name,
                    left.as_secs()
                ));
                continue;
            }
            let notice = self.current.take().map(|from| ChainNotice::Fallback {
                from: from.name,
                to: model.name.clone(),
                reason: self.causes.last().cloned().unwrap_or_default(),
            });
            self.attempt = 1;
            self.tried = true;
            self.current = Some(model.clone());
            return Some((model.clone(), notice));
        }
        // Resting every model would fail the request without sending it; the rest is a
        // guess that the failure lasts, and the first model may well answer now.
        let first = self.chain.models.first().filter(|_| !self.tried)?.clone();
        self.tried = true;
        self.attempt = 1;
        self.current = Some(first.clone());
        Some((first, None))
    }

    /// Decides what follows a failed attempt of the current model.
    pub fn failed(&mut self, err: ProviderError) -> Decision {
        let Some(model) = self.current.clone() else {
            return Decision::NextModel;
        };
        if let ProviderError::ContextTooLong { message } = err {
            return Decision::Stop(ChainError::ContextTooLong {
                model: model.name,
                message,
            });
        }
        let retry_after = match &err {
            ProviderError::RateLimit { retry_after, .. } => *retry_after,
            _ => None,
        };
        let policy = &self.chain.policy;
        // A server that asks for a long pause is better answered by the next model.
        let too_long = retry_after.is_some_and(|wait| wait > policy.max_delay);
        if err.is_retryable() && self.attempt < policy.attempts && !too_long {
            let delay = policy.backoff(self.attempt, retry_after, fastrand::f64());
            self.attempt += 1;
            return Decision::Retry {
                delay,
                notice: ChainNotice::Retry {
                    model: model.name,
                    attempt: self.attempt,
                    delay,
                    reason: err.to_string(),
                },
            };
        }
        if err.is_retryable()
            || matches!(
                err,
                ProviderError::Auth { .. } | ProviderError::QuotaExhausted { .. }
            )
        {
            self.chain.cool_down(&model.name, &err);
        }
        if matches!(err, ProviderError::NotAnswering { .. }) {
            self.not_answering = Some(err.to_string());
        }
        self.causes.push(format!("{}: {err}", model.name));
        Decision::NextModel
    }

    /// Why every model failed.
    pub fn exhausted(self) -> ChainError {
        match (self.causes.len(), self.not_answering) {
            // One model, on this machine, not running: that alone is the news.
            (1, Some(words)) => ChainError::NotAnswering(words),
            _ => ChainError::Exhausted {
                causes: self.causes,
            },
        }
    }
}

#[cfg(test)]
#[path = "fallback_tests.rs"]
mod tests;
