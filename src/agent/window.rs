//! Whether the model's context window holds mnemo's fixed prompt with room to spare. A window
//! too small for it (a local model of 4,000 tokens beside a system prompt and some thirty tool
//! schemas of about 5,000) is said before the first request, with what would fit, instead of
//! compacting the same messages again at every step.

use super::Session;

/// The fewest tokens a request must leave for the conversation itself.
pub(super) const MIN_CONVERSATION: u64 = 1_000;

impl Session {
    /// Why the fixed part of a request leaves too little of the window for the conversation,
    /// with what would fit; `None` when it fits.
    pub(super) fn window_too_small(&self) -> Option<String> {
        let model = self.chain.primary()?;
        let room = self.message_budget(self.budget());
        if room >= MIN_CONVERSATION {
            return None;
        }
        let ratio = self.calibration.ratio().max(0.01);
        let fixed = self.prompt_tokens + self.step_tools.tool_tokens;
        let fixed_counted = self.calibration.apply(fixed);
        let reserve = (model.context_window / 50).max(2000);
        // The window at which the same output limit, reserve and fixed part leave the minimum.
        let needed = fixed_counted
            + (MIN_CONVERSATION as f64 * ratio) as u64
            + u64::from(model.max_output_tokens)
            + reserve;
        let tools = self.step_tools.toolset.specs.len();
        Some(format!(
            "the context window of {name} ({window} tokens) is too small for mnemo's fixed \
             prompt: less the output limit ({output}) and a reserve ({reserve}), {budget} tokens \
             are left for a request, but the system prompt takes about {prompt} and the {tools} \
             tool schemas about {schemas}, leaving {room} for the conversation (it needs at least \
             {MIN_CONVERSATION}). What would fit: a window of at least {needed} tokens \
             (context_window of the model in the config), a lower max_output_tokens, fewer tools \
             (MCP servers, pinned capabilities) or a shorter prompt (AGENTS.md, skills)",
            name = model.name,
            window = model.context_window,
            output = model.max_output_tokens,
            budget = self.budget(),
            prompt = self.calibration.apply(self.prompt_tokens),
            schemas = self.calibration.apply(self.step_tools.tool_tokens),
        ))
    }
}
