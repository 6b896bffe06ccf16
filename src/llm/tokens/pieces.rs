//! The pre-tokenizer: splits text into the pieces tiktoken's o200k regex would, with a
//! hand-written scanner (no regex), so each piece can be counted once and cached.

/// What tiktoken's pre-tokenizer regex sees in a character.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Upper,
    Lower,
    /// Letters without case (CJK and the like), which the regex counts as either.
    Caseless,
    /// Combining marks: letters of either case inside a word, punctuation inside a run of it.
    Mark,
    Digit,
    Newline,
    Space,
    Punct,
}

impl Class {
    fn is_letter(self) -> bool {
        matches!(
            self,
            Self::Upper | Self::Lower | Self::Caseless | Self::Mark
        )
    }

    fn of(c: char) -> Self {
        if c.is_ascii() {
            return ASCII_CLASSES[c as usize];
        }
        if c.is_numeric() {
            Self::Digit
        } else if c.is_alphabetic() && !is_letter_symbol(c) {
            if c.is_uppercase() {
                Self::Upper
            } else if c.is_lowercase() {
                Self::Lower
            } else {
                Self::Caseless
            }
        } else if is_combining_mark(c) {
            Self::Mark
        } else if c.is_whitespace() {
            Self::Space
        } else {
            Self::Punct
        }
    }
}

/// The combining marks outside `char::is_alphabetic` that turn up in text: diacritics
/// written separately (`e\u{301}`) and emoji variation selectors (`❤\u{fe0f}`).
fn is_combining_mark(c: char) -> bool {
    matches!(c,
        '\u{300}'..='\u{36f}'
        | '\u{1ab0}'..='\u{1aff}'
        | '\u{1dc0}'..='\u{1dff}'
        | '\u{20d0}'..='\u{20ff}'
        | '\u{fe00}'..='\u{fe0f}'
        | '\u{fe20}'..='\u{fe2f}')
}

/// Circled and squared letters (`Ⓐ`, `🄰`): alphabetic to `char`, symbols to the regex.
fn is_letter_symbol(c: char) -> bool {
    matches!(c, '\u{24b6}'..='\u{24e9}' | '\u{1f130}'..='\u{1f189}')
}

static ASCII_CLASSES: [Class; 128] = {
    let mut classes = [Class::Punct; 128];
    let mut byte = 0;
    while byte < 128 {
        classes[byte] = match byte as u8 {
            b'A'..=b'Z' => Class::Upper,
            b'a'..=b'z' => Class::Lower,
            b'0'..=b'9' => Class::Digit,
            b'\r' | b'\n' => Class::Newline,
            b' ' | b'\t' | 0x0b | 0x0c => Class::Space,
            _ => Class::Punct,
        };
        byte += 1;
    }
    classes
};

/// The pieces tiktoken's `o200k_base` pre-tokenizer would split a text into, found by a
/// scanner instead of its (slow, backtracking) regex:
///
/// - letters, led by one optional non-letter non-digit non-newline character, split at case
///   changes the way `HashMap` splits into `Hash` and `Map`, with an English contraction;
/// - one to three digits;
/// - a run of punctuation, led by an optional space, with any newlines and slashes that
///   follow;
/// - whitespace up to its last newline; otherwise all but the last whitespace character of a
///   run, which leads the next piece.
pub(super) struct Pieces<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Pieces<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        Self { text, at: 0 }
    }

    /// The class and byte length of the character at `at`, if any.
    #[inline(always)]
    fn char_at(&self, at: usize) -> Option<(Class, usize)> {
        let byte = *self.text.as_bytes().get(at)?;
        if byte.is_ascii() {
            return Some((ASCII_CLASSES[usize::from(byte)], 1));
        }
        self.non_ascii_at(at)
    }

    /// `char_at` off the ASCII fast path.
    #[inline(never)]
    fn non_ascii_at(&self, at: usize) -> Option<(Class, usize)> {
        let c = self.text.get(at..)?.chars().next()?;
        Some((Class::of(c), c.len_utf8()))
    }

    /// End of the piece starting at `start`, which holds a character of class `class` and
    /// `len` bytes.
    fn piece_end(&self, start: usize, class: Class, len: usize) -> usize {
        let next = self.char_at(start + len);
        match class {
            Class::Upper | Class::Lower | Class::Caseless | Class::Mark => self.letters_end(start),
            Class::Digit => {
                let mut end = start + len;
                for _ in 0..2 {
                    match self.char_at(end) {
                        Some((Class::Digit, len)) => end += len,
                        _ => break,
                    }
                }
                end
            }
            Class::Punct => match next {
                Some((next_class, _)) if next_class.is_letter() => self.letters_end(start + len),
                _ => self.punct_end(start),
            },
            Class::Space => match next {
                Some((next_class, _)) if next_class.is_letter() => self.letters_end(start + len),
                Some((Class::Punct, _)) if self.text.as_bytes().get(start) == Some(&b' ') => {
                    self.punct_end(start + len)
                }
                _ => self.whitespace_end(start),
            },
            Class::Newline => self.whitespace_end(start),
        }
    }

    /// Letters from `at`: capitals then small letters, then an optional contraction.
    fn letters_end(&self, mut at: usize) -> usize {
        while let Some((Class::Upper | Class::Caseless | Class::Mark, len)) = self.char_at(at) {
            at += len;
        }
        while let Some((Class::Lower | Class::Caseless | Class::Mark, len)) = self.char_at(at) {
            at += len;
        }
        let bytes = self.text.as_bytes();
        if bytes.get(at) != Some(&b'\'') {
            return at;
        }
        let lower = |offset: usize| bytes.get(at + offset).map(u8::to_ascii_lowercase);
        match (lower(1), lower(2)) {
            (Some(b's' | b't' | b'm' | b'd'), _) => at + 2,
            (Some(b'r'), Some(b'e')) | (Some(b'v'), Some(b'e')) | (Some(b'l'), Some(b'l')) => {
                at + 3
            }
            _ => at,
        }
    }

    /// A run of punctuation from `at`, then any newlines and slashes (`}\n\n///` is one).
    fn punct_end(&self, mut at: usize) -> usize {
        while let Some((Class::Punct | Class::Mark, len)) = self.char_at(at) {
            at += len;
        }
        let bytes = self.text.as_bytes();
        while let Some(b'\r' | b'\n' | b'/') = bytes.get(at) {
            at += 1;
        }
        at
    }

    /// Whitespace from `start`: through its last newline if it has one; all of it at the end
    /// of the text; otherwise all but its last character, which leads the next piece.
    fn whitespace_end(&self, start: usize) -> usize {
        let mut at = start;
        let mut last_char = start;
        let mut after_newline = None;
        while let Some((class @ (Class::Space | Class::Newline), len)) = self.char_at(at) {
            last_char = at;
            at += len;
            if class == Class::Newline {
                after_newline = Some(at);
            }
        }
        match after_newline {
            Some(end) => end,
            None if at == self.text.len() || last_char == start => at,
            None => last_char,
        }
    }
}

impl<'a> Iterator for Pieces<'a> {
    type Item = &'a str;

    #[inline]
    fn next(&mut self) -> Option<&'a str> {
        let start = self.at;
        let (class, len) = self.char_at(start)?;
        let end = self.piece_end(start, class, len);
        self.at = end;
        self.text.get(start..end)
    }
}
