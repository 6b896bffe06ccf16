use super::*;

fn entries(text: &str) -> BTreeMap<String, McpServerEntry> {
    #[derive(Deserialize)]
    struct File {
        mcp_servers: BTreeMap<String, McpServerEntry>,
    }
    match toml::from_str::<File>(text) {
        Ok(file) => file.mcp_servers,
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn a_command_entry_gets_the_defaults() {
    let servers = entries("[mcp_servers.fs]\ncommand = \"npx\"\nargs = [\"-y\", \"x\"]\n");
    let config = servers["fs"].config("fs").cloned().unwrap_or_default();
    assert_eq!(config.startup_timeout_secs, 10);
    assert_eq!(config.tool_timeout_secs, 60);
    assert!(config.enabled);
    assert!(matches!(
        config.transport("fs"),
        Ok(Transport::Stdio { command, .. }) if command == "npx"
    ));
}

#[test]
fn a_broken_entry_names_its_server_and_key_and_leaves_the_others() {
    let servers = entries(
        "[mcp_servers.bad]\ncommand = \"x\"\ntool_timeout_secs = \"soon\"\n\
         [mcp_servers.good]\nurl = \"https://example.com/mcp\"\n",
    );
    let error = servers["bad"].config("bad").err().map(|e| e.to_string());
    assert_eq!(
        error.as_deref(),
        Some(
            "MCP server `bad`: key `mcp_servers.bad.tool_timeout_secs`: expected a whole \
             number of seconds (0 or more), found `\"soon\"`"
        )
    );
    assert!(servers["good"].config("good").is_ok());
}

#[test]
fn an_unknown_key_is_named() {
    let servers = entries("[mcp_servers.s]\ncomand = \"x\"\n");
    let error = servers["s"].config("s").err();
    assert_eq!(error.map(|e| e.key), Some("comand".to_string()));
}

#[test]
fn command_and_url_are_exclusive_and_one_is_needed() {
    let both = McpServerConfig {
        command: Some("x".into()),
        url: Some("https://e".into()),
        ..Default::default()
    };
    assert_eq!(both.transport("s").err().map(|e| e.key), Some("url".into()));
    let neither = McpServerConfig::default();
    assert_eq!(
        neither.transport("s").err().map(|e| e.key),
        Some("command".into())
    );
    let headers_on_command = McpServerConfig {
        command: Some("x".into()),
        headers: BTreeMap::from([("A".into(), "b".into())]),
        ..Default::default()
    };
    assert_eq!(
        headers_on_command.transport("s").err().map(|e| e.key),
        Some("headers".into())
    );
}

#[test]
fn enabled_and_disabled_tools_filter_the_offer() {
    let config = McpServerConfig {
        enabled_tools: Some(vec!["a".into(), "b".into()]),
        disabled_tools: vec!["b".into()],
        ..Default::default()
    };
    assert!(config.offers("a"));
    assert!(!config.offers("b"));
    assert!(!config.offers("c"));
}
