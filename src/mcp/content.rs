//! What a tool result or a resource says, as text for the model: text as is, structured
//! content as JSON, images, audio and binary blobs described by their type and size (their
//! bytes would only waste the context), resource links by their URI.

use serde_json::Value;

/// The outcome of one MCP tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpResult {
    pub text: String,
    /// The server flagged the result as an error (`isError`): a tool error for the model.
    pub is_error: bool,
    /// The images the tool returned, for the model to see (the text describes them too).
    pub images: Vec<crate::llm::image::ImageBlock>,
}

/// The image blocks of a `tools/call` result that decode as images models read (bounded and
/// downscaled like any image); the others stay described in the text.
pub fn result_images(content: &[Value]) -> Vec<crate::llm::image::ImageBlock> {
    use base64::Engine;
    content
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("image"))
        .filter_map(|b| b.get("data").and_then(Value::as_str))
        .filter_map(|data| base64::engine::general_purpose::STANDARD.decode(data).ok())
        .enumerate()
        .filter_map(|(at, bytes)| {
            crate::llm::image::ImageBlock::from_bytes(&format!("image {}", at + 1), &bytes).ok()
        })
        .collect()
}

/// The text of a `tools/call` result given as JSON (`content`, `structuredContent`).
pub fn result_text(content: &[Value], structured: Option<&Value>) -> String {
    let mut parts: Vec<String> = content.iter().map(block_text).collect();
    if let Some(structured) = structured {
        let json = serde_json::to_string_pretty(structured).unwrap_or_default();
        let texts: Vec<&str> = content
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect();
        if !repeats(structured, &texts) {
            parts.push(json);
        }
    }
    parts.join("\n")
}

/// Whether `structured` only says what the text blocks say: servers send the same JSON as
/// text for older clients, or wrap their text in an object (`{"content": text}`).
fn repeats(structured: &Value, texts: &[&str]) -> bool {
    let same_json = texts
        .iter()
        .any(|text| serde_json::from_str::<Value>(text).ok().as_ref() == Some(structured));
    let wrapped = structured.as_object().is_some_and(|fields| {
        !fields.is_empty()
            && fields
                .values()
                .all(|v| v.as_str().is_some_and(|v| texts.contains(&v)))
    });
    same_json || wrapped
}

/// One content block (or resource contents) in words.
pub fn block_text(block: &Value) -> String {
    let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
    let str_of = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or("");
    match kind {
        "text" => str_of("text").to_string(),
        "image" | "audio" => described(kind, str_of("mimeType"), str_of("data")),
        "resource" => block
            .get("resource")
            .map_or_else(String::new, resource_text),
        "resource_link" => format!("[resource link: {} ({})]", str_of("uri"), str_of("name")),
        _ if block.get("uri").is_some() => resource_text(block),
        other => format!("[{other} content]"),
    }
}

/// Resource contents: the text, or the blob described.
pub fn resource_text(contents: &Value) -> String {
    let str_of = |key: &str| contents.get(key).and_then(Value::as_str);
    match (str_of("text"), str_of("blob")) {
        (Some(text), _) => text.to_string(),
        (None, Some(blob)) => described(
            "resource",
            str_of("mimeType").unwrap_or("application/octet-stream"),
            blob,
        ),
        (None, None) => format!("[empty resource {}]", str_of("uri").unwrap_or("")),
    }
}

/// `[image: image/png, 1.2 KB]` for base64 `data`.
fn described(kind: &str, mime: &str, base64: &str) -> String {
    let bytes = base64.trim_end_matches('=').len() * 3 / 4;
    let size = if bytes >= 1024 * 1024 {
        format!("{:.1} MB", bytes as f64 / (1024.0 * 1024.0))
    } else if bytes >= 1024 {
        format!("{:.1} KB", bytes as f64 / 1024.0)
    } else {
        format!("{bytes} bytes")
    };
    let mime = if mime.is_empty() {
        "unknown type"
    } else {
        mime
    };
    format!("[{kind}: {mime}, {size}]")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_passes_and_images_are_described() {
        let content = [
            json!({"type": "text", "text": "hello"}),
            json!({"type": "image", "mimeType": "image/png", "data": "A".repeat(4096)}),
        ];
        assert_eq!(
            result_text(&content, None),
            "hello\n[image: image/png, 3.0 KB]"
        );
    }

    #[test]
    fn image_blocks_become_images_for_the_model() {
        use base64::Engine;
        let mut png = std::io::Cursor::new(Vec::new());
        image::DynamicImage::new_rgb8(3, 2)
            .write_to(&mut png, image::ImageFormat::Png)
            .unwrap_or_else(|e| panic!("{e}"));
        let data = base64::engine::general_purpose::STANDARD.encode(png.get_ref());
        let content = [
            json!({"type": "text", "text": "chart"}),
            json!({"type": "image", "mimeType": "image/png", "data": data}),
            json!({"type": "image", "mimeType": "image/png", "data": "not base64!"}),
        ];
        let images = result_images(&content);
        assert_eq!(images.len(), 1);
        assert_eq!((images[0].width, images[0].height), (3, 2));
        assert_eq!(images[0].data, data);
    }

    #[test]
    fn structured_content_is_added_unless_the_text_repeats_it() {
        let structured = json!({"t": 1});
        let repeated = [json!({"type": "text", "text": "{\"t\":1}"})];
        assert_eq!(result_text(&repeated, Some(&structured)), "{\"t\":1}");
        let wrapped = [json!({"type": "text", "text": "file body"})];
        let wrapper = json!({"content": "file body"});
        assert_eq!(result_text(&wrapped, Some(&wrapper)), "file body");
        let other = [json!({"type": "text", "text": "weather"})];
        assert_eq!(
            result_text(&other, Some(&structured)),
            "weather\n{\n  \"t\": 1\n}"
        );
    }
}
