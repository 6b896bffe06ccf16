//! Plain text helpers every layer may use: bound a text and say what was cut, take its first
//! line, and scrub secrets out of what is kept. Imports nothing of the crate.

mod scrub;
mod secret_names;

pub use scrub::scrub_secrets;
pub use secret_names::is_secret;

/// The first line of `text` that is not blank, trimmed.
pub fn first_line(text: &str) -> &str {
    text.lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or("")
}

/// `text` cut to `max` characters, with "…" when something was cut.
pub fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", text[..cut].trim_end()),
        None => text.to_string(),
    }
}

/// Keeps the first and last `max_bytes / 2` bytes (on character boundaries) and puts a note
/// with the number of omitted lines and bytes between them.
pub fn head_tail(text: &str, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text.to_string();
    }
    let half = max_bytes / 2;
    let head_end = floor_char_boundary(text, half);
    let tail_start = ceil_char_boundary(text, text.len() - half);
    let omitted = &text[head_end..tail_start];
    let omitted_lines = omitted.bytes().filter(|&b| b == b'\n').count();
    format!(
        "{}\n[… output truncated: {} lines, {} bytes omitted …]\n{}",
        &text[..head_end],
        omitted_lines,
        omitted.len(),
        &text[tail_start..]
    )
}

/// The largest index at or below `index` that is a character boundary of `text`.
pub fn floor_char_boundary(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

/// The smallest index at or above `index` that is a character boundary of `text`.
pub fn ceil_char_boundary(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index += 1;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_untouched() {
        assert_eq!(head_tail("abc", 10), "abc");
    }

    #[test]
    fn long_text_keeps_head_and_tail_and_counts_what_was_cut() {
        let text: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        let cut = head_tail(&text, 200);
        assert!(cut.starts_with("line 0\n"));
        assert!(cut.ends_with("line 999\n"));
        assert!(cut.contains("output truncated"));
        assert!(cut.len() < 300);
    }

    #[test]
    fn multibyte_characters_are_never_split() {
        let text = "é".repeat(1000);
        let cut = head_tail(&text, 101);
        assert!(cut.contains("output truncated"));
        assert!(cut.starts_with('é') && cut.ends_with('é'));
    }
}
