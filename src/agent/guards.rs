//! Guards that stop a turn from running away: repeated identical tool calls.

use serde_json::Value;

/// Counts identical consecutive tool calls (same name, same arguments) across steps.
#[derive(Debug)]
pub struct RepeatGuard {
    limit: u32,
    last: Option<(String, String)>,
    count: u32,
}

impl RepeatGuard {
    pub fn new(limit: u32) -> Self {
        Self {
            limit: limit.max(1),
            last: None,
            count: 0,
        }
    }

    /// Records a call; true when it completes `limit` identical calls in a row.
    pub fn observe(&mut self, name: &str, input: &Value) -> bool {
        // Keys sorted, so that equal arguments in another order serialize equally (serde_json
        // keeps objects in insertion order once any crate asks for `preserve_order`).
        let args = sorted(input).to_string();
        match &self.last {
            Some((n, a)) if n == name && *a == args => self.count += 1,
            _ => {
                self.last = Some((name.to_string(), args));
                self.count = 1;
            }
        }
        self.count >= self.limit
    }
}

/// `value` with every object's keys in sorted order.
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut fields: Vec<(&String, &Value)> = map.iter().collect();
            fields.sort_by(|a, b| a.0.cmp(b.0));
            Value::Object(
                fields
                    .into_iter()
                    .map(|(key, value)| (key.clone(), sorted(value)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_third_identical_call_in_a_row_trips_the_guard() {
        let mut guard = RepeatGuard::new(3);
        assert!(!guard.observe("read_file", &json!({"path": "a"})));
        assert!(!guard.observe("read_file", &json!({"path": "a"})));
        assert!(guard.observe("read_file", &json!({"path": "a"})));
    }

    #[test]
    fn a_different_call_in_between_resets_the_count() {
        let mut guard = RepeatGuard::new(3);
        assert!(!guard.observe("read_file", &json!({"path": "a"})));
        assert!(!guard.observe("read_file", &json!({"path": "a"})));
        assert!(!guard.observe("read_file", &json!({"path": "b"})));
        assert!(!guard.observe("read_file", &json!({"path": "a"})));
        assert!(!guard.observe("list_dir", &json!({"path": "a"})));
    }

    #[test]
    fn argument_order_does_not_hide_a_repeat() {
        let mut guard = RepeatGuard::new(2);
        assert!(!guard.observe("grep", &json!({"pattern": "x", "path": "."})));
        let reordered: Value =
            serde_json::from_str(r#"{"path":".","pattern":"x"}"#).unwrap_or_default();
        assert!(guard.observe("grep", &reordered));
    }
}
