//! An incremental Server-Sent Events parser. It borrows each event from its own buffers, so
//! the hot path of a long stream allocates nothing per event. An event may hold at most
//! [`MAX_EVENT_BYTES`]: a peer that sends more without ending it gets an error, not memory.

/// One dispatched event. `event` is empty when the stream gave no `event:` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseEvent<'a> {
    pub event: &'a str,
    pub data: &'a str,
}

/// The most one event (a line, or the data of one event) may hold; far above any real chunk.
pub const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// An event grew past [`MAX_EVENT_BYTES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Oversized;

#[derive(Debug, Default)]
pub struct SseParser {
    buf: Vec<u8>,
    event: String,
    data: String,
    has_data: bool,
}

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds a chunk of the body and calls `on_event` for every event it completes. Lines end
    /// with `\n` or `\r\n`; a chunk may end anywhere, even inside a UTF-8 character.
    pub fn feed<E: From<Oversized>>(
        &mut self,
        chunk: &[u8],
        on_event: &mut impl FnMut(SseEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut rest: &[u8] = chunk;
        if !self.buf.is_empty() {
            match memchr::memchr(b'\n', rest) {
                None => {
                    return self.keep(rest);
                }
                Some(pos) => {
                    self.buf.extend_from_slice(&rest[..pos]);
                    rest = &rest[pos + 1..];
                    let line = std::mem::take(&mut self.buf);
                    let result = self.line(&line, on_event);
                    self.buf = line;
                    self.buf.clear();
                    result?;
                }
            }
        }
        while let Some(pos) = memchr::memchr(b'\n', rest) {
            self.line(&rest[..pos], on_event)?;
            rest = &rest[pos + 1..];
        }
        self.keep(rest)
    }

    /// Keeps the start of a line until its end arrives, within the limit.
    fn keep<E: From<Oversized>>(&mut self, partial: &[u8]) -> Result<(), E> {
        if self.buf.len() + partial.len() > MAX_EVENT_BYTES {
            self.buf = Vec::new();
            return Err(Oversized.into());
        }
        self.buf.extend_from_slice(partial);
        Ok(())
    }

    /// Dispatches an event left open when the body ended without a blank line.
    pub fn finish<E: From<Oversized>>(
        &mut self,
        on_event: &mut impl FnMut(SseEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        if !self.buf.is_empty() {
            let line = std::mem::take(&mut self.buf);
            self.line(&line, on_event)?;
        }
        self.dispatch(on_event)
    }

    fn line<E: From<Oversized>>(
        &mut self,
        line: &[u8],
        on_event: &mut impl FnMut(SseEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            return self.dispatch(on_event);
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(pos) => {
                let value = &line[pos + 1..];
                (&line[..pos], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        // The strict check is word-at-a-time; the lossy one walks bytes, and nearly every line
        // is valid UTF-8.
        let value = match std::str::from_utf8(value) {
            Ok(text) => std::borrow::Cow::Borrowed(text),
            Err(_) => String::from_utf8_lossy(value),
        };
        match field {
            b"data" => {
                if self.data.len() + value.len() > MAX_EVENT_BYTES {
                    self.data = String::new();
                    self.has_data = false;
                    return Err(Oversized.into());
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&value);
                self.has_data = true;
            }
            b"event" => {
                self.event.clear();
                self.event.push_str(&value);
            }
            _ => {}
        }
        Ok(())
    }

    fn dispatch<E>(
        &mut self,
        on_event: &mut impl FnMut(SseEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let result = if self.has_data {
            on_event(SseEvent {
                event: &self.event,
                data: &self.data,
            })
        } else {
            Ok(())
        };
        self.event.clear();
        self.data.clear();
        self.has_data = false;
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(chunks: &[&[u8]]) -> Vec<(String, String)> {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        let mut push = |e: SseEvent<'_>| -> Result<(), Oversized> {
            out.push((e.event.to_string(), e.data.to_string()));
            Ok(())
        };
        for chunk in chunks {
            parser.feed(chunk, &mut push).ok();
        }
        parser.finish(&mut push).ok();
        out
    }

    #[test]
    fn events_split_across_chunks_at_any_byte_are_reassembled() {
        let body = "event: a\ndata: {\"x\":\"é\"}\n\n: comment\ndata: 1\ndata: 2\n\n".as_bytes();
        let whole = collect(&[body]);
        assert_eq!(
            whole,
            vec![
                ("a".into(), "{\"x\":\"é\"}".into()),
                (String::new(), "1\n2".into())
            ]
        );
        for split in 1..body.len() {
            assert_eq!(
                collect(&[&body[..split], &body[split..]]),
                whole,
                "split at {split}"
            );
        }
    }

    #[test]
    fn crlf_line_endings_and_a_missing_final_blank_line_are_accepted() {
        let got = collect(&[b"event: done\r\ndata: [DONE]\r\n\r\ndata: tail"]);
        assert_eq!(
            got,
            vec![
                ("done".into(), "[DONE]".into()),
                (String::new(), "tail".into())
            ]
        );
    }

    #[test]
    fn a_line_or_event_past_the_limit_is_an_error_and_frees_its_memory() {
        let mut parser = SseParser::new();
        let mut seen = 0;
        let mut push = |_: SseEvent<'_>| -> Result<(), Oversized> {
            seen += 1;
            Ok(())
        };
        let piece = vec![b'x'; 1024 * 1024];
        let mut result = parser.feed(b"data: ", &mut push);
        for _ in 0..20 {
            if result.is_err() {
                break;
            }
            result = parser.feed(&piece, &mut push);
        }
        assert_eq!(result, Err(Oversized));
        assert!(parser.buf.capacity() < 1024, "the buffer was kept");
        let mut parser = SseParser::new();
        let line = format!("data: {}\n", "y".repeat(1024 * 1024));
        let mut result = Ok(());
        for _ in 0..20 {
            result = parser.feed(line.as_bytes(), &mut push);
            if result.is_err() {
                break;
            }
        }
        assert_eq!(result, Err(Oversized));
        assert_eq!(seen, 0);
    }

    #[test]
    fn a_field_without_data_dispatches_nothing() {
        assert!(collect(&[b"event: ping\n\n"]).is_empty());
    }

    #[test]
    fn a_broken_byte_is_replaced_and_the_event_kept() {
        let got = collect(&[b"data: caf\xc3 ok\n\ndata: fine\n\n"]);
        assert_eq!(
            got,
            vec![
                (String::new(), "caf\u{fffd} ok".into()),
                (String::new(), "fine".into())
            ]
        );
    }
}
