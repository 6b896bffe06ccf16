//! A one-model chain on the scripted provider, for the benchmarks that drive a session.

use std::sync::Arc;

use mnemo::llm::Price;
use mnemo::llm::fallback::{ChainModel, FallbackChain, RetryPolicy};
use mnemo::llm::scripted::{Script, ScriptedProvider};

pub fn chain(script: Script, context_window: u64) -> Arc<FallbackChain> {
    Arc::new(FallbackChain::new(
        vec![ChainModel {
            name: "scripted".into(),
            provider: Arc::new(ScriptedProvider::new(script)),
            context_window,
            max_output_tokens: 1024,
            price: Price::default(),
        }],
        RetryPolicy::default(),
    ))
}
