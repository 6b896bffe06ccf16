//! `web_fetch` against an in-test HTTP server: HTML comes back as markdown, redirects are
//! followed and judged again, a 50 MB body is cut without being read, a server that stalls is
//! given up on, binaries are described; and the rules for hosts hold (read-only, network off,
//! private addresses behind a session grant).

use crate::cli_support;

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mnemo::llm::image::ImageBlock;
use mnemo::sandbox::domains::{DomainList, DomainPattern};
use mnemo::sandbox::{ApprovalMode, Confinement, SandboxConfig, SandboxSection};
use mnemo::tools::web_fetch::WebFetch;
use mnemo::tools::{Approvals, Tool, ToolContext};
use serde_json::json;
use tokio_util::sync::CancellationToken;

type TestResult = Result<(), Box<dyn std::error::Error>>;

const PAGE: &str = "<html><head><style>b{}</style></head><body><h1>Release notes</h1>\
    <p>Version <strong>2.0</strong> is out.</p><script>track()</script></body></html>";

fn answer(mut stream: TcpStream, port: u16) -> std::io::Result<()> {
    let mut first = String::new();
    let mut reader = BufReader::new(stream.try_clone()?);
    reader.read_line(&mut first)?;
    let mut line = String::new();
    while reader.read_line(&mut line)? > 2 {
        line.clear();
    }
    let path = first.split(' ').nth(1).unwrap_or("/");
    let head = |status: &str, kind: &str, length: usize| {
        format!(
            "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n"
        )
    };
    match path {
        "/page" => write!(
            stream,
            "{}{PAGE}",
            head("200 OK", "text/html; charset=utf-8", PAGE.len())
        ),
        "/moved" => write!(
            stream,
            "HTTP/1.1 302 Found\r\nLocation: /page\r\nContent-Length: 0\r\n\r\n"
        ),
        "/away" => write!(
            stream,
            "HTTP/1.1 302 Found\r\nLocation: http://localhost:{port}/page\r\nContent-Length: 0\r\n\r\n"
        ),
        "/big" => {
            stream.write_all(head("200 OK", "text/plain", 50 << 20).as_bytes())?;
            let chunk = vec![b'a'; 64 << 10];
            // Until the client stops reading: it must not take all 50 MB.
            for _ in 0..800 {
                stream.write_all(&chunk)?;
            }
            Ok(())
        }
        "/slow" => {
            stream.write_all(head("200 OK", "text/plain", 100).as_bytes())?;
            std::thread::sleep(Duration::from_secs(10));
            Ok(())
        }
        "/logo.png" => {
            let png = b"\x89PNG\r\n\x1a\nnot really";
            stream.write_all(head("200 OK", "image/png", png.len()).as_bytes())?;
            stream.write_all(png)
        }
        "/shot.png" => {
            let mut png = std::io::Cursor::new(Vec::new());
            image::DynamicImage::new_rgb8(40, 30)
                .write_to(&mut png, image::ImageFormat::Png)
                .map_err(std::io::Error::other)?;
            let png = png.into_inner();
            stream.write_all(head("200 OK", "image/png", png.len()).as_bytes())?;
            stream.write_all(&png)
        }
        _ => write!(stream, "{}", head("404 Not Found", "text/plain", 0)),
    }
}

fn server() -> std::io::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || answer(stream, port));
        }
    });
    Ok(port)
}

