//! The dream cycle: between sessions, the archive entries written since the last dream are
//! read in batches of at most 30, an analyst call finds new facts, stale items and patterns,
//! and an editor call rewrites the two notes files from that analysis. The editor must answer
//! strict JSON; an invalid answer is asked for once more, then that batch is skipped (the notes
//! unchanged, the cursor past it, the person told) so it cannot stop every later dream. Each
//! version is kept in the store (`mnemo memory notes`), and the files are written atomically
//! before the cursor moves.
//!
//! `mnemo dream` runs it now; `mnemo serve` builds a [`Dreamer`] (`serve::dreamer`) and runs it when
//! [`Dreamer::pending`] reaches `dream.min_entries`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures_util::StreamExt;

use super::dream_batch::BatchClient;
use super::dream_prompts::{
    ANALYST_PROMPT, EDITOR_PROMPT, analyst_message, editor_message, parse_editor, shared_context,
};
use crate::llm::fallback::{ChainError, Decision, FallbackChain};
use crate::llm::{Message, ModelRequest, ModelResponse, ProviderError, StreamEvent};
use crate::memory::dream_held::{MAX_HELD, hold_instructions};
use crate::memory::dream_notes::{DreamNotes, NoteFile, NotesOrigin};
use crate::memory::{Store, StoreError};

pub use super::dream_files::{HandEdit, read_note_files, take_in_hand_edits, write_note_files};
pub use super::dream_prompts::{MAX_WORDS, word_count};

/// Archive entries one analyst and editor call read together.
pub const BATCH_ENTRIES: usize = 30;
/// The newest experiences each call sees.
const MAX_EXPERIENCES: usize = 200;

#[derive(Debug, thiserror::Error)]
pub enum DreamError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The launch could not give the dream its model or store.
    #[error(transparent)]
    Setup(Box<dyn std::error::Error + Send + Sync>),
    #[error("the dream model failed: {0}")]
    Model(#[from] ChainError),
    #[error("cannot write the notes file {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "another dream moved the dream cursor while this one ran; this one stopped without \
         writing, and the other's notes stand"
    )]
    Overtaken,
    #[error("no data directory is known for the notes files; set MNEMO_DATA_DIR")]
    NoDataDir,
}

/// What a dream did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DreamReport {
    /// Batches of entries whose notes were written.
    pub batches: usize,
    /// Archive entries read into the notes.
    pub entries: usize,
    /// The notes version written last.
    pub version: Option<i64>,
    /// Calls the batch API answered (the others were direct).
    pub batched_calls: usize,
    /// Archive entries passed over because the editor's answers for their batch were invalid.
    pub skipped: usize,
    /// What the person should know: fallbacks to direct calls, cut files, hand edits.
    pub notices: Vec<String>,
}

/// One of the dream's model calls: the shared block, the role's instructions, its message.
struct Call<'a> {
    id: String,
    shared: &'a str,
    instructions: &'static str,
    message: String,
}

/// Runs dreams over one store into one notes directory.
pub struct Dreamer {
    store: Store,
    notes_dir: PathBuf,
    chain: Arc<FallbackChain>,
    batch: Option<BatchClient>,
}

impl Dreamer {
    /// Direct calls through `chain`, the files in `notes_dir`.
    pub fn new(store: Store, notes_dir: PathBuf, chain: Arc<FallbackChain>) -> Self {
        Self {
            store,
            notes_dir,
            chain,
            batch: None,
        }
    }

    /// Both calls go through the batch API first, direct after its time limit.
    pub fn with_batch(mut self, batch: BatchClient) -> Self {
        self.batch = Some(batch);
        self
    }

    /// Where the notes files are written.
    pub fn notes_dir(&self) -> &Path {
        &self.notes_dir
    }

    /// Archive entries written since the last dream.
    pub async fn pending(&self) -> Result<usize, DreamError> {
        Ok(self.store.call(|db| db.dream_pending()).await?)
    }

