//! The skill tools: `load_skill` and `read_skill_resource` read skills on demand (only names
//! and descriptions sit in the system prompt); `skill_write` and `skill_patch` let the agent
//! write down a procedure that worked, or improve one. A new skill is saved only when its
//! verify command passes or the person says yes (`skill_check`); otherwise it waits as a
//! draft. Writing the workspace's own skill folder
//! (`.agents/skills`) is a write like the file tools'; writing anywhere else (the person's
//! skills, which every workspace reads, or `.mnemo/`) asks, even under auto.

use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::process::SandboxSlot;
use super::skill_check::{Checked, check};
use super::{ToolContext, ToolError, ToolRegistry, TypedTool};
use crate::memory::skill_drafts::SkillDraft;
use crate::memory::skills::SkillOrigin;
use crate::memory::{Store, StoreError};
use crate::protocol::ApprovalAction;
use crate::sandbox::approval::Action;
use crate::skills::{self, Skill, SkillSet};

/// The skills a session can see, found again after the agent writes one.
pub struct SkillLibrary {
    pub workspace: PathBuf,
    /// mnemo's config dir: user skills live in its `skills/`.
    pub config_dir: PathBuf,
    /// Whether the person trusts the workspace: until then the catalogue leaves out what its
    /// repository's skills say of themselves.
    pub repository_trusted: bool,
    set: RwLock<SkillSet>,
}

impl SkillLibrary {
    pub fn discover(workspace: PathBuf, config_dir: PathBuf) -> Self {
        let library = Self::empty(workspace, config_dir);
        library.reload();
        library
    }

    /// A library that has not looked for its skills yet (see [`SkillLibrary::reload`]).
    pub fn empty(workspace: PathBuf, config_dir: PathBuf) -> Self {
        Self {
            workspace,
            config_dir,
            repository_trusted: false,
            set: RwLock::new(SkillSet::default()),
        }
    }

    /// The same library, its repository's skills trusted or not.
    pub fn trusting_repository(mut self, trusted: bool) -> Self {
        self.repository_trusted = trusted;
        self
    }

    pub fn set(&self) -> SkillSet {
        self.set
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Runs `f` on the skills without copying them.
    pub fn with_set<R>(&self, f: impl FnOnce(&SkillSet) -> R) -> R {
        f(&self.set.read().unwrap_or_else(PoisonError::into_inner))
    }

    pub fn get(&self, name: &str) -> Option<Skill> {
        let set = self.set.read().unwrap_or_else(PoisonError::into_inner);
        set.get(name).cloned()
    }

    /// Looks for the skills again.
    pub fn reload(&self) {
        let found = skills::discover(&self.workspace, &self.config_dir);
        *self.set.write().unwrap_or_else(PoisonError::into_inner) = found;
    }

    fn root(&self, scope: Scope) -> PathBuf {
        match scope {
            Scope::User => self.config_dir.join("skills"),
            Scope::Project => self.workspace.join(PROJECT_SKILLS),
        }
    }

    /// Whether `skill` lives in the workspace's own skill folder, which the agent may write
    /// as it writes files; every other folder is shared with later sessions elsewhere.
    fn in_project_folder(&self, skill: &Skill) -> bool {
        let root = std::fs::canonicalize(self.workspace.join(PROJECT_SKILLS));
        root.is_ok_and(|root| skill.dir.parent() == Some(root.as_path()))
    }

    /// (name, description) of every skill, for the search index.
    pub fn index_entries(&self) -> Vec<(String, String)> {
        let set = self.set.read().unwrap_or_else(PoisonError::into_inner);
        set.iter()
            .map(|s| (s.name.clone(), s.description.clone()))
            .collect()
    }

    /// After the agent wrote or patched skill `name`: finds the skills again, records who
    /// wrote it and reindexes them for search.
    async fn written(&self, store: &Store, name: &str, ctx: &ToolContext) -> Result<(), ToolError> {
        self.reload();
        let (name, session, turn) = (name.to_string(), ctx.session_id.clone(), ctx.turn);
        let entries = self.index_entries();
        store
            .call(move |db| {
                db.skill_written(&name, SkillOrigin::Learned, Some(&session), Some(turn))?;
                db.index_skills(&entries)
            })
            .await
            .map_err(store_failed)
    }

    fn skill(&self, name: &str) -> Result<Skill, ToolError> {
        self.get(name).ok_or_else(|| {
            ToolError::Failed(format!(
                "no skill is named `{name}`; the catalogue in your instructions lists them"
            ))
        })
    }
}

/// The workspace's own skill folder, relative to it: what `skill_write` scope project writes.
const PROJECT_SKILLS: &str = ".agents/skills";

/// Registers the four skill tools over `library`.
pub fn register(registry: &mut ToolRegistry, library: Arc<SkillLibrary>, store: &Store) {
    registry.register(LoadSkill {
        library: library.clone(),
        store: store.clone(),
    });
    registry.register(ReadSkillResource {
        library: library.clone(),
    });
    registry.register(SkillWrite {
        library: library.clone(),
        store: store.clone(),
        sandbox: SandboxSlot::default(),
    });
    registry.register(SkillPatch {
        library,
        store: store.clone(),
    });
}

fn failed(err: impl std::fmt::Display) -> ToolError {
    ToolError::Failed(err.to_string())
}

fn store_failed(err: StoreError) -> ToolError {
    failed(err)
}

pub struct LoadSkill {
    library: Arc<SkillLibrary>,
    store: Store,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NameArgs {
    pub name: String,
}

impl TypedTool for LoadSkill {
    type Args = NameArgs;
    const NAME: &'static str = "load_skill";
    const DESCRIPTION: &'static str = "The instructions of a skill from the catalogue.";
    const MUTATES: bool = false;