fn approvals(domains: &[&str], network: bool, mode: ApprovalMode) -> Arc<Approvals> {
    let patterns = domains
        .iter()
        .map(|d| DomainPattern::parse(d).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    let section = SandboxSection {
        allow_domains: DomainList::new(patterns),
        network,
        ..SandboxSection::default()
    };
    Arc::new(Approvals::confined(
        SandboxConfig {
            network,
            ..SandboxConfig::default()
        },
        mode,
        Arc::new(Confinement::from_section(&section)),
    ))
}

async fn fetch(approvals: Arc<Approvals>, url: &str) -> Result<String, String> {
    fetch_seeing(approvals, url).await.map(|(text, _)| text)
}

/// The tool's text and the images it attached for the model.
async fn fetch_seeing(
    approvals: Arc<Approvals>,
    url: &str,
) -> Result<(String, Vec<ImageBlock>), String> {
    let dir = std::env::temp_dir();
    let ctx = ToolContext::new(
        dir,
        "web",
        "call",
        CancellationToken::new(),
        Duration::from_secs(2),
        None,
        approvals,
    );
    let text = WebFetch
        .call(json!({ "url": url }), &ctx)
        .await
        .map_err(|e| e.to_string())?;
    let images = ctx.images.lock().map(|i| i.clone()).unwrap_or_default();
    Ok((text, images))
}

#[tokio::test]
async fn a_listed_host_s_page_comes_back_as_markdown_through_its_redirects() -> TestResult {
    let port = server()?;
    let listed = approvals(&["127.0.0.1"], false, ApprovalMode::Auto);
    let page = fetch(listed.clone(), &format!("http://127.0.0.1:{port}/moved")).await?;
    assert!(
        page.starts_with(&format!("http://127.0.0.1:{port}/page · 200 · text/html")),
        "{page}"
    );
    assert!(page.contains("# Release notes"), "{page}");
    assert!(page.contains("Version **2.0** is out."), "{page}");
    assert!(!page.contains("track()") && !page.contains("b{}"), "{page}");

    // A redirect to a host that is not listed is judged again: nobody can approve it here.
    let away = fetch(listed.clone(), &format!("http://127.0.0.1:{port}/away")).await;
    let refused = away.err().unwrap_or_default();
    assert!(
        refused.contains("localhost is not in [sandbox] allow_domains"),
        "{refused}"
    );

    let (png, images) =
        fetch_seeing(listed.clone(), &format!("http://127.0.0.1:{port}/logo.png")).await?;
    assert!(
        png.contains("[binary content (image/png, 18 bytes): not shown]"),
        "a broken image is described: {png}"
    );
    assert!(images.is_empty());
    let (shot, images) = fetch_seeing(listed, &format!("http://127.0.0.1:{port}/shot.png")).await?;
    assert!(
        shot.ends_with("image/png\n\nan image (40×30); it is attached for you to see."),
        "{shot}"
    );
    assert_eq!(images.len(), 1);
    assert_eq!((images[0].name.as_str(), images[0].width), ("shot.png", 40));
    Ok(())
}

#[tokio::test]
async fn a_huge_body_is_cut_and_a_stalled_server_given_up_on() -> TestResult {
    let port = server()?;
    let listed = approvals(&["127.0.0.1"], false, ApprovalMode::Auto);
    let started = Instant::now();
    let big = fetch(listed.clone(), &format!("http://127.0.0.1:{port}/big")).await?;
    assert!(
        big.contains("[the body was cut after 5.0 MB of its 50.0 MB: the rest was not read]"),
        "{}",
        &big[big.len().saturating_sub(300)..]
    );
    assert!(
        big.contains("[cut at 40000 of 5242880 characters"),
        "the model gets a bounded text"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );

    let started = Instant::now();
    let slow = fetch(listed, &format!("http://127.0.0.1:{port}/slow")).await;
    let error = slow.err().unwrap_or_default();
    assert!(error.contains("the server sent nothing for 2 s"), "{error}");
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    Ok(())
}

#[tokio::test]
async fn read_only_network_off_and_private_addresses_are_refused() -> TestResult {
    let port = server()?;
    let url = format!("http://127.0.0.1:{port}/page");

    let read_only = approvals(&["example.org"], false, ApprovalMode::ReadOnly);
    let refused = fetch(read_only, &url).await.err().unwrap_or_default();
    assert!(
        refused.contains("not in [sandbox] allow_domains"),
        "{refused}"
    );

    let offline = approvals(&[], false, ApprovalMode::Auto);
    let refused = fetch(offline, &url).await.err().unwrap_or_default();
    assert!(
        refused.contains("the network is off for this session"),
        "{refused}"
    );
    assert!(
        refused.contains("allow_domains") && refused.contains("--network"),
        "{refused}"
    );

    // Allowed for the session, a name still may not lead to this machine.
    let granted = approvals(&["example.org"], false, ApprovalMode::Auto);
    granted.allow_domain(DomainPattern::parse("localhost")?);
    let local = format!("http://localhost:{port}/page");
    let refused = fetch(granted, &local).await.err().unwrap_or_default();
    assert!(
        refused.contains("localhost resolves to 127.0.0.1"),
        "{refused}"
    );

    // Full access fetches what it is asked; a listed name may lead to this machine.
    let full = approvals(&["localhost"], true, ApprovalMode::Full);
    assert!(fetch(full, &local).await?.contains("# Release notes"));
    Ok(())
}

#[test]
fn a_run_fetches_a_listed_page_and_the_model_gets_its_markdown() -> TestResult {
    let port = server()?;
    let ws = cli_support::Workspace::new();
    std::fs::create_dir_all(ws.path().join(".cfg"))?;
    ws.write(
        ".cfg/config.toml",
        "[sandbox]\nallow_domains = [\"127.0.0.1\"]\n",
    );
    let model = ws.script(json!({"turns": [
        {"tool_calls": [{"name": "web_fetch", "arguments": {"url": format!("http://127.0.0.1:{port}/page")}}]},
        {"text": "read it"}
    ]}));
    let out = ws.mnemo(&["--model", &model, "run", "--json", "what is new?"], None);
    let events = cli_support::text(&out.stdout);
    assert!(out.status.success(), "{}", cli_support::text(&out.stderr));
    assert!(events.contains("Version **2.0** is out."), "{events}");
    Ok(())
}
