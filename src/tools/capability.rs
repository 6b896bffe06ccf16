//! The static capability tools: `capability_query`, `capability_create`, `capability_inspect`
//! and `capability_remove`. Their results are JSON; a query's or a create's items are what
//! brings a capability into the tool list (see `crate::capabilities::refs`).

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::capability_run::{self as run, CapabilityRunner};
use super::{ToolContext, ToolError, ToolRegistry, TypedTool};
use crate::capabilities::{CREATE, INSPECT, QUERY, REMOVE, item_json, validate};
use crate::memory::capabilities::{Capability, NewCapability};
use crate::memory::embed::EmbeddingClient;
use crate::memory::{Store, StoreError};
use crate::protocol::ApprovalAction;
use crate::sandbox::approval::Action;

/// Most results one query returns.
const MAX_RESULTS: usize = 20;

/// Matches a query looks through: those written in another workspace are left out of it.
const SEARCHED: usize = 60;

/// Registers the four capability tools; `static_tools` are the names a capability may not take.
pub fn register(
    registry: &mut ToolRegistry,
    store: &Store,
    embedder: Option<Arc<EmbeddingClient>>,
    runner: Arc<CapabilityRunner>,
) {
    let mut reserved = registry.names();
    reserved.extend([QUERY, CREATE, INSPECT, REMOVE].map(String::from));
    registry.register(CapabilityQuery {
        store: store.clone(),
        embedder: embedder.clone(),
    });
    registry.register(CapabilityCreate {
        store: store.clone(),
        embedder,
        runner,
        reserved,
    });
    registry.register(CapabilityInspect {
        store: store.clone(),
    });
    registry.register(CapabilityRemove {
        store: store.clone(),
    });
}

fn failed(err: StoreError) -> ToolError {
    ToolError::Failed(err.to_string())
}

fn item(cap: &Capability) -> Value {
    item_json(
        &cap.name,
        cap.version,
        &cap.description,
        &cap.language,
        &cap.tags,
        &cap.input_schema,
    )
}

/// The result of `tool` in one line for people: "created capability word-count v1 · smoke
/// test passed".
pub(super) fn for_people(tool: &str, output: &str) -> Option<String> {
    let answer: Value = serde_json::from_str(output).ok()?;
    let named = |item: &Value| {
        let name = item.get("name")?.as_str()?;
        let version = item.get("version")?.as_u64()?;
        Some(format!("{name} v{version}"))
    };
    match tool {
        CREATE => {
            let created = named(answer.get("created")?)?;
            let test = match answer.get("smoke_test") {
                Some(Value::Object(test)) if test.get("passed") == Some(&Value::Bool(true)) => {
                    "smoke test passed"
                }
                _ => "no example to test it with",
            };
            Some(format!("created capability {created} · {test}"))
        }
        QUERY => {
            let found: Vec<String> = answer
                .get("capabilities")?
                .as_array()?
                .iter()
                .filter_map(named)
                .collect();
            let mut line = match found.len() {
                0 => "no capability found".to_string(),
                1 => format!("found {}", found[0]),
                n => format!("found {n}: {}", found.join(", ")),
            };
            if answer.get("not_offered").is_some() {
                line.push_str(" · some from other workspaces are not offered");
            }
            Some(line)
        }
        REMOVE => Some(format!(
            "removed capability {}",
            answer.get("removed")?.as_str()?
        )),
        _ => None,
    }
}

/// What a capability is embedded by: the words a query would use to find it.
fn embedding_text(name: &str, description: &str, tags: &[String]) -> String {
    format!("{name}: {description} {}", tags.join(" "))
}

async fn embed(embedder: Option<&EmbeddingClient>, text: String) -> Option<Vec<f32>> {
    // Meaning only adds to keywords: without a vector the search still works.
    embedder?.embed(&[text]).await.ok()?.pop()
}

pub struct CapabilityQuery {
    store: Store,
    embedder: Option<Arc<EmbeddingClient>>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueryArgs {
    /// What it should do.
    pub query: String,
    /// Default 5, at most 20.
    pub limit: Option<u32>,
}

impl TypedTool for CapabilityQuery {
    type Args = QueryArgs;
    const NAME: &'static str = QUERY;
    const DESCRIPTION: &'static str =
        "Find saved capabilities; call one found with use_tool (its `tool` and input_schema).";
    const MUTATES: bool = false;

