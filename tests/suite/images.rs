//! Images reach the model: `read_file` of an image through the real binary on the Chat
//! Completions wire (an image part for a model that reads images, a description for one that
//! does not), and the Anthropic wire's image blocks beside and inside tool results.

use crate::cli_support;
use crate::common;

use std::io::Cursor;
use std::sync::Arc;

use cli_support::{Workspace, text};
use common::{
    Reply, TestServer, openai_text, openai_tool_call, run_on_openai_server, run_provider,
    simple_request,
};
use mnemo::llm::anthropic::AnthropicProvider;
use mnemo::llm::image::ImageBlock;
use mnemo::llm::{ContentBlock, Message, Role};
use serde_json::{Value, json};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const TEXT: &str = include_str!("../fixtures/anthropic/text.sse");

fn png(width: u32, height: u32) -> Vec<u8> {
    let pixels = image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([(x * 40 % 256) as u8, (y * 40 % 256) as u8, 128])
    });
    let mut out = Cursor::new(Vec::new());
    image::DynamicImage::ImageRgb8(pixels)
        .write_to(&mut out, image::ImageFormat::Png)
        .unwrap_or_else(|e| panic!("{e}"));
    out.into_inner()
}

/// Runs `mnemo run` against an OpenAI-compatible server whose model `model` reads
/// `shot.png`, and returns the body of the request that carries the tool result.
async fn read_image_on_openai(model: &str) -> Result<Value, Box<dyn std::error::Error>> {
    let server = TestServer::start(vec![
        Reply::sse(&openai_tool_call("read_file", &json!({"path": "shot.png"}))),
        Reply::sse(&openai_text("a gradient")),
    ])
    .await?;
    let ws = Arc::new(Workspace::new());
    std::fs::write(ws.path().join("shot.png"), png(30, 20))?;
    let mut args = run_on_openai_server(&server.base_url, "what is in shot.png?");
    if let Some(at) = args.iter().position(|a| a == "m") {
        args[at] = model.to_string();
    }
    let run = Arc::clone(&ws);
    let out = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run.mnemo_with(&args, None, &[("LLM_KEY", "k")])
    })
    .await?;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    Ok(requests[1].json()?)
}

#[tokio::test(flavor = "multi_thread")]
async fn read_file_of_an_image_sends_an_image_part_to_a_model_that_reads_images() -> TestResult {
    let body = read_image_on_openai("gpt-4o").await?;
    let messages = body["messages"].as_array().ok_or("no messages")?;
    let tool = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .ok_or("no tool message")?;
    assert!(
        tool["content"]
            .as_str()
            .is_some_and(|t| t.contains("shot.png is an image (image/png, 30×20)")),
        "{tool}"
    );
    let user = messages.last().ok_or("no last message")?;
    assert_eq!(user["role"], "user", "{body}");
    assert_eq!(
        user["content"][0]["text"],
        "The image shot.png returned by tool call call_1:"
    );
    assert_eq!(user["content"][1]["type"], "image_url");
    let url = user["content"][1]["image_url"]["url"]
        .as_str()
        .ok_or("no url")?;
    assert!(url.starts_with("data:image/png;base64,iVBOR"), "{url}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn read_file_of_an_image_is_described_to_a_model_without_images() -> TestResult {
    let body = read_image_on_openai("deepseek-chat").await?;
    let text = body.to_string();
    assert!(!text.contains("image_url"), "{text}");
    assert!(!text.contains("iVBOR"), "no base64 was sent: {text}");
    assert!(
        text.contains("[image: shot.png, image/png, 30×20, 1 KB: this model does not read images] (returned by tool call call_1)"),
        "{text}"
    );
    Ok(())
}

#[tokio::test]
async fn anthropic_requests_carry_image_blocks_in_user_content_and_tool_results() -> TestResult {
    let shot = ImageBlock::from_bytes("shot.png", &png(8, 6))?;
    let mut from_tool = ImageBlock::from_bytes("plot.png", &png(4, 4))?;
    from_tool.tool_use_id = Some("toolu_1".into());
    let mut request = simple_request();
    request.messages = vec![
        Arc::new(Message {
            role: Role::User,
            content: vec![
                ContentBlock::Text {
                    text: "what is this?".into(),
                },
                ContentBlock::Image(shot.clone()),
            ],
        }),
        Arc::new(Message::assistant(vec![ContentBlock::ToolUse {
            id: "toolu_1".into(),
            name: "read_file".into(),
            input: json!({"path": "plot.png"}),
        }])),
        Arc::new(Message {
            role: Role::User,
            content: vec![
                ContentBlock::ToolResult {
                    tool_use_id: "toolu_1".into(),
                    content: "plot.png is an image".into(),
                    is_error: false,
                },
                ContentBlock::Image(from_tool.clone()),
            ],
        }),
    ];
    let (server, outcome) = run_provider(Reply::sse(TEXT), request, |server| {
        AnthropicProvider::new(server.settings("claude-sonnet-4-5", Some("k")))
    })
    .await?;
    outcome?;
    let body = server.only_request().json()?;
    let first = &body["messages"][0]["content"];
    assert_eq!(first[0]["text"], "what is this?");
    assert_eq!(first[1]["type"], "image");
    assert_eq!(first[1]["source"]["type"], "base64");
    assert_eq!(first[1]["source"]["media_type"], "image/png");
    assert_eq!(first[1]["source"]["data"], shot.data.as_str());
    let result = &body["messages"][2]["content"];
    assert_eq!(result.as_array().map(Vec::len), Some(1), "{result}");
    assert_eq!(result[0]["type"], "tool_result");
    assert_eq!(result[0]["content"][0]["text"], "plot.png is an image");
    assert_eq!(result[0]["content"][1]["type"], "image");
    assert_eq!(
        result[0]["content"][1]["source"]["data"],
        from_tool.data.as_str()
    );
    Ok(())
}

/// `mnemo run` with `--image` and an `@` mention: both images go in the prompt's message; an
/// image that cannot be attached stops the run before anything is sent.
#[tokio::test(flavor = "multi_thread")]
async fn mnemo_run_attaches_images_given_with_image_or_named_in_the_prompt() -> TestResult {
    let server = TestServer::start(vec![Reply::sse(&openai_text("two pictures"))]).await?;
    let ws = Arc::new(Workspace::new());
    std::fs::write(ws.path().join("a.png"), png(30, 20))?;
    std::fs::write(ws.path().join("b.png"), png(10, 10))?;
    let mut args = run_on_openai_server(&server.base_url, "compare @a.png with the other");
    args[5] = "gpt-4o".into();
    args.splice(
        args.len() - 1..args.len() - 1,
        ["--image".to_string(), "b.png".into()],
    );
    let out = cli_support::mnemo_with_key(&ws, args.clone()).await?;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("two pictures"));
    let body = server.only_request().json()?;
    let user = &body["messages"][1]["content"];
    let kinds: Vec<&str> = user
        .as_array()
        .ok_or("the user content is not a list of parts")?
        .iter()
        .filter_map(|p| p["type"].as_str())
        .collect();
    assert_eq!(kinds, ["text", "image_url", "image_url"], "{user}");

    let at = args.iter().position(|a| a == "b.png").ok_or("no --image")?;
    args[at] = "missing.png".into();
    let out = cli_support::mnemo_with_key(&ws, args).await?;
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("missing.png: not attached, there is no such file"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(server.requests().len(), 1, "nothing more was sent");
    Ok(())
}
