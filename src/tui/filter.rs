//! Type-to-filter for the pickers: what is typed narrows the list to the entries that hold
//! every word of it, in any case and order.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    query: String,
}

impl Filter {
    pub fn query(&self) -> &str {
        &self.query
    }

    /// Edits the query with `key`; `true` when the key was for the filter.
    pub fn handle_key(&mut self, key: KeyEvent) -> bool {
        let plain = !key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
        match key.code {
            KeyCode::Char(c) if plain => {
                self.query.push(c);
                true
            }
            KeyCode::Backspace if !self.query.is_empty() => {
                self.query.pop();
                true
            }
            _ => false,
        }
    }

    /// Whether `text` holds every word of the query (case-insensitive).
    pub fn matches(&self, text: &str) -> bool {
        let text = text.to_lowercase();
        self.query
            .split_whitespace()
            .all(|word| text.contains(&word.to_lowercase()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_must_match_in_any_case_and_order() {
        let mut filter = Filter::default();
        for c in "Parser FIX".chars() {
            filter.handle_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
        }
        assert!(filter.matches("fix the parser edge case"));
        assert!(!filter.matches("fix the lexer"));
        filter.handle_key(KeyEvent::new(KeyCode::Backspace, KeyModifiers::NONE));
        assert_eq!(filter.query(), "Parser FI");
        assert!(!filter.handle_key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::CONTROL)));
    }
}
