//! The services a front end may offer the session's tools in place of mnemo's own (an editor's
//! unsaved buffers and its terminal), and the requests and replies that use them. mnemo checks
//! every path and asks every approval before a request leaves; the front end only carries it
//! out.

use serde::{Deserialize, Serialize};

/// What a front end offers; nothing unless it says so.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FrontEndServices {
    /// Reads text files as the editor has them, unsaved changes included.
    pub read_files: bool,
    /// Writes text files through the editor, which then shows them as they are.
    pub write_files: bool,
    /// Runs commands in the editor's terminal (inside mnemo's sandbox all the same).
    pub terminal: bool,
}

impl FrontEndServices {
    pub fn any(&self) -> bool {
        self.read_files || self.write_files || self.terminal
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FrontEndRequest {
    /// The text of `path` (absolute, canonical, already checked by mnemo).
    ReadTextFile { path: String },
    /// Replace the text of `path` (absolute, already checked and approved) with `content`.
    WriteTextFile { path: String, content: String },
    /// Run `program` with `args` in `cwd` and answer with its output once it exits, killing
    /// it after `timeout_ms`. The program is mnemo itself, confining the command the way its
    /// own shell does; the front end passes no environment of its own beyond what it has.
    RunCommand {
        /// The command as the model wrote it, for the front end to show.
        command: String,
        program: String,
        args: Vec<String>,
        cwd: String,
        timeout_ms: u64,
        /// The most output to keep, in bytes (the end of it when longer).
        output_limit: u64,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FrontEndReply {
    /// The text of a file read.
    Text { content: String },
    /// The file was written.
    Written,
    /// The command ended (by itself, or killed when its time was up).
    Exited {
        output: String,
        /// Its exit code; `None` when a signal ended it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signal: Option<String>,
        /// Output was dropped from the start to keep within the limit.
        #[serde(default)]
        truncated: bool,
        /// It was killed when its time was up.
        #[serde(default)]
        timed_out: bool,
    },
    /// The front end could not do it; why.
    Failed { message: String },
}
