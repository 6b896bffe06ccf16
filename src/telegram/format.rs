//! Stand-in until the real converter lands: escaped text, split by characters.

pub const MESSAGE_LIMIT: usize = 4096;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    pub html: String,
    pub plain: String,
}

pub fn render(markdown: &str, limit: usize) -> Vec<Chunk> {
    let chars: Vec<char> = markdown.chars().collect();
    chars
        .chunks(limit / 6)
        .map(|piece| {
            let plain: String = piece.iter().collect();
            let html = plain
                .replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;");
            Chunk { html, plain }
        })
        .filter(|c| !c.plain.trim().is_empty())
        .collect()
}