    async fn run(&self, args: QueryArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let limit = (args.limit.unwrap_or(5) as usize).clamp(1, MAX_RESULTS);
        let vector = embed(self.embedder.as_deref(), args.query.clone()).await;
        let workspace = ctx.workspace.display().to_string();
        let (found, elsewhere) = self
            .store
            .call(move |db| {
                let found = db.search_capabilities(&args.query, vector.as_deref(), SEARCHED)?;
                let (mut offered, mut elsewhere) = (Vec::new(), Vec::new());
                for capability in found {
                    let written_in =
                        db.capability_workspace(&capability.name, capability.version)?;
                    match capability.pinned || written_in.as_deref() == Some(&workspace) {
                        true => offered.push(capability),
                        false => elsewhere.push(capability.name),
                    }
                }
                offered.truncate(limit);
                Ok((offered, elsewhere))
            })
            .await
            .map_err(failed)?;
        let items: Vec<Value> = found.iter().map(item).collect();
        let mut answer = json!({ "capabilities": items });
        if items.is_empty() {
            answer["note"] =
                json!("none found; make one with capability_create when a task will come back");
        }
        if !elsewhere.is_empty() {
            answer["not_offered"] = json!(format!(
                "{} written in another workspace and not pinned by the user: {}. Only the \
                 user can offer one here (`mnemo capabilities pin NAME`)",
                elsewhere.len(),
                elsewhere.join(", ")
            ));
        }
        Ok(answer.to_string())
    }
}

pub struct CapabilityCreate {
    store: Store,
    embedder: Option<Arc<EmbeddingClient>>,
    runner: Arc<CapabilityRunner>,
    reserved: Vec<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateArgs {
    /// [a-z0-9-], at most 48.
    pub name: String,
    pub description: String,
    /// JSON Schema of its arguments (type object).
    pub input_schema: Value,
    /// bash, python3 or node.
    pub language: String,
    /// Reads the arguments as JSON on stdin, prints the result on stdout.
    pub code: String,
    pub tags: Option<Vec<String>>,
    /// [{"input": {..}, "output": ..}]; the first is run as a test.
    pub examples: Option<Vec<Value>>,
}

impl CreateArgs {
    fn check(&self, reserved: &[String]) -> Result<(), String> {
        validate::name(&self.name)?;
        validate::no_clash(&self.name, reserved)?;
        validate::description(&self.description)?;
        validate::input_schema(&self.input_schema)?;
        validate::language(&self.language)?;
        validate::code(&self.code)?;
        for example in self.examples.iter().flatten() {
            if !example.get("input").is_some_and(Value::is_object) {
                return Err(format!(
                    "each example needs an \"input\" object of arguments; got {example}"
                ));
            }
        }
        Ok(())
    }

    fn extension(&self) -> &'static str {
        match self.language.as_str() {
            "python3" => "py",
            "node" => "js",
            _ => "sh",
        }
    }
}

impl TypedTool for CapabilityCreate {
    type Args = CreateArgs;
    const NAME: &'static str = CREATE;
    const DESCRIPTION: &'static str = "Save a script as a reusable tool (same name: new version; call it with use_tool); its \
         first example must pass.";
    const MUTATES: bool = true;

    fn action(&self, _args: &CreateArgs) -> Option<Action> {
        Some(Action::Write)
    }

    async fn preview(
        &self,
        args: CreateArgs,
        ctx: &ToolContext,
    ) -> Result<ApprovalAction, ToolError> {
        ctx.check_writable("saving a capability")?;
        self.refuse_pinned(&args.name).await?;
        let diff: String = args.code.lines().map(|l| format!("+{l}\n")).collect();
        let tested = match args.examples.as_ref().is_some_and(|e| !e.is_empty()) {
            true => ", its first example run in the sandbox",
            false => "",
        };
        Ok(ApprovalAction::Write {
            path: format!("capability {}.{}{tested}", args.name, args.extension()),
            diff,
        })
    }

    async fn run(&self, args: CreateArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        args.check(&self.reserved)
            .map_err(|message| ToolError::InvalidArguments {
                tool: CREATE.into(),
                message,
            })?;
        ctx.check_writable("saving a capability")?;
        self.refuse_pinned(&args.name).await?;
        let examples = args.examples.clone().unwrap_or_default();
        let tags = args.tags.clone().unwrap_or_default();
        let mut candidate = Capability {
            name: args.name.clone(),
            version: 0,
            description: args.description.clone(),
            tags: tags.clone(),
            input_schema: args.input_schema.clone(),
            language: args.language.clone(),
            code: args.code.clone(),
            examples: examples.clone(),
            session_id: Some(ctx.session_id.clone()),
            turn: Some(ctx.turn),
            created_at: 0,
            access_count: 0,
            last_access: None,
            pinned: false,
        };
        let smoke = match examples.first() {
            Some(example) => Some(self.smoke_test(&candidate, example, ctx).await?),
            None => None,
        };
        let text = embedding_text(&args.name, &args.description, &tags);
        let embedding = embed(self.embedder.as_deref(), text).await;
        let new = NewCapability {
            name: args.name,
            description: args.description,
            tags,
            input_schema: args.input_schema,
            language: args.language,
            code: args.code,
            examples,
            session_id: candidate.session_id.take(),
            turn: candidate.turn,
            embedding,
        };
        let stored = self
            .store
            .call(move |db| db.create_capability(new))
            .await
            .map_err(failed)?;
        let mut answer = json!({ "created": item(&stored) });
        answer["smoke_test"] = match smoke {
            Some(output) => json!({ "passed": true, "output": output }),
            None => json!("not run: no examples were given"),
        };
        Ok(answer.to_string())
    }
}

impl CapabilityCreate {
    /// A pinned capability is offered in every workspace, so only the user changes it.
    async fn refuse_pinned(&self, name: &str) -> Result<(), ToolError> {
        let wanted = name.to_string();
        let pinned = self
            .store
            .call(move |db| Ok(db.capability(&wanted)?.is_some_and(|c| c.pinned)))
            .await
            .map_err(failed)?;
        match pinned {
            true => Err(ToolError::Denied(format!(
                "`{name}` is pinned by the user: only they change it (`mnemo capabilities`). \
                 Save yours under another name"
            ))),
            false => Ok(()),
        }
    }

