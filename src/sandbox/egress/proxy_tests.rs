use futures_util::future::BoxFuture;

use super::*;
use crate::sandbox::domains::DomainList;
use crate::sandbox::egress::ListGate;

#[test]
fn connect_and_absolute_requests_name_their_target() {
    let connect = parse(b"CONNECT Crates.io:443 HTTP/1.1\r\nHost: crates.io\r\n\r\n");
    assert_eq!(
        connect,
        Ok(Target {
            host: "crates.io".into(),
            port: 443,
            forward: None
        })
    );
    let plain = parse(
        b"GET http://example.org/a?b HTTP/1.1\r\nHost: example.org\r\nProxy-Authorization: x\r\n\r\n",
    );
    let Ok(plain) = plain else {
        panic!("{plain:?}");
    };
    assert_eq!((plain.host.as_str(), plain.port), ("example.org", 80));
    let forwarded = String::from_utf8(plain.forward.unwrap_or_default()).unwrap_or_default();
    assert_eq!(forwarded, "GET /a?b HTTP/1.1\r\nHost: example.org\r\n\r\n");
    let v6 = parse(b"CONNECT [::1]:8443 HTTP/1.1\r\n\r\n").map(|t| (t.host, t.port));
    assert_eq!(v6, Ok(("::1".to_string(), 8443)));
}

#[test]
fn requests_the_proxy_cannot_judge_are_refused() {
    for head in [
        &b"GET /relative HTTP/1.1\r\n\r\n"[..],
        b"GET https://example.org/ HTTP/1.1\r\n\r\n",
        b"CONNECT example.org HTTP/1.1\r\n\r\n",
        b"CONNECT :443 HTTP/1.1\r\n\r\n",
        b"nonsense\r\n\r\n",
    ] {
        assert!(parse(head).is_err(), "{}", String::from_utf8_lossy(head));
    }
}

#[derive(Debug)]
struct Everything;

impl Gate for Everything {
    fn allowed(&self) -> DomainList {
        DomainList::default()
    }
    fn allow<'a>(&'a self, _: &'a str, _: u16) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async { Ok(()) })
    }
    fn listed_exactly(&self, _: &str) -> bool {
        false
    }
}

#[tokio::test]
async fn an_allowed_name_that_leads_to_this_machine_is_refused_unless_listed_itself() {
    let resolved = resolve("127.0.0.1", 80, &Everything).await;
    let Err(why) = resolved else {
        panic!("{resolved:?}");
    };
    assert!(why.contains("resolves to 127.0.0.1"), "{why}");
    let listed = ListGate {
        list: DomainList::default(),
        configured: DomainList::new(vec![
            crate::sandbox::domains::DomainPattern::parse("127.0.0.1")
                .unwrap_or_else(|e| panic!("{e}")),
        ]),
    };
    assert!(resolve("127.0.0.1", 80, &listed).await.is_ok());
}

#[tokio::test]
async fn an_endless_head_is_refused_without_reading_it_all() {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let address = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    tokio::spawn(serve(listener, Arc::new(Everything)));
    let mut client = TcpStream::connect(address)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let line = format!(
        "GET http://example.org/ HTTP/1.1\r\nX: {}\r\n",
        "a".repeat(40_000)
    );
    let _ = client.write_all(line.as_bytes()).await;
    let mut answer = String::new();
    let _ = client.read_to_string(&mut answer).await;
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains("longer than 16384 bytes"), "{answer}");
}