    async fn run(&self, args: NameArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        let skill = self.library.skill(&args.name)?;
        let name = skill.name.clone();
        // Counting a load is bookkeeping: a failure to write it must not fail the load.
        let _ = self.store.call(move |db| db.skill_loaded(&name)).await;
        Ok(format!(
            "# Skill {} ({})\n\n{}",
            skill.name,
            skill.dir.display(),
            skill.body.trim()
        ))
    }
}

pub struct ReadSkillResource {
    library: Arc<SkillLibrary>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResourceArgs {
    pub name: String,
    /// Relative to the skill's folder.
    pub path: String,
}

impl TypedTool for ReadSkillResource {
    type Args = ResourceArgs;
    const NAME: &'static str = "read_skill_resource";
    const DESCRIPTION: &'static str = "A file of a skill's folder that its instructions name.";
    const MUTATES: bool = false;

    async fn run(&self, args: ResourceArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        let skill = self.library.skill(&args.name)?;
        skills::read_resource(&skill, &args.path).map_err(failed)
    }
}

#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    User,
    #[default]
    Project,
}

pub struct SkillWrite {
    library: Arc<SkillLibrary>,
    store: Store,
    /// Where its check runs.
    sandbox: SandboxSlot,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteArgs {
    /// [a-z0-9-], at most 64.
    pub name: String,
    /// What it does and when to use it.
    pub description: String,
    /// Markdown: verified facts, the steps, the pitfalls.
    pub body: String,
    /// project (default: this workspace's .agents/skills) or user (every workspace; asks).
    #[serde(default)]
    pub scope: Scope,
    /// A shell command that checks the skill works; mnemo runs it and saves the skill only
    /// when it passes (else the person decides).
    pub verify: Option<String>,
}

impl TypedTool for SkillWrite {
    type Args = WriteArgs;
    const NAME: &'static str = "skill_write";
    const DESCRIPTION: &'static str =
        "Write down a procedure that worked as a new skill (refused if the name exists).";
    const MUTATES: bool = true;
    const DEFERRED: bool = true;

    fn action(&self, args: &WriteArgs) -> Option<Action> {
        Some(match args.scope {
            Scope::Project => Action::Write,
            Scope::User => Action::Shared,
        })
    }

    async fn preview(
        &self,
        args: WriteArgs,
        ctx: &ToolContext,
    ) -> Result<ApprovalAction, ToolError> {
        ctx.check_writable("writing a skill")?;
        let path = self
            .library
            .root(args.scope)
            .join(&args.name)
            .join("SKILL.md");
        let diff: String = args.body.lines().map(|l| format!("+{l}\n")).collect();
        Ok(ApprovalAction::Write {
            path: format!("{} — {}", path.display(), args.description),
            diff,
        })
    }

