//! Running a capability: its code under its interpreter, as a command in the session's
//! sandbox and under its approval mode, with the arguments as JSON on stdin. The answer is what
//! it printed on stdout (JSON or text); a failure carries its exit code, stderr and stdout.

use std::os::unix::process::ExitStatusExt;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::Value;

use super::process::{self, SandboxSlot};
use super::truncate::MAX_OUTPUT_BYTES;
use super::{Tool, ToolContext, ToolError};
use crate::memory::Store;
use crate::memory::capabilities::Capability;
use crate::protocol::ApprovalAction;
use crate::sandbox::Sandbox;
use crate::sandbox::approval::Action;
use crate::text::head_tail;

/// Most a capability may print on stdout; more is an error, not a silently cut answer. A
/// little under `MAX_OUTPUT_BYTES`: the capture keeps output whole only up to a few hundred
/// bytes less than that, and cuts the middle out of anything longer.
pub const MAX_RESULT_BYTES: usize = MAX_OUTPUT_BYTES - 1024;

/// Runs the `cap_*` tools of one session.
pub struct CapabilityRunner {
    store: Store,
    sandbox: SandboxSlot,
}

impl CapabilityRunner {
    pub fn new(store: Store) -> Self {
        Self {
            store,
            sandbox: SandboxSlot::default(),
        }
    }

    /// The sandbox a call runs in (shown when the call is put to the user).
    pub fn sandbox(&self, ctx: &ToolContext) -> Result<Sandbox, ToolError> {
        self.sandbox.get(ctx, None)
    }

    /// Version `version` of capability `name`.
    async fn version(&self, name: &str, version: u32) -> Result<Capability, ToolError> {
        let wanted = name.to_string();
        self.store
            .call(move |db| db.capability_version(&wanted, version))
            .await
            .map_err(|e| ToolError::Failed(e.to_string()))?
            .ok_or_else(|| {
                ToolError::Failed(format!(
                    "capability `{name}` (version {version}) was removed; call \
                     capability_query to find what exists now"
                ))
            })
    }

    /// Runs version `version` of capability `name` with `input`, and counts the use.
    pub async fn call(
        &self,
        name: &str,
        version: u32,
        input: Value,
        ctx: &ToolContext,
    ) -> Result<String, ToolError> {
        let capability = self.version(name, version).await?;
        let sandbox = self.sandbox(ctx)?;
        let output = execute(&sandbox, &capability, &input, ctx.timeout, ctx).await;
        let used = name.to_string();
        // Counting a use is bookkeeping: a failure to write it must not fail the call.
        let _ = self.store.call(move |db| db.touch_capability(&used)).await;
        output
    }
}

/// One offered `cap_*` tool: the capability and version the tool list named.
pub struct CapabilityTool {
    /// The `cap_*` name the model calls.
    tool_name: String,
    /// The capability it runs.
    capability: String,
    version: u32,
    runner: Arc<CapabilityRunner>,
}

impl CapabilityTool {
    pub fn new(tool: &str, name: &str, version: u32, runner: Arc<CapabilityRunner>) -> Self {
        Self {
            tool_name: tool.to_string(),
            capability: name.to_string(),
            version,
            runner,
        }
    }
}

impl Tool for CapabilityTool {
    fn name(&self) -> &str {
        &self.tool_name
    }

    fn description(&self) -> &str {
        "a stored capability"
    }

    fn input_schema(&self) -> Value {
        serde_json::json!({"type": "object"})
    }

    fn mutates(&self) -> bool {
        true
    }

    /// A capability runs like a shell command in the session's sandbox.
    fn approval_action(&self, _input: &Value) -> Option<Action> {
        Some(Action::Command(None))
    }

    fn approval_preview<'a>(
        &'a self,
        input: &'a Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ApprovalAction, ToolError>> {
        Box::pin(async move {
            let capability = self.runner.version(&self.capability, self.version).await?;
            Ok(ApprovalAction::Command {
                command: question(&self.tool_name, &capability, input),
                escalation: None,
                sandbox: self.runner.sandbox(ctx)?.config().describe(),
            })
        })
    }

    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(self.runner.call(&self.capability, self.version, input, ctx))
    }
}

/// The command a person is asked to allow: the tool, which version and the hash of its code
/// (`mnemo capabilities show` prints both), and the arguments. "Allow for this session" covers
/// that version's code only: another version, or other code under the same name, asks again.
fn question(tool: &str, capability: &Capability, input: &Value) -> String {
    format!(
        "{tool} v{}-sha256:{} {input}",
        capability.version,
        crate::capabilities::code_hash(&capability.code)
    )
}

/// The bash line that runs `code` under `language` (validated: bash, python3 or node).
pub fn script(language: &str, code: &str) -> String {
    let quoted = format!("'{}'", code.replace('\'', r"'\''"));
    match language {
        "python3" => format!("exec python3 -c {quoted}"),
        "node" => format!("exec node -e {quoted}"),
        _ => format!("exec bash -c {quoted} capability"),
    }
}

