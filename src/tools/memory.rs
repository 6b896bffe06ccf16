//! Tools that reach mnemo's long-term memory: search and open the archive, remember and
//! forget durable experiences.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;

use super::{ToolContext, ToolError, TypedTool};
use crate::memory::embed::EmbeddingClient;
use crate::memory::piece_index::Source;
use crate::memory::recall::RecallScope;
use crate::memory::search_archive;
use crate::memory::types::{Scope, SearchHit};
use crate::memory::{Store, StoreError};
use crate::protocol::ApprovalAction;
use crate::sandbox::approval::Action;

/// Registers the four memory tools on `registry`.
pub fn register(
    registry: &mut super::ToolRegistry,
    store: &Store,
    embedder: Option<Arc<EmbeddingClient>>,
) {
    registry.register(MemorySearch {
        store: store.clone(),
        embedder,
    });
    registry.register(MemoryOpen {
        store: store.clone(),
    });
    registry.register(Remember {
        store: store.clone(),
    });
    registry.register(Forget {
        store: store.clone(),
    });
}

fn failed(err: StoreError) -> ToolError {
    ToolError::Failed(err.to_string())
}

pub struct MemorySearch {
    store: Store,
    embedder: Option<Arc<EmbeddingClient>>,
}

#[derive(Deserialize, JsonSchema)]
pub struct MemorySearchArgs {
    /// What to recall, in any words: matched by keyword and by meaning.
    pub query: String,
    /// Maximum number of hits (default 10, at most 50).
    pub limit: Option<usize>,
    /// Only this workspace's conversations and notes (default: every workspace).
    #[serde(default)]
    pub this_workspace_only: bool,
}

impl TypedTool for MemorySearch {
    type Args = MemorySearchArgs;
    const NAME: &'static str = "memory_search";
    const DESCRIPTION: &'static str = "Recall what was said and learned before: archived \
        conversations of this and past sessions, other sessions' current messages, \
        remembered notes and the dream notes, found by keyword and by meaning. Returns the best hits with what each is, date, session and summary; open an \
        archive entry with memory_open to read it in full.";
    const MUTATES: bool = false;

    async fn run(&self, args: MemorySearchArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let limit = args.limit.unwrap_or(10).clamp(1, 50);
        let scope = RecallScope {
            workspace: args
                .this_workspace_only
                .then(|| ctx.workspace.display().to_string()),
            except_session: Some(ctx.session_id.clone()),
        };
        let embedder = self.embedder.as_deref();
        let found = search_archive(&self.store, embedder, &args.query, scope, limit)
            .await
            .map_err(failed)?;
        let note = match &found.keyword_only {
            Some(why) => format!("({why}; keyword results only)\n"),
            None => String::new(),
        };
        let hits = found.hits;
        if hits.is_empty() {
            return Ok(format!("{note}nothing remembered matches `{}`", args.query));
        }
        Ok(format!("{note}{}", format_hits(&hits)))
    }
}

/// One hit per paragraph: id, date, session, topic, then the summary.
pub fn format_hits(hits: &[SearchHit]) -> String {
    hits.iter()
        .map(|hit| {
            let date = chrono::DateTime::from_timestamp_millis(hit.created_at)
                .map(|d| d.format("%Y-%m-%d").to_string())
                .unwrap_or_default();
            let session = hit
                .session_id
                .as_deref()
                .map(|s| s.chars().take(8).collect::<String>())
                .unwrap_or_else(|| "-".into());
            match hit.source {
                Source::Archive => format!(
                    "#{id}  {date}  archive · session {session}  {topic}\n    {summary}\n",
                    id = hit.id,
                    topic = hit.topic,
                    summary = hit.summary.replace('\n', "\n    ")
                ),
                Source::Experience => format!(
                    "note {id}  {date}  remembered  {text}\n",
                    id = hit.id,
                    text = hit.summary.replace('\n', "\n    ")
                ),
                Source::Message => format!(
                    "{date}  {topic} · session {session} (not archived yet)\n    {text}\n",
                    topic = hit.topic,
                    text = hit.summary.replace('\n', "\n    ")
                ),
                Source::Dream => format!(
                    "{topic}, {date}\n    {text}\n",
                    topic = hit.topic,
                    text = hit.summary.replace('\n', "\n    ")
                ),
            }
        })
        .collect()
}

pub struct MemoryOpen {
    store: Store,
}

#[derive(Deserialize, JsonSchema)]
pub struct MemoryOpenArgs {
    /// The archive entry id shown by memory_search (the number after `#`).
    pub id: i64,
}

impl TypedTool for MemoryOpen {
    type Args = MemoryOpenArgs;
    const NAME: &'static str = "memory_open";
    const DESCRIPTION: &'static str = "Read one archived conversation stretch in full, by the \
        id memory_search showed.";
    const MUTATES: bool = false;
    const DEFERRED: bool = true;

