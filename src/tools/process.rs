//! Running one command prepared by the sandbox: in its own process group, with optional input
//! on stdin, live output streamed to the front end, bounded head-and-tail capture, a deadline,
//! and everything it started killed when it ends, times out, is interrupted or dropped. The
//! `shell` tool and capabilities both run through here.

use std::process::{ExitStatus, Stdio};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::time::{Instant, sleep_until};

use super::truncate::MAX_OUTPUT_BYTES;
use super::{ToolContext, ToolError};
use crate::sandbox::{Escalation, Prepared, RunGuard, Sandbox};
use crate::text::{ceil_char_boundary, floor_char_boundary, head_tail};

/// A partial line longer than this is passed on without waiting for its newline.
const MAX_PENDING_BYTES: usize = 16 * 1024;
/// Output batched into one live event at most.
const MAX_EVENT_BYTES: usize = 16 * 1024;

/// The sandbox a tool's commands run in: given at construction, or created over the call's
/// workspace on first use (with a scratch directory of its own, removed with the tool).
#[derive(Default)]
pub struct SandboxSlot(Mutex<Option<Sandbox>>);

impl SandboxSlot {
    pub fn with(sandbox: Sandbox) -> Self {
        Self(Mutex::new(Some(sandbox)))
    }

    /// The sandbox for a call with `escalation` (already approved), under the policy the
    /// session's approvals make of the configured one.
    pub fn get(
        &self,
        ctx: &ToolContext,
        escalation: Option<Escalation>,
    ) -> Result<Sandbox, ToolError> {
        let mut slot = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let sandbox = match slot.as_ref().filter(|s| s.workspace() == ctx.workspace) {
            Some(sandbox) => sandbox.clone(),
            None => {
                let created = Sandbox::temporary(ctx.approvals.configured(), &ctx.workspace)
                    .map_err(|e| ToolError::Failed(e.to_string()))?
                    .confined(ctx.approvals.confinement().clone());
                slot.insert(created).clone()
            }
        };
        let config = ctx.approvals.adjust(sandbox.config(), escalation);
        Ok(sandbox.with_config(config))
    }
}

/// What a command left when it exited by itself.
pub struct Finished {
    /// Stdout and stderr interleaved as they arrived, head and tail kept.
    pub combined: String,
    /// Stdout alone, head and tail kept.
    pub stdout: String,
    /// How many bytes the command wrote to stdout in all.
    pub stdout_bytes: usize,
    /// Stderr alone, head and tail kept.
    pub stderr: String,
    pub status: ExitStatus,
    /// Why the sandbox or a limit may be behind a failure, when it looks so.
    pub note: Option<String>,
}

#[derive(Clone, Copy)]
enum Stream {
    Out,
    Err,
}

/// Runs `script` (bash) in `sandbox`, feeding `stdin` to it, for at most `limit`.
pub async fn run(
    sandbox: &Sandbox,
    script: &str,
    stdin: Option<Vec<u8>>,
    limit: Duration,
    ctx: &ToolContext,
) -> Result<Finished, ToolError> {
    let deadline = Instant::now() + limit;
    let gate = std::sync::Arc::new(super::egress_gate::SessionGate::new(ctx.clone()));
    let Prepared { mut command, guard } = sandbox
        .clone()
        .with_gate(gate)
        .command(script)
        .await
        .map_err(|e| ToolError::Failed(e.to_string()))?;
    let input = match stdin {
        Some(_) => Stdio::piped(),
        None => Stdio::null(),
    };
    let mut child = command
        .stdin(input)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| ToolError::Failed(format!("could not start the command: {e}")))?;
    drop(command);
    let mut group = Running {
        guard,
        pid: child.id().and_then(|id| libc::pid_t::try_from(id).ok()),
        reaped: false,
    };
    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // A program that never reads its input must not block the run.
        tokio::spawn(async move {
            let _ = pipe.write_all(&bytes).await;
        });
    }
    let (tx, mut rx) = mpsc::channel::<(Stream, String)>(64);
    if let Some(stdout) = child.stdout.take() {
        tokio::spawn(pump(stdout, Stream::Out, tx.clone()));
    }
    if let Some(stderr) = child.stderr.take() {
        tokio::spawn(pump(stderr, Stream::Err, tx));
    }
    let mut combined = OutputBuffer::default();
    let mut stdout = OutputBuffer::default();
    let mut stderr = OutputBuffer::default();
    let mut status: Option<ExitStatus> = None;
    let mut pipes_open = true;
    while pipes_open || status.is_none() {
        tokio::select! {
            biased;
            () = ctx.cancel.cancelled() => {
                group.kill();
                return Err(ToolError::Cancelled);
            }
            () = sleep_until(deadline) => {
                let mut output = head_tail(&combined.finish(), MAX_OUTPUT_BYTES);
                // Read before the kill: the cgroup's counters go with it.
                let note = group.guard.limit_note(&output);
                group.kill();
                ctx.emit_output(format!(
                    "\n[timed out after {} s; the command and its children were killed]\n",
                    limit.as_secs(),
                ))
                .await;
                if let Some(note) = note {
                    output.push_str(&note);
                    output.push('\n');
                }
                return Err(ToolError::TimedOut { after: limit, output });
            }
            chunk = rx.recv(), if pipes_open => match chunk {
                Some((stream, first)) => {
                    let mut batch = String::new();
                    let mut next = Some((stream, first));
                    while let Some((stream, piece)) = next.take() {
                        match stream {
                            Stream::Out => stdout.push(&piece),
                            Stream::Err => stderr.push(&piece),
                        }
                        batch.push_str(&piece);
                        if batch.len() < MAX_EVENT_BYTES {
                            next = rx.try_recv().ok();
                        }
                    }
                    combined.push(&batch);
                    tokio::select! {
                        biased;
                        () = ctx.cancel.cancelled() => {}
                        () = sleep_until(deadline) => {}
                        () = ctx.emit_output(batch) => {}
                    }
                }
                None => pipes_open = false,
            },
            exited = child.wait(), if status.is_none() => {
                let exited = exited
                    .map_err(|e| ToolError::Failed(format!("waiting for the command failed: {e}")))?;
                status = Some(exited);
                group.reaped = true;
                // Background processes left behind would hold the pipes open forever.
                group.kill();
            }
        }
    }
    let combined = head_tail(&combined.finish(), MAX_OUTPUT_BYTES);
    let Some(status) = status else {
        return Err(ToolError::Failed(format!(
            "{combined}\nbash ended without an exit status"
        )));
    };
    let note = (!status.success())
        .then(|| group.guard.explain(&combined))
        .flatten();
    Ok(Finished {
        combined,
        stdout_bytes: stdout.total,
        stdout: stdout.finish(),
        stderr: stderr.finish(),
        status,
        note,
    })
}

