//! The range of every number in a config layer. TOML accepts `inf`, `nan`, negative and
//! enormous values that a `Duration` or a limit cannot hold (a repository's
//! `connect_timeout_secs = inf` used to crash mnemo), so each file is checked on its own and
//! the error names the file and the key.

use super::layers::ConfigError;
use super::{Config, ModelConfig};

/// The longest wait any setting may ask for: a week.
const MAX_WAIT_SECS: f64 = 7.0 * 24.0 * 3600.0;
/// The largest count (steps, attempts, depths, messages) that still means something.
const MAX_COUNT: u64 = 1_000_000;
/// The largest context window a model may claim: a billion tokens.
const MAX_CONTEXT_WINDOW: u64 = 1_000_000_000;

/// One number out of its range: the dotted key and what is wrong.
struct OutOfRange {
    key: String,
    message: String,
}

/// Checks every number of `layer` (one file, parsed alone); `origin` names the file.
pub(super) fn check(layer: &Config, origin: &str) -> Result<(), ConfigError> {
    let mut found = Vec::new();
    numbers(layer, &mut found);
    match found.into_iter().next() {
        None => Ok(()),
        Some(bad) => Err(ConfigError::Invalid {
            origin: origin.to_string(),
            key: bad.key,
            message: bad.message,
        }),
    }
}

fn numbers(c: &Config, found: &mut Vec<OutOfRange>) {
    let r = &c.retry;
    wait(found, "retry.base_delay_secs", r.base_delay_secs, 0.0);
    wait(found, "retry.max_delay_secs", r.max_delay_secs, 0.0);
    wait(
        found,
        "retry.connect_timeout_secs",
        r.connect_timeout_secs,
        0.1,
    );
    wait(
        found,
        "retry.first_byte_timeout_secs",
        r.first_byte_timeout_secs,
        0.1,
    );
    wait(found, "retry.idle_timeout_secs", r.idle_timeout_secs, 0.1);
    whole_wait(found, "retry.cooldown_secs", r.cooldown_secs);
    whole_wait(found, "retry.auth_cooldown_secs", r.auth_cooldown_secs);
    count(found, "retry.attempts", u64::from(r.attempts), 1);

    let a = &c.agent;
    count(found, "agent.max_steps", u64::from(a.max_steps), 1);
    whole_wait(found, "agent.tool_timeout_secs", a.tool_timeout_secs);
    count(found, "agent.repeat_limit", u64::from(a.repeat_limit), 1);
    count(
        found,
        "agent.max_agent_depth",
        u64::from(a.max_agent_depth),
        0,
    );
    count(
        found,
        "agent.max_continuations",
        u64::from(a.max_continuations),
        0,
    );
    count(
        found,
        "agent.checkpoint_every",
        u64::from(a.checkpoint_every),
        0,
    );
    if !(a.compact_threshold > 0.0 && a.compact_threshold <= 1.0) {
        found.push(OutOfRange {
            key: "agent.compact_threshold".into(),
            message: format!(
                "{} is not a share of the context: give a number above 0 and at most 1, such \
                 as 0.8",
                a.compact_threshold
            ),
        });
    }

    count(
        found,
        "memory.max_active_messages",
        c.memory.max_active_messages as u64,
        1,
    );
    count(found, "dream.min_entries", c.dream.min_entries as u64, 0);
    wait(
        found,
        "dream.batch_limit_secs",
        c.dream.batch_limit_secs,
        0.0,
    );
    whole_wait(
        found,
        "telegram.approval_timeout_secs",
        c.telegram.approval_timeout_secs,
    );
    whole_wait(
        found,
        "telegram.poll_timeout_secs",
        c.telegram.poll_timeout_secs,
    );
    let s = &c.schedules;
    count(
        found,
        "schedules.max_per_workspace",
        u64::from(s.max_per_workspace),
        0,
    );
    whole_wait(found, "schedules.min_interval_secs", s.min_interval_secs);
    count(found, "schedules.max_running", u64::from(s.max_running), 1);
    count(found, "schedules.keep_runs", u64::from(s.keep_runs), 1);
    // Memory beyond a pebibyte per command is a typo, and MiB to bytes must not overflow.
    if c.sandbox.max_memory_mb > 1 << 30 {
        found.push(OutOfRange {
            key: "sandbox.max_memory_mb".into(),
            message: format!(
                "{} MiB is more memory than any machine has; give MiB (0: half of this \
                 machine's memory)",
                c.sandbox.max_memory_mb
            ),
        });
    }
    for (name, model) in &c.models {
        model_numbers(name, model, found);
    }
}