    async fn run(&self, args: MemoryOpenArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        let entry = self
            .store
            .call(move |db| db.archive_entry(args.id))
            .await
            .map_err(failed)?;
        Ok(format!(
            "# {}\n\n{}\n\n{}",
            entry.topic,
            entry.summary,
            crate::llm::transcript::to_markdown(&entry.messages)
        ))
    }
}

pub struct Remember {
    store: Store,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RememberScope {
    /// Only for this workspace (the default).
    Project,
    /// For every workspace.
    Global,
}

#[derive(Deserialize, JsonSchema)]
pub struct RememberArgs {
    /// One short, self-contained fact or lesson worth knowing in later sessions.
    pub text: String,
    /// `project` (default) or `global`.
    pub scope: Option<RememberScope>,
}

impl TypedTool for Remember {
    type Args = RememberArgs;
    const NAME: &'static str = "remember";
    const DESCRIPTION: &'static str = "Keep a durable fact or lesson (a user preference, a \
        project convention, a fix that worked). It appears in the system prompt of later \
        sessions, with an id you can pass to forget.";
    const MUTATES: bool = true;

    fn action(&self, _args: &RememberArgs) -> Option<Action> {
        Some(Action::Memory)
    }

    async fn preview(
        &self,
        args: RememberArgs,
        _ctx: &ToolContext,
    ) -> Result<ApprovalAction, ToolError> {
        let scope = match args.scope {
            Some(RememberScope::Global) => "in every workspace",
            _ => "in this project",
        };
        Ok(ApprovalAction::Memory {
            change: format!("remember {scope}: {}", args.text.trim()),
        })
    }

    async fn run(&self, args: RememberArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let text = args.text.trim().to_string();
        if text.is_empty() {
            return Err(ToolError::Failed(
                "nothing to remember: `text` is empty".into(),
            ));
        }
        let scope = match args.scope {
            Some(RememberScope::Global) => Scope::Global,
            _ => Scope::Project(ctx.workspace.display().to_string()),
        };
        let (id, created) = self
            .store
            .call(move |db| db.remember(&text, &scope, "model"))
            .await
            .map_err(failed)?;
        Ok(if created {
            format!("remembered as #{id}")
        } else {
            format!("already remembered as #{id}")
        })
    }
}

pub struct Forget {
    store: Store,
}

#[derive(Deserialize, JsonSchema)]
pub struct ForgetArgs {
    /// The experience id shown in the system prompt as `[id]`.
    pub id: i64,
}

impl TypedTool for Forget {
    type Args = ForgetArgs;
    const NAME: &'static str = "forget";
    const DESCRIPTION: &'static str = "Remove a remembered experience that is wrong or outdated, \
        by its id.";
    const MUTATES: bool = true;
    const DEFERRED: bool = true;

    fn action(&self, _args: &ForgetArgs) -> Option<Action> {
        Some(Action::Memory)
    }

    async fn preview(
        &self,
        args: ForgetArgs,
        _ctx: &ToolContext,
    ) -> Result<ApprovalAction, ToolError> {
        let id = args.id;
        let text = self
            .store
            .call(move |db| db.experience_text(id))
            .await
            .map_err(failed)?
            .unwrap_or_else(|| "(no such experience)".into());
        Ok(ApprovalAction::Memory {
            change: format!("forget #{id}: {text}"),
        })
    }

    async fn run(&self, args: ForgetArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        let id = args.id;
        let removed = self
            .store
            .call(move |db| db.forget(id))
            .await
            .map_err(failed)?;
        if removed {
            Ok(format!("forgot #{id}"))
        } else {
            Err(ToolError::Failed(format!("there is no experience #{id}")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::{ApprovalMode, SandboxConfig};
    use crate::tools::builtin::test_support::{TestResult, context, workspace};
    use crate::tools::{Approvals, Tool, ToolRegistry};
    use serde_json::json;

    #[tokio::test]
    async fn remembering_and_forgetting_are_writes() -> TestResult {
        let store = Store::open_in_memory()?;
        let mut registry = ToolRegistry::new();
        register(&mut registry, &store, None);
        let read_only = registry.read_only();
        assert!(read_only.get("memory_search").is_some());
        assert!(read_only.get("remember").is_none() && read_only.get("forget").is_none());

        let (_dir, ws) = workspace()?;
        let ctx = context(&ws);
        let approvals = Approvals::new(SandboxConfig::default(), ApprovalMode::ReadOnly);
        let remember = Remember {
            store: store.clone(),
        };
        let input = json!({"text": "the user likes tabs"});
        let refused = approvals.check(&remember, &input, &ctx).await;
        assert!(
            matches!(&refused, Err(ToolError::Denied(m)) if m.contains("changing remembered experiences")),
            "{refused:?}"
        );
        let forget = Forget { store };
        let refused = approvals.check(&forget, &json!({"id": 1}), &ctx).await;
        assert!(matches!(refused, Err(ToolError::Denied(_))));
        let auto = Approvals::new(SandboxConfig::default(), ApprovalMode::Auto);
        auto.check(&remember, &input, &ctx).await?;
        assert_eq!(remember.call(input, &ctx).await?, "remembered as #1");
        Ok(())
    }
}
