//! What a capability must be before it is stored: a short `[a-z0-9-]` name that no static tool
//! has, an object schema for its input, a known language and bounded code.

use serde_json::Value;

/// Longest name, in characters.
pub const MAX_NAME: usize = 48;
/// Largest code: it is passed to the interpreter as one argument.
pub const MAX_CODE_BYTES: usize = 64 * 1024;
/// Largest description.
pub const MAX_DESCRIPTION: usize = 1024;
/// The interpreters a capability may be written for.
pub const LANGUAGES: [&str; 3] = ["bash", "python3", "node"];

pub fn name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.chars().count() > MAX_NAME {
        return Err(format!(
            "the name must have 1 to {MAX_NAME} characters, not {}",
            name.chars().count()
        ));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Err(format!(
            "the name `{name}` may only hold lowercase letters, digits and `-`"
        ));
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Err(format!("the name `{name}` must not start or end with `-`"));
    }
    Ok(())
}

/// Checks `name` against the static tools: neither the name nor its tool name may be one.
pub fn no_clash(name: &str, static_tools: &[String]) -> Result<(), String> {
    let tool = super::tool_name(name);
    match static_tools
        .iter()
        .find(|t| **t == name || **t == name.replace('-', "_") || **t == tool)
    {
        Some(clash) => Err(format!(
            "the name `{name}` clashes with the built-in tool `{clash}`; choose another"
        )),
        None => Ok(()),
    }
}

/// An input schema must describe an object (the arguments arrive as one JSON object).
pub fn input_schema(schema: &Value) -> Result<(), String> {
    let Some(object) = schema.as_object() else {
        return Err(
            "input_schema must be a JSON Schema object, like {\"type\": \"object\", \
             \"properties\": {…}}"
                .into(),
        );
    };
    if object.get("type").and_then(Value::as_str) != Some("object") {
        return Err(
            "input_schema must have \"type\": \"object\": a capability's arguments \
             are one JSON object"
                .into(),
        );
    }
    if let Some(properties) = object.get("properties")
        && !properties.is_object()
    {
        return Err("input_schema.properties must be an object of property schemas".into());
    }
    if let Some(required) = object.get("required")
        && !required
            .as_array()
            .is_some_and(|r| r.iter().all(Value::is_string))
    {
        return Err("input_schema.required must be an array of property names".into());
    }
    Ok(())
}

pub fn language(language: &str) -> Result<(), String> {
    match LANGUAGES.contains(&language) {
        true => Ok(()),
        false => Err(format!(
            "language `{language}` is not supported; use one of: {}",
            LANGUAGES.join(", ")
        )),
    }
}

pub fn code(code: &str) -> Result<(), String> {
    if code.trim().is_empty() {
        return Err("the code is empty".into());
    }
    if code.len() > MAX_CODE_BYTES {
        return Err(format!(
            "the code has {} bytes; at most {MAX_CODE_BYTES} are allowed",
            code.len()
        ));
    }
    if code.contains('\0') {
        return Err("the code contains a NUL byte".into());
    }
    Ok(())
}

pub fn description(description: &str) -> Result<(), String> {
    match description.trim().is_empty() || description.len() > MAX_DESCRIPTION {
        true => Err(format!(
            "the description must be 1 to {MAX_DESCRIPTION} bytes of text"
        )),
        false => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_are_short_lowercase_and_dashed() {
        assert!(name("sha256-hash").is_ok());
        assert!(name(&"a".repeat(MAX_NAME)).is_ok());
        for bad in [
            "",
            "Sha",
            "a_b",
            "a b",
            "-a",
            "a-",
            "é",
            &"a".repeat(MAX_NAME + 1),
        ] {
            assert!(name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_name_may_not_be_a_static_tool() {
        let tools = vec!["shell".to_string(), "read_file".into()];
        assert!(no_clash("shell", &tools).is_err_and(|e| e.contains("`shell`")));
        assert!(no_clash("read-file", &tools).is_err());
        assert!(no_clash("sha256-hash", &tools).is_ok());
    }

    #[test]
    fn schemas_must_describe_an_object() {
        assert!(input_schema(&json!({"type": "object", "properties": {}})).is_ok());
        assert!(input_schema(&json!({"type": "object"})).is_ok());
        for bad in [
            json!("object"),
            json!({"type": "string"}),
            json!({"properties": {}}),
            json!({"type": "object", "properties": []}),
            json!({"type": "object", "required": [1]}),
        ] {
            assert!(input_schema(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn code_and_language_are_bounded() {
        assert!(code("echo hi").is_ok());
        assert!(code(" \n").is_err());
        assert!(code(&"x".repeat(MAX_CODE_BYTES + 1)).is_err());
        assert!(language("python3").is_ok());
        assert!(language("ruby").is_err_and(|e| e.contains("bash, python3, node")));
    }
}
