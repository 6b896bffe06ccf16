//! The agent's visible plan: the model keeps an ordered list of steps with `todo`, front ends
//! show it live (`Event::TodoUpdated`), and while steps are open it rides with the working
//! checkpoint at the end of every request, so it costs no prompt block of its own and
//! survives compaction. It is kept with the session, so a resume shows it again.

use schemars::JsonSchema;
use serde::Deserialize;

use super::Session;
use crate::memory::StoreError;
use crate::protocol::{Event, TodoItem, TodoStatus};
use crate::tools::{ToolContext, ToolError, TypedTool};

/// Most steps a plan holds: a plan longer than this is no longer a plan to glance at.
const MAX_ITEMS: usize = 30;
/// Longest step kept, in characters.
const MAX_STEP_CHARS: usize = 200;

pub struct Todo;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TodoArgs {
    /// Every step in order, replacing the previous plan; at most one in progress.
    pub items: Vec<TodoItem>,
}

impl TypedTool for Todo {
    type Args = TodoArgs;
    const NAME: &'static str = "todo";
    const DESCRIPTION: &'static str = "Show the person your plan for a task of several steps \
        and keep it current as you work (send the whole list each time).";
    const MUTATES: bool = false;

    async fn run(&self, args: TodoArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        let items = checked(args.items)?;
        let done = items
            .iter()
            .filter(|i| i.status == TodoStatus::Done)
            .count();
        Ok(match items.len() {
            0 => "plan cleared".into(),
            n => format!("plan updated: {done} of {n} steps done"),
        })
    }
}

/// The items as they are kept: steps trimmed and cut, and the plan's rules enforced.
fn checked(items: Vec<TodoItem>) -> Result<Vec<TodoItem>, ToolError> {
    if items.len() > MAX_ITEMS {
        return Err(ToolError::Failed(format!(
            "a plan holds at most {MAX_ITEMS} steps; merge some"
        )));
    }
    let in_progress = items
        .iter()
        .filter(|i| i.status == TodoStatus::InProgress)
        .count();
    if in_progress > 1 {
        return Err(ToolError::Failed(
            "only one step can be in progress at a time".into(),
        ));
    }
    items
        .into_iter()
        .map(|item| {
            let step = crate::text::clip(item.step.trim(), MAX_STEP_CHARS);
            match step.is_empty() {
                true => Err(ToolError::Failed("a step has no text".into())),
                false => Ok(TodoItem { step, ..item }),
            }
        })
        .collect()
}

/// The plan as it rides at the end of a request: only while a step is open.
pub(super) fn tail_text(items: &[TodoItem]) -> Option<String> {
    if items.iter().all(|i| i.status == TodoStatus::Done) {
        return None;
    }
    let lines: Vec<String> = items
        .iter()
        .map(|i| format!("{} {}", i.status.mark(), i.step))
        .collect();
    Some(format!("[Plan]\n{}", lines.join("\n")))
}

/// The plan stored with a session, as [`Session::note_todo`] wrote it.
pub(super) fn from_stored(value: Option<&str>) -> Vec<TodoItem> {
    value
        .and_then(|v| serde_json::from_str(v).ok())
        .unwrap_or_default()
}

impl Session {
    /// Takes the plan of the last step's successful `todo` call, keeps it with the session
    /// and tells the front ends.
    pub(super) async fn note_todo(&mut self) -> Result<(), StoreError> {
        let last = self
            .succeeded_calls(Todo::NAME)
            .into_iter()
            .filter_map(|input| serde_json::from_value::<TodoArgs>(input).ok())
            .filter_map(|args| checked(args.items).ok())
            .next_back();
        match last {
            Some(items) if items != self.todo => self.set_todo(items).await,
            _ => Ok(()),
        }
    }

    /// A new task starts without the previous task's finished plan; an unfinished one stays
    /// until the model updates or clears it.
    pub(super) async fn drop_finished_todo(&mut self) -> Result<(), StoreError> {
        match !self.todo.is_empty() && tail_text(&self.todo).is_none() {
            true => self.set_todo(Vec::new()).await,
            false => Ok(()),
        }
    }

    async fn set_todo(&mut self, items: Vec<TodoItem>) -> Result<(), StoreError> {
        self.todo = items;
        if self.is_stored() {
            let key = crate::memory::sessions::todo_key(&self.id);
            let value = serde_json::to_string(&self.todo).unwrap_or_default();
            self.services
                .store
                .call(move |db| db.kv_set(&key, &value))
                .await?;
        }
        let items = self.todo.clone();
        self.emit(Event::TodoUpdated { items }).await;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(step: &str, status: TodoStatus) -> TodoItem {
        TodoItem {
            step: step.into(),
            status,
        }
    }

    #[test]
    fn a_plan_with_two_steps_in_progress_or_an_empty_step_is_refused() {
        let two = vec![
            item("read", TodoStatus::InProgress),
            item("fix", TodoStatus::InProgress),
        ];
        assert!(checked(two).is_err());
        assert!(checked(vec![item("  ", TodoStatus::Pending)]).is_err());
        let long = vec![item("x", TodoStatus::Pending); MAX_ITEMS + 1];
        assert!(checked(long).is_err());
        let kept = checked(vec![item(" read the parser ", TodoStatus::Done)]);
        assert_eq!(
            kept.ok(),
            Some(vec![item("read the parser", TodoStatus::Done)])
        );
    }

    #[test]
    fn the_tool_adds_little_to_every_request() {
        use crate::tools::Tool;
        assert!(crate::llm::tokens::wait_ready());
        let spec = Todo.spec();
        let sent = serde_json::json!({
            "name": spec.name,
            "description": spec.description,
            "input_schema": *spec.input_schema,
        })
        .to_string();
        let tokens = crate::llm::tokens::estimate_text(&sent);
        assert!(tokens <= 150, "{tokens} tokens: {sent}");
    }

    #[test]
    fn the_plan_rides_in_the_request_only_while_a_step_is_open() {
        let open = [
            item("read the parser", TodoStatus::Done),
            item("fix the bug", TodoStatus::InProgress),
            item("run the tests", TodoStatus::Pending),
        ];
        assert_eq!(
            tail_text(&open).as_deref(),
            Some("[Plan]\n[x] read the parser\n[>] fix the bug\n[ ] run the tests")
        );
        let finished = [item("read the parser", TodoStatus::Done)];
        assert_eq!(tail_text(&finished), None);
        assert_eq!(tail_text(&[]), None);
    }
}
