//! An incremental Server-Sent Events parser. It borrows each event from its own buffers, so
//! the hot path of a long stream allocates nothing per event.

/// One dispatched event. `event` is empty when the stream gave no `event:` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseEvent<'a> {
    pub event: &'a str,
    pub data: &'a str,
}

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
    pub fn feed<E>(
        &mut self,
        chunk: &[u8],
        on_event: &mut impl FnMut(SseEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut rest: &[u8] = chunk;
        if !self.buf.is_empty() {
            match memchr::memchr(b'\n', rest) {
                None => {
                    self.buf.extend_from_slice(rest);
                    return Ok(());
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
        self.buf.extend_from_slice(rest);
        Ok(())
    }

    /// Dispatches an event left open when the body ended without a blank line.
    pub fn finish<E>(
        &mut self,
        on_event: &mut impl FnMut(SseEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        if !self.buf.is_empty() {
            let line = std::mem::take(&mut self.buf);
            self.line(&line, on_event)?;
        }
        self.dispatch(on_event)
    }

    fn line<E>(
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
        let value = String::from_utf8_lossy(value);
        match field {
            b"data" => {
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
        let mut push = |e: SseEvent<'_>| -> Result<(), ()> {
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
    fn a_field_without_data_dispatches_nothing() {
        assert!(collect(&[b"event: ping\n\n"]).is_empty());
    }
}