    /// Runs `example` against the candidate; its error refuses the capability.
    async fn smoke_test(
        &self,
        candidate: &Capability,
        example: &Value,
        ctx: &ToolContext,
    ) -> Result<String, ToolError> {
        let input = example.get("input").cloned().unwrap_or(Value::Null);
        let sandbox = self.runner.sandbox(ctx)?;
        let refused = |why: String| {
            ToolError::Failed(format!(
                "capability `{}` was not saved: its first example failed. {why}",
                candidate.name
            ))
        };
        let output = run::execute(&sandbox, candidate, &input, ctx.timeout, ctx)
            .await
            .map_err(|err| match err {
                ToolError::Cancelled => ToolError::Cancelled,
                other => refused(other.to_string()),
            })?;
        if let Some(expected) = example.get("output")
            && !matches(expected, &output)
        {
            return Err(refused(format!("Expected {expected}, it printed {output}")));
        }
        Ok(output)
    }
}

/// Whether `output` is what an example expects: the same JSON, or the same text.
fn matches(expected: &Value, output: &str) -> bool {
    match (expected, serde_json::from_str::<Value>(output)) {
        (Value::String(text), _) => text.trim() == output.trim(),
        (expected, Ok(actual)) => *expected == actual,
        (_, Err(_)) => false,
    }
}

pub struct CapabilityInspect {
    store: Store,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NameArgs {
    pub name: String,
}

impl TypedTool for CapabilityInspect {
    type Args = NameArgs;
    const NAME: &'static str = INSPECT;
    const DESCRIPTION: &'static str = "A capability's code, versions and use count.";
    const MUTATES: bool = false;
    const DEFERRED: bool = true;

    async fn run(&self, args: NameArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        let name = args.name.clone();
        let (found, versions) = self
            .store
            .call(move |db| Ok((db.capability(&name)?, db.capability_versions(&name)?)))
            .await
            .map_err(failed)?;
        let Some(cap) = found else {
            return Err(unknown(&args.name));
        };
        let mut answer = item(&cap);
        answer["code"] = json!(cap.code);
        answer["examples"] = json!(cap.examples);
        answer["uses"] = json!(cap.access_count);
        answer["last_used"] = json!(cap.last_access);
        answer["pinned"] = json!(cap.pinned);
        answer["versions"] = json!(versions);
        Ok(answer.to_string())
    }
}

fn unknown(name: &str) -> ToolError {
    ToolError::Failed(format!(
        "no capability is named `{name}`; capability_query lists what exists"
    ))
}

pub struct CapabilityRemove {
    store: Store,
}

impl TypedTool for CapabilityRemove {
    type Args = NameArgs;
    const NAME: &'static str = REMOVE;
    const DESCRIPTION: &'static str = "Delete a capability (every version).";
    const MUTATES: bool = true;
    const DEFERRED: bool = true;

    fn action(&self, _args: &NameArgs) -> Option<Action> {
        Some(Action::Write)
    }

    async fn preview(
        &self,
        args: NameArgs,
        ctx: &ToolContext,
    ) -> Result<ApprovalAction, ToolError> {
        ctx.check_writable("removing a capability")?;
        let name = args.name.clone();
        let found = self
            .store
            .call(move |db| db.capability(&name))
            .await
            .map_err(failed)?
            .ok_or_else(|| unknown(&args.name))?;
        let diff: String = found.code.lines().map(|l| format!("-{l}\n")).collect();
        Ok(ApprovalAction::Write {
            path: format!("capability {} (every version)", args.name),
            diff,
        })
    }

    async fn run(&self, args: NameArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        ctx.check_writable("removing a capability")?;
        let name = args.name.clone();
        let pinned = self
            .store
            .call(move |db| Ok(db.capability(&name)?.map(|c| c.pinned)))
            .await
            .map_err(failed)?;
        match pinned {
            None => Err(unknown(&args.name)),
            Some(true) => Err(ToolError::Failed(format!(
                "`{}` is pinned by the user and cannot be removed by the agent",
                args.name
            ))),
            Some(false) => {
                let name = args.name.clone();
                self.store
                    .call(move |db| db.remove_capability(&name))
                    .await
                    .map_err(failed)?;
                Ok(json!({ "removed": args.name }).to_string())
            }
        }
    }
}
