//! The person's own slash commands on the session side: a prompt `/NAME args` becomes the
//! command's text before the turn opens, so every front end gets the same expansion; a command
//! with a `model` runs its turn on that model and the session goes back afterwards.

use std::sync::Arc;

use super::Session;
use crate::protocol::{Event, UserMessageKind};
use crate::user_commands::{Expansion, UserCommands, untrusted_message};

impl Session {
    /// Expands prompts that name one of `commands` from now on.
    pub fn set_user_commands(&mut self, commands: Arc<UserCommands>) {
        self.user_commands = commands;
    }

    /// Tells the front end which commands this session expands.
    pub(super) async fn announce_user_commands(&self) {
        if self.user_commands.commands.is_empty() {
            return;
        }
        let commands = self.user_commands.infos();
        self.emit(Event::UserCommands { commands }).await;
    }

    /// The prompt to send for `text`, and the model to go back to after the turn when the
    /// command switched it; `Err` says why the command is not run.
    pub(super) async fn expand_user_command(
        &mut self,
        text: String,
        kind: UserMessageKind,
    ) -> Result<(String, Option<String>), String> {
        if !matches!(kind, UserMessageKind::Prompt | UserMessageKind::Queued) {
            return Ok((text, None));
        }
        let commands = Arc::clone(&self.user_commands);
        let (prompt, model) = match commands.expand(&text) {
            Expansion::Plain => return Ok((text, None)),
            Expansion::Untrusted(name) => return Err(untrusted_message(&name)),
            Expansion::Command { command, prompt } => (prompt, command.model.clone()),
        };
        let current = self.model_name();
        let Some(model) = model.filter(|m| *m != current) else {
            return Ok((prompt, None));
        };
        self.change_model(&model).await;
        let switched = self.model_name() != current;
        Ok((prompt, switched.then_some(current)))
    }
}