    /// Dreams over every entry since the cursor, a batch at a time; without new entries it
    /// does nothing (and calls no model).
    pub async fn run(&self) -> Result<DreamReport, DreamError> {
        let mut report = DreamReport::default();
        self.take_in_hand_edits(&mut report).await?;
        while self.next_batch(&mut report).await? {}
        Ok(report)
    }

    /// Dreams over the next batch of entries; `false` when there is none.
    async fn next_batch(&self, report: &mut DreamReport) -> Result<bool, DreamError> {
        let (from, entries, experiences, current) = self
            .store
            .call(|db| {
                Ok((
                    db.dream_cursor()?,
                    db.dream_entries(BATCH_ENTRIES)?,
                    db.dream_experiences(MAX_EXPERIENCES)?,
                    db.current_notes()?,
                ))
            })
            .await?;
        let Some(last) = entries.last().map(|e| e.entry.id) else {
            return Ok(false);
        };
        let notes = current.map(|v| v.notes).unwrap_or_default();
        let shared = shared_context(&notes, &experiences, &entries);
        let analyst = Call {
            id: format!("dream-analyst-{last}"),
            shared: &shared,
            instructions: ANALYST_PROMPT,
            message: analyst_message(entries.len()),
        };
        let analysis = self.ask(analyst, report).await?;
        let edited = match self.edit(&shared, &analysis, last, report).await? {
            Ok(edited) => edited,
            Err(reason) => {
                // Retried next time, the same entries would stop every later dream too.
                let first = entries.first().map_or(last, |e| e.entry.id);
                if !self
                    .store
                    .call(move |db| db.skip_dream_batch(from, last))
                    .await?
                {
                    return Err(DreamError::Overtaken);
                }
                report.skipped += entries.len();
                report.notices.push(format!(
                    "archive entries {first}–{last} were skipped: the dream editor's answer was \
                     invalid twice ({reason}). The notes are unchanged; the entries stay in the \
                     archive for recall"
                ));
                return Ok(true);
            }
        };
        let (notes, held) = hold_instructions(&notes, edited);
        report.version = Some(self.save(notes, from, last, held, report).await?);
        report.batches += 1;
        report.entries += entries.len();
        Ok(true)
    }

    /// Writes the files and stores the version, moving the cursor from `from` to `last`. Two
    /// dreams at once (`mnemo dream` while `mnemo serve` dreams) must not both write: the one
    /// whose cursor moved meanwhile gives way, before touching the files.
    /// The lines `held` wait for the person instead.
    async fn save(
        &self,
        notes: DreamNotes,
        from: i64,
        last: i64,
        held: Vec<(NoteFile, String)>,
        report: &mut DreamReport,
    ) -> Result<i64, DreamError> {
        if self.store.call(|db| db.dream_cursor()).await? != from {
            return Err(DreamError::Overtaken);
        }
        write_note_files(&self.notes_dir, &notes)?;
        let count = held.len();
        let (version, kept) = self
            .store
            .call(move |db| match db.dream_cursor()? == from {
                true => {
                    let version = db.save_notes(&notes, NotesOrigin::Dream, Some(last))?;
                    Ok(Some((version, db.hold_notes(&held)?)))
                }
                false => Ok(None),
            })
            .await?
            .ok_or(DreamError::Overtaken)?;
        if count > 0 {
            report.notices.push(format!(
                "{kept} new line(s) of the notes read as instructions and wait for your review \
                 (`mnemo memory notes --pending`){}",
                match count - kept {
                    0 => String::new(),
                    dropped =>
                        format!("; {dropped} more were dropped: {MAX_HELD} lines already wait"),
                }
            ));
        }
        Ok(version)
    }

