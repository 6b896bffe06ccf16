//! What a repository carries and mnemo reads on its own (instruction files, its config) cannot
//! leak a secret, hang start-up, exhaust memory or crash mnemo: end to end through the binary.

mod cli_support;

use cli_support::{Workspace, text};
use serde_json::json;

#[test]
fn an_infinite_timeout_in_a_repository_config_is_a_clear_error_not_a_crash() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path().join(".mnemo")).unwrap_or_else(|e| panic!("{e}"));
    ws.write(
        ".mnemo/config.toml",
        "[retry]\nconnect_timeout_secs = inf\n",
    );
    let model = ws.script(json!({"turns": [{"text": "hello"}]}));
    let out = ws.mnemo(&["--model", &model, "run", "hi"], None);
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert_ne!(out.status.code(), Some(101), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains(".mnemo/config.toml"), "{stderr}");
    assert!(stderr.contains("retry.connect_timeout_secs"), "{stderr}");
}
