//! OpenAI Chat Completions and compatible servers (streaming).