    async fn run(&self, args: WriteArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        ctx.check_writable("writing a skill")?;
        skills::validate_name(&args.name).map_err(|message| ToolError::InvalidArguments {
            tool: Self::NAME.into(),
            message,
        })?;
        if let Scope::Project = args.scope {
            // The folder is the workspace's: the file tools' guard decides (no symlink out).
            ctx.resolve_write(&format!(
                "{PROJECT_SKILLS}/{}/{}",
                args.name,
                skills::SKILL_FILE
            ))?;
        }
        if self.library.get(&args.name).is_some() {
            return Err(ToolError::Failed(format!(
                "a skill named `{}` exists; improve it with skill_patch or choose another name",
                args.name
            )));
        }
        let root = self.library.root(args.scope);
        let verified = match check(&self.sandbox, args.verify.as_deref(), ctx).await {
            Checked::Passed(record) => record,
            Checked::NotPassed(why) => match self.confirmed(&args, &root, &why, ctx).await {
                true => "saved with the person's yes, without a passing check".to_string(),
                false => return self.hold_draft(args, root, why, ctx).await,
            },
        };
        let mut metadata = serde_json::Map::new();
        if let Some(verify) = args.verify.filter(|v| !v.trim().is_empty()) {
            metadata.insert("verify".into(), json!(verify));
        }
        metadata.insert("verified".into(), json!(verified));
        let dir = skills::write_skill(&root, &args.name, &args.description, &args.body, &metadata)
            .map_err(failed)?;
        self.library.written(&self.store, &args.name, ctx).await?;
        Ok(format!(
            "skill `{}` written to {}; later sessions list it in their catalogue",
            args.name,
            dir.display()
        ))
    }
}

impl SkillWrite {
    /// Whether the person says yes to the skill that has no passing check.
    async fn confirmed(
        &self,
        args: &WriteArgs,
        root: &std::path::Path,
        why: &str,
        ctx: &ToolContext,
    ) -> bool {
        let path = root.join(&args.name).join(skills::SKILL_FILE);
        let action = ApprovalAction::Write {
            path: format!("{} — {}", path.display(), args.description),
            diff: args.body.lines().map(|l| format!("+{l}\n")).collect(),
        };
        let reason = format!("save this skill although {why}?");
        ctx.approvals.confirm(ctx, Self::NAME, action, reason).await
    }

    /// Keeps the skill as a draft for the person and tells the model so.
    async fn hold_draft(
        &self,
        args: WriteArgs,
        root: PathBuf,
        why: String,
        ctx: &ToolContext,
    ) -> Result<String, ToolError> {
        let name = args.name.clone();
        let draft = SkillDraft {
            name: args.name,
            description: args.description,
            body: args.body,
            root,
            verify: args.verify,
            why: why.clone(),
            session: ctx.session_id.clone(),
            created_at: 0,
        };
        self.store
            .call(move |db| db.hold_skill_draft(draft))
            .await
            .map_err(store_failed)?;
        Ok(format!(
            "skill `{name}` was not saved: {why}. It is kept as a draft the person can accept \
             (`mnemo skills accept {name}`). A skill is saved only when its verify command \
             passes or the person says yes."
        ))
    }
}

pub struct SkillPatch {
    library: Arc<SkillLibrary>,
    store: Store,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchArgs {
    pub name: String,
    /// Text of its SKILL.md that occurs exactly once.
    pub old_text: String,
    pub new_text: String,
}

impl TypedTool for SkillPatch {
    type Args = PatchArgs;
    const NAME: &'static str = "skill_patch";
    const DESCRIPTION: &'static str = "Improve a skill: replace text that occurs once in it.";
    const MUTATES: bool = true;
    const DEFERRED: bool = true;

    fn action(&self, args: &PatchArgs) -> Option<Action> {
        let skill = self.library.get(&args.name)?;
        Some(match self.library.in_project_folder(&skill) {
            true => Action::Write,
            false => Action::Shared,
        })
    }

    async fn preview(
        &self,
        args: PatchArgs,
        ctx: &ToolContext,
    ) -> Result<ApprovalAction, ToolError> {
        ctx.check_writable("changing a skill")?;
        let skill = self.library.skill(&args.name)?;
        let removed = args.old_text.lines().map(|l| format!("-{l}\n"));
        let added = args.new_text.lines().map(|l| format!("+{l}\n"));
        Ok(ApprovalAction::Write {
            path: skill.file().display().to_string(),
            diff: removed.chain(added).collect(),
        })
    }

    async fn run(&self, args: PatchArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        ctx.check_writable("changing a skill")?;
        let skill = self.library.skill(&args.name)?;
        if self.library.in_project_folder(&skill) {
            let file = format!("{PROJECT_SKILLS}/{}/{}", args.name, skills::SKILL_FILE);
            ctx.resolve_write(&file)?;
        }
        skills::patch_skill(&skill, &args.old_text, &args.new_text).map_err(failed)?;
        self.library.written(&self.store, &args.name, ctx).await?;
        Ok(format!("skill `{}` updated", args.name))
    }
}