/// The running command; everything it started is killed when asked and, at the latest, when
/// dropped.
struct Running {
    guard: RunGuard,
    /// The spawned process, until it was killed.
    pid: Option<libc::pid_t>,
    /// Once the process is reaped its id may be reused, so only its group and cgroup are
    /// killed, not a tree found by walking from the id.
    reaped: bool,
}

impl Running {
    /// Kills the command and all it started, once; later calls do nothing, so a reused id is
    /// never signalled.
    fn kill(&mut self) {
        if let Some(pid) = self.pid.take() {
            self.guard.kill(pid, self.reaped);
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Forwards one pipe as newline-terminated pieces (or long partial lines), lossily decoded.
async fn pump(
    mut reader: impl AsyncRead + Unpin,
    stream: Stream,
    tx: mpsc::Sender<(Stream, String)>,
) {
    let mut buf = vec![0u8; 8 * 1024];
    let mut pending = Vec::new();
    loop {
        let n = match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        pending.extend_from_slice(&buf[..n]);
        let complete = match memchr::memrchr(b'\n', &pending) {
            Some(end) => end + 1,
            None if pending.len() > MAX_PENDING_BYTES => pending.len(),
            None => continue,
        };
        let piece = String::from_utf8_lossy(&pending[..complete]).into_owned();
        pending.drain(..complete);
        if tx.send((stream, piece)).await.is_err() {
            return;
        }
    }
    if !pending.is_empty() {
        let piece = String::from_utf8_lossy(&pending).into_owned();
        let _ = tx.send((stream, piece)).await;
    }
}

/// Keeps about the first and the last `MAX_OUTPUT_BYTES / 2` bytes of the output and counts what
/// falls between, so a command printing gigabytes costs bounded memory.
#[derive(Default)]
struct OutputBuffer {
    head: String,
    tail: String,
    omitted_bytes: usize,
    omitted_lines: usize,
    /// Every byte pushed, kept or not.
    total: usize,
}

impl OutputBuffer {
    /// A little under half, so head, note and tail together stay within `MAX_OUTPUT_BYTES`.
    const HALF: usize = MAX_OUTPUT_BYTES / 2 - 128;

    fn push(&mut self, text: &str) {
        self.total += text.len();
        let room = Self::HALF.saturating_sub(self.head.len());
        let split = floor_char_boundary(text, room.min(text.len()));
        self.head.push_str(&text[..split]);
        self.tail.push_str(&text[split..]);
        if self.tail.len() > 2 * Self::HALF {
            self.trim_tail();
        }
    }

    fn trim_tail(&mut self) {
        let cut = ceil_char_boundary(&self.tail, self.tail.len().saturating_sub(Self::HALF));
        self.omitted_bytes += cut;
        self.omitted_lines += self.tail[..cut].bytes().filter(|&b| b == b'\n').count();
        self.tail.drain(..cut);
    }

    fn finish(mut self) -> String {
        if self.tail.len() > Self::HALF {
            self.trim_tail();
        }
        if self.omitted_bytes == 0 {
            return self.head + &self.tail;
        }
        format!(
            "{}\n[… output truncated: {} lines, {} bytes omitted …]\n{}",
            self.head, self.omitted_lines, self.omitted_bytes, self.tail
        )
    }
}
