//! Tests of `request.rs`: the request body, its cache breakpoints and merged messages.

use serde_json::json;

use super::*;

fn to_json(request: &ModelRequest) -> Value {
    serde_json::to_value(body("claude-sonnet-4-5", request)).unwrap_or_default()
}

fn request(messages: Vec<Message>) -> ModelRequest {
    ModelRequest {
        system: "You are mnemo.".into(),
        messages: messages.into_iter().map(Arc::new).collect(),
        tools: vec![
            ToolSpec {
                name: "read_file".into(),
                description: "Reads a file".into(),
                input_schema: json!({"type": "object"}).into(),
            },
            ToolSpec {
                name: "shell".into(),
                description: "Runs a command".into(),
                input_schema: json!({"type": "object"}).into(),
            },
        ]
        .into(),
        static_tools: usize::MAX,
        volatile_tail: 0,
        tool_calls: ToolCalls::Allowed,
        server_search: false,
        max_output_tokens: 8192,
    }
}

fn tool_result(id: &str, content: &str) -> ContentBlock {
    ContentBlock::ToolResult {
        tool_use_id: id.into(),
        content: content.into(),
        is_error: false,
    }
}

#[test]
fn four_breakpoints_mark_system_last_tool_and_last_two_user_messages() {
    let body = to_json(&request(vec![
        Message::user_text("first"),
        Message::assistant(vec![ContentBlock::Text { text: "ok".into() }]),
        Message::user_text("second"),
        Message::assistant(vec![ContentBlock::Text { text: "ok".into() }]),
        Message::user_text("third"),
    ]));
    let text = body.to_string();
    assert_eq!(text.matches("\"cache_control\"").count(), 4, "{text}");
    assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
    assert!(body["tools"][0].get("cache_control").is_none());
    assert_eq!(body["tools"][1]["cache_control"]["type"], "ephemeral");
    assert!(
        body["messages"][0]["content"][0]
            .get("cache_control")
            .is_none()
    );
    assert_eq!(
        body["messages"][2]["content"][0]["cache_control"]["type"],
        "ephemeral"
    );
    assert_eq!(
        body["messages"][4]["content"][0]["cache_control"]["type"],
        "ephemeral"
    );
}

#[test]
fn batch_params_put_the_shared_block_first_with_the_only_system_breakpoint() {
    let mut request = request(vec![Message::user_text("go")]);
    request.tools = Vec::new().into();
    request.system = "You are the analyst.".into();
    let params = batch_params("claude-haiku", &request, "SHARED");
    assert!(params.get("stream").is_none(), "{params}");
    assert_eq!(params["system"][0]["text"], "SHARED");
    assert_eq!(params["system"][0]["cache_control"]["type"], "ephemeral");
    assert_eq!(params["system"][1]["text"], "You are the analyst.");
    assert!(params["system"][1].get("cache_control").is_none());
    assert_eq!(params["messages"][0]["content"][0]["text"], "go");
}

#[test]
fn tool_results_come_first_in_a_merged_user_message() {
    let body = to_json(&request(vec![
        Message::user_text("note"),
        Message {
            role: Role::User,
            content: vec![tool_result("toolu_1", "done")],
        },
    ]));
    let content = &body["messages"][0]["content"];
    assert_eq!(content[0]["type"], "tool_result");
    assert_eq!(content[1]["text"], "note");
}

#[test]
fn empty_text_unsigned_thinking_and_empty_messages_are_left_out() {
    let body = to_json(&request(vec![
        Message::user_text("hi"),
        Message::assistant(vec![
            ContentBlock::Thinking {
                thinking: "from another model".into(),
                signature: None,
            },
            ContentBlock::Text { text: " \n".into() },
        ]),
        Message::user_text("again"),
    ]));
    assert_eq!(body["messages"].as_array().map(Vec::len), Some(1));
    assert_eq!(body["messages"][0]["content"][1]["text"], "again");
}

#[test]
fn non_object_tool_input_goes_back_as_an_empty_object() {
    let body = to_json(&request(vec![Message::assistant(vec![
        ContentBlock::ToolUse {
            id: "toolu_1".into(),
            name: "shell".into(),
            input: Value::String("{\"command\": \"ls".into()),
        },
    ])]));
    assert_eq!(body["messages"][0]["content"][0]["input"], json!({}));
}