fn model_numbers(name: &str, model: &ModelConfig, found: &mut Vec<OutOfRange>) {
    if let Some(window) = model.context_window
        && !(1..=MAX_CONTEXT_WINDOW).contains(&window)
    {
        found.push(OutOfRange {
            key: format!("models.{name}.context_window"),
            message: format!("{window} tokens is not a context window (1 to {MAX_CONTEXT_WINDOW})"),
        });
    }
    if model.max_output_tokens == Some(0) {
        found.push(OutOfRange {
            key: format!("models.{name}.max_output_tokens"),
            message: "must be at least 1".into(),
        });
    }
    let p = &model.price;
    for (field, value) in [
        ("input", p.input),
        ("output", p.output),
        ("cache_read", p.cache_read),
        ("cache_write", p.cache_write),
    ] {
        if !(value.is_finite() && value >= 0.0) {
            found.push(OutOfRange {
                key: format!("models.{name}.price.{field}"),
                message: format!(
                    "{value} is not a price: give US dollars per million tokens, 0 or more"
                ),
            });
        }
    }
}

/// A wait in (possibly fractional) seconds: finite, at least `min`, at most a week.
fn wait(found: &mut Vec<OutOfRange>, key: &str, value: f64, min: f64) {
    if value.is_finite() && (min..=MAX_WAIT_SECS).contains(&value) {
        return;
    }
    found.push(OutOfRange {
        key: key.into(),
        message: format!(
            "{value} is not a usable number of seconds: give {min} to {MAX_WAIT_SECS} (a week)"
        ),
    });
}

/// A wait in whole seconds: at most a week.
fn whole_wait(found: &mut Vec<OutOfRange>, key: &str, value: u64) {
    wait(found, key, value as f64, 0.0);
}

fn count(found: &mut Vec<OutOfRange>, key: &str, value: u64, min: u64) {
    if (min..=MAX_COUNT).contains(&value) {
        return;
    }
    found.push(OutOfRange {
        key: key.into(),
        message: format!("{value} is out of range: give {min} to {MAX_COUNT}"),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> String {
        let layer: Config = toml::from_str(text).unwrap_or_else(|e| panic!("{e}"));
        match check(&layer, "/ws/.mnemo/config.toml") {
            Ok(()) => String::new(),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn defaults_and_ordinary_values_pass() {
        assert_eq!(error(""), "");
        assert_eq!(error(super::super::DEFAULT_TOML), "");
        assert_eq!(
            error("[retry]\nconnect_timeout_secs = 2.5\n[agent]\ncompact_threshold = 1.0\n"),
            ""
        );
    }

    #[test]
    fn infinite_nan_negative_and_absurd_numbers_name_the_file_and_key() {
        for (text, key) in [
            (
                "[retry]\nconnect_timeout_secs = inf",
                "retry.connect_timeout_secs",
            ),
            (
                "[retry]\nidle_timeout_secs = nan",
                "retry.idle_timeout_secs",
            ),
            ("[retry]\nbase_delay_secs = -1.0", "retry.base_delay_secs"),
            (
                "[retry]\ncooldown_secs = 9223372036854775807",
                "retry.cooldown_secs",
            ),
            (
                "[agent]\ncompact_threshold = nan",
                "agent.compact_threshold",
            ),
            (
                "[agent]\ntool_timeout_secs = 99999999999",
                "agent.tool_timeout_secs",
            ),
            ("[dream]\nbatch_limit_secs = -inf", "dream.batch_limit_secs"),
            ("[models.x]\nprice.input = -2.0", "models.x.price.input"),
            ("[models.x]\ncontext_window = 0", "models.x.context_window"),
            ("[schedules]\nkeep_runs = 0", "schedules.keep_runs"),
        ] {
            let message = error(text);
            assert!(
                message.contains("/ws/.mnemo/config.toml"),
                "{text}: {message}"
            );
            assert!(
                message.contains(&format!("key `{key}`")),
                "{text}: {message}"
            );
        }
    }
}
