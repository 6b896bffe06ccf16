//! The bound on what a tool hands back to the model; `crate::text::head_tail` cuts to it.

/// Output larger than this is cut to its head and tail before the model sees it.
pub const MAX_OUTPUT_BYTES: usize = 32 * 1024;