/// Runs `capability` with `input` in `sandbox` for at most `limit`.
pub async fn execute(
    sandbox: &Sandbox,
    capability: &Capability,
    input: &Value,
    limit: Duration,
    ctx: &ToolContext,
) -> Result<String, ToolError> {
    if !input.is_object() {
        return Err(ToolError::InvalidArguments {
            tool: crate::capabilities::tool_name(&capability.name),
            message: format!("the arguments must be one JSON object, not {input}"),
        });
    }
    let line = script(&capability.language, &capability.code);
    let stdin = serde_json::to_vec(input).unwrap_or_default();
    let finished = process::run(sandbox, &line, Some(stdin), limit, ctx).await?;
    let status = finished.status;
    if !status.success() {
        let outcome = match status.code() {
            Some(code) => format!("exit code {code}"),
            None => format!("killed by signal {}", status.signal().unwrap_or(0)),
        };
        let mut message = format!("the capability failed ({outcome})");
        for (label, text) in [("stderr", &finished.stderr), ("stdout", &finished.stdout)] {
            if !text.trim().is_empty() {
                message.push_str(&format!("\n{label}:\n{}", text.trim_end()));
            }
        }
        if finished.note.is_some() {
            message.push_str(
                "\n[sandbox] this looks like the sandbox's doing: a capability runs in the \
                 session's sandbox (no writes outside the workspace, no network unless the \
                 session allows it) and cannot ask for more; do such work with the shell tool",
            );
        }
        return Err(ToolError::Failed(head_tail(&message, MAX_OUTPUT_BYTES)));
    }
    if finished.stdout_bytes > MAX_RESULT_BYTES {
        return Err(ToolError::Failed(format!(
            "the capability printed {} bytes; a result may have at most {MAX_RESULT_BYTES}. \
             Make it print less (a summary, or write large data to a file in the workspace)",
            finished.stdout_bytes
        )));
    }
    answer(&finished.stdout)
}

/// Stdout as the result: text as it is, JSON when it looks like JSON (and then it must be).
fn answer(stdout: &str) -> Result<String, ToolError> {
    let text = stdout.trim();
    if text.is_empty() {
        return Ok("(no output)".into());
    }
    if text.starts_with(['{', '[']) {
        return match serde_json::from_str::<Value>(text) {
            Ok(value) => Ok(value.to_string()),
            Err(err) => Err(ToolError::Failed(format!(
                "the capability printed malformed JSON ({err}); print one JSON value or plain \
                 text. It printed:\n{}",
                crate::text::clip(text, 400)
            ))),
        };
    }
    Ok(text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_is_quoted_whole_for_its_interpreter() {
        assert_eq!(
            script("bash", "echo 'hi'"),
            r"exec bash -c 'echo '\''hi'\''' capability"
        );
        assert_eq!(script("python3", "print(1)"), "exec python3 -c 'print(1)'");
        assert_eq!(script("node", "x"), "exec node -e 'x'");
    }

    #[test]
    fn a_question_names_version_and_code_so_a_grant_covers_that_code_only() {
        let capability = |version: u32, code: &str| Capability {
            name: "sha256-hash".into(),
            version,
            description: String::new(),
            tags: Vec::new(),
            input_schema: serde_json::json!({}),
            language: "bash".into(),
            code: code.into(),
            examples: Vec::new(),
            session_id: None,
            turn: None,
            created_at: 0,
            access_count: 0,
            last_access: None,
            pinned: false,
        };
        let input = serde_json::json!({"text": "hi"});
        let asked = question("cap_sha256_hash", &capability(2, "sha256sum"), &input);
        let hash = crate::capabilities::code_hash("sha256sum");
        assert_eq!(
            asked,
            format!("cap_sha256_hash v2-sha256:{hash} {{\"text\":\"hi\"}}")
        );
        let grant = |c: &Capability| {
            crate::sandbox::approval::command_grant(&question("cap_sha256_hash", c, &input))
        };
        assert!(grant(&capability(2, "sha256sum")).is_ok());
        assert_eq!(
            grant(&capability(2, "sha256sum")),
            grant(&capability(2, "sha256sum"))
        );
        assert_ne!(
            grant(&capability(2, "sha256sum")),
            grant(&capability(3, "sha256sum"))
        );
        assert_ne!(
            grant(&capability(2, "sha256sum")),
            grant(&capability(2, "rm -rf ~"))
        );
    }

    #[test]
    fn stdout_is_text_or_well_formed_json() {
        assert_eq!(answer("  hello\n").ok().as_deref(), Some("hello"));
        assert_eq!(answer("").ok().as_deref(), Some("(no output)"));
        assert_eq!(answer("{\"a\": 1}\n").ok().as_deref(), Some("{\"a\":1}"));
        let bad = answer("{not json").map_err(|e| e.to_string());
        assert!(bad.is_err_and(|e| e.contains("malformed JSON")));
    }
}
