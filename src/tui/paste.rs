//! Large pastes as chips. A paste of many lines would fill the input box and hide where the
//! message starts, so it goes in as one `[pasted 200 lines · 14.9 kB]` chip that stands for
//! the text: the message sent holds the whole paste, the box and the transcript show the chip
//! (the pager shows the text). Ctrl+O in the box expands the chips into their text.

/// A paste longer than this many lines (or characters) becomes a chip.
const FOLD_LINES: usize = 10;
const FOLD_CHARS: usize = 2_000;

#[derive(Debug, Clone, Default)]
pub struct PasteChips {
    /// `(label, text)` of each chip in the box.
    chips: Vec<(String, String)>,
}

impl PasteChips {
    /// The chip label for `text` when it is large enough to fold, remembered for `expand`.
    pub fn fold(&mut self, text: &str) -> Option<String> {
        let lines = text.lines().count();
        if lines <= FOLD_LINES && text.chars().count() <= FOLD_CHARS {
            return None;
        }
        let mut label = format!("[pasted {lines} lines · {}]", size(text.len()));
        // Two pastes of the same size still need labels of their own.
        let same = self
            .chips
            .iter()
            .filter(|(l, _)| l.starts_with(&label[..label.len() - 1]));
        let n = same.count();
        if n > 0 {
            label.insert_str(label.len() - 1, &format!(" #{}", n + 1));
        }
        self.chips.push((label.clone(), text.to_string()));
        Some(label)
    }

    /// `text` with every intact chip replaced by what it stands for, and the chips that were
    /// used as `(text, label)`. A chip the user edited is sent as typed.
    pub fn expand(&mut self, text: &str) -> (String, Vec<(String, String)>) {
        let mut expanded = text.to_string();
        let mut used = Vec::new();
        for (label, content) in std::mem::take(&mut self.chips) {
            if expanded.contains(&label) {
                expanded = expanded.replacen(&label, &content, 1);
                used.push((content, label));
            }
        }
        (expanded, used)
    }

    /// Registers a chip again (a message put back in the box).
    pub fn keep(&mut self, label: String, text: String) {
        self.chips.push((label, text));
    }

    pub fn is_empty(&self) -> bool {
        self.chips.is_empty()
    }
}

/// `text` as the transcript shows it: each paste in `folds` (`(text, label)`) as its label.
pub fn folded(text: &str, folds: &[(String, String)]) -> Option<String> {
    let mut shown = text.to_string();
    let mut any = false;
    for (content, label) in folds {
        if shown.contains(content.as_str()) {
            shown = shown.replacen(content.as_str(), label, 1);
            any = true;
        }
    }
    any.then_some(shown)
}

/// Bytes as people read them: `512 B`, `14.9 kB`, `2.1 MB`.
fn size(bytes: usize) -> String {
    match bytes {
        0..1_000 => format!("{bytes} B"),
        1_000..1_000_000 => format!("{:.1} kB", bytes as f64 / 1_000.0),
        _ => format!("{:.1} MB", bytes as f64 / 1_000_000.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_paste_becomes_a_chip_that_expands_back() {
        let mut chips = PasteChips::default();
        assert_eq!(chips.fold("short\ntext"), None);
        let log: String = (0..200)
            .map(|i| format!("log line {i:>3} of the build: ok\n"))
            .collect();
        let label = chips.fold(&log).unwrap_or_default();
        assert_eq!(label, format!("[pasted 200 lines · {}]", size(log.len())));
        let (sent, used) = chips.expand(&format!("Why does this fail?\n{label}"));
        assert_eq!(sent, format!("Why does this fail?\n{log}"));
        assert_eq!(
            folded(&sent, &used).as_deref(),
            Some(format!("Why does this fail?\n{label}").as_str())
        );
        assert!(chips.is_empty());
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(size(512), "512 B");
        assert_eq!(size(14_900), "14.9 kB");
        assert_eq!(size(2_100_000), "2.1 MB");
    }
}