    /// The editor's notes; an invalid answer is asked for once more, with the reason. The
    /// inner error is why the second answer was invalid too.
    async fn edit(
        &self,
        shared: &str,
        analysis: &str,
        last: i64,
        report: &mut DreamReport,
    ) -> Result<Result<DreamNotes, String>, DreamError> {
        let mut rejected: Option<String> = None;
        for attempt in 1..=2 {
            let call = Call {
                id: format!("dream-editor-{last}-{attempt}"),
                shared,
                instructions: EDITOR_PROMPT,
                message: editor_message(analysis, rejected.as_deref()),
            };
            let answer = self.ask(call, report).await?;
            match parse_editor(&answer) {
                Ok((notes, cut)) => {
                    for file in cut {
                        report.notices.push(format!(
                            "{} was longer than {} words and was cut after its last whole paragraph or item",
                            file.file_name(),
                            MAX_WORDS
                        ));
                    }
                    return Ok(Ok(notes));
                }
                Err(reason) => rejected = Some(reason),
            }
        }
        Ok(Err(rejected.unwrap_or_default()))
    }

    /// The text of one call's answer: through the batch API when it is on and answers in
    /// time, else directly through the chain.
    async fn ask(&self, call: Call<'_>, report: &mut DreamReport) -> Result<String, DreamError> {
        let max_output_tokens = self.chain.primary().map_or(8192, |m| m.max_output_tokens);
        let request = |system: String| ModelRequest {
            system,
            messages: vec![Arc::new(Message::user_text(call.message.clone()))],
            tools: Vec::new().into(),
            static_tools: usize::MAX,
            volatile_tail: 0,
            tool_calls: crate::llm::ToolCalls::Allowed,
            server_search: false,
            max_output_tokens,
        };
        if let Some(batch) = &self.batch {
            let batched = request(call.instructions.to_string());
            match batch.complete(&call.id, &batched, call.shared).await {
                Ok(Some(response)) => {
                    report.batched_calls += 1;
                    return Ok(response.message.text());
                }
                Ok(None) => report.notices.push(format!(
                    "the batch for {} did not end in time; it was cancelled and the call made \
                     directly",
                    call.id
                )),
                Err(err) => report.notices.push(format!(
                    "the batch for {} failed ({err}); the call was made directly",
                    call.id
                )),
            }
        }
        let direct = request(format!("{}\n\n{}", call.shared, call.instructions));
        Ok(complete(&self.chain, direct).await?.message.text())
    }

    /// Files changed by hand since the stored version become a version of their own, so the
    /// next dream edits them instead of overwriting them (see [`take_in_hand_edits`]).
    async fn take_in_hand_edits(&self, report: &mut DreamReport) -> Result<(), DreamError> {
        let dir = self.notes_dir.clone();
        let found = self
            .store
            .call(move |db| Ok(take_in_hand_edits(db, &dir)))
            .await??;
        if found == HandEdit::Taken {
            report
                .notices
                .push("the notes files were edited by hand; the edit was kept as a version".into());
        }
        Ok(())
    }
}

/// One call through the chain, with its retries and fallbacks, to a complete response.
async fn complete(
    chain: &FallbackChain,
    request: ModelRequest,
) -> Result<ModelResponse, ChainError> {
    let mut run = chain.start();
    while let Some((model, _notice)) = run.next_model() {
        loop {
            let err = match once(model.provider.as_ref(), request.clone()).await {
                Ok(response) => return Ok(response),
                Err(err) => err,
            };
            match run.failed(err) {
                Decision::Retry { delay, .. } => tokio::time::sleep(delay).await,
                Decision::NextModel => break,
                Decision::Stop(err) => return Err(err),
            }
        }
    }
    Err(run.exhausted())
}

async fn once(
    provider: &dyn crate::llm::Provider,
    request: ModelRequest,
) -> Result<ModelResponse, ProviderError> {
    let mut stream = provider.stream(request).await?;
    while let Some(item) = stream.next().await {
        if let StreamEvent::Completed(response) = item? {
            return Ok(response);
        }
    }
    Err(ProviderError::Connection(
        "the response stream ended without a complete message".into(),
    ))
}
