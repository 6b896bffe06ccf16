//! `Op::SetModel`: the session goes on with another model's chain, history and all.

use std::sync::Arc;

use super::Inbox;
use super::session::Session;
use super::subagents::ModelFactory;
use crate::protocol::Event;

impl Session {
    /// `Op::SetModel` builds its chains with `factory`.
    pub fn set_model_factory(&mut self, factory: ModelFactory) {
        Arc::make_mut(&mut self.services).model_factory = Some(factory);
    }

    /// Makes `name` the session's model from the next model call on and says so; when it
    /// cannot be prepared, says why and keeps the model it has.
    pub(super) async fn change_model(&mut self, name: &str) {
        let built = match &self.services.model_factory {
            Some(factory) => factory(name),
            None => Err("this session cannot change its model".to_string()),
        };
        let chain = match built {
            Ok(chain) => chain,
            Err(why) => {
                let message = format!(
                    "Cannot switch to {name}: {why}; still using {}",
                    self.model_name()
                );
                self.emit(Event::Error { message }).await;
                return;
            }
        };
        self.chain = chain;
        let context_window = self.chain.primary().map_or(0, |m| m.context_window);
        self.emit(Event::ModelChanged {
            model: self.model_name(),
            context_window,
        })
        .await;
        if let Some(message) = self.window_too_small() {
            self.emit(Event::Error { message }).await;
        }
    }
}

/// The model a running turn was asked to switch to, if any (the latest ask wins).
pub(super) fn take_model(inbox: &Inbox) -> Option<String> {
    inbox
        .lock()
        .ok()
        .and_then(|mut pending| pending.model.take())
}
