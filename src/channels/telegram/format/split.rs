//! Cuts a rendered reply into messages within the limit. A cut goes between blocks if one
//! lies in the second half of the message, else at a line end, else between words, else
//! between two characters; never inside a character, an escape or a tag. Tags open at a cut
//! are closed before it and reopened after it.

use super::{Atom, Chunk, Rendered, escaped_len, push_escaped, utf16_len};

pub(super) fn split(rendered: &Rendered, limit: usize) -> Vec<Chunk> {
    let atoms = &rendered.atoms;
    let mut chunks = Vec::new();
    // The tags open where the next message starts.
    let mut stack = Vec::new();
    let mut start = 0;
    loop {
        start = skip_leading_space(rendered, start, &mut stack, limit);
        if !atoms[start..].iter().any(is_visible) {
            return chunks;
        }
        let end = fit(rendered, start, &stack, limit);
        chunks.push(write(rendered, start, end, &mut stack));
        start = end;
    }
}

fn is_visible(atom: &Atom) -> bool {
    matches!(atom, Atom::Char(c) if !c.is_whitespace())
}

/// Where a message starting at `start` begins: after the blank space the cut left, except the
/// indentation of a code line. Tags passed over join `stack`.
fn skip_leading_space(
    rendered: &Rendered,
    start: usize,
    stack: &mut Vec<usize>,
    limit: usize,
) -> usize {
    let atoms = &rendered.atoms;
    let text = atoms[start..]
        .iter()
        .position(is_visible)
        .map_or(atoms.len(), |i| start + i);
    let line_start = atoms[start..text]
        .iter()
        .rposition(|a| *a == Atom::Char('\n'))
        .map_or(start, |i| start + i + 1);
    let mut to = text;
    let indent = &atoms[line_start..text];
    let only_spaces = indent.iter().all(|a| matches!(a, Atom::Char(_)));
    if only_spaces && !indent.is_empty() && indent.len() <= limit / 4 {
        let mut before = stack.clone();
        apply(&atoms[start..line_start], &mut before);
        if before.iter().any(|&t| rendered.tags[t].preformatted) {
            to = line_start;
        }
    }
    apply(&atoms[start..to], stack);
    to
}

/// Opens and closes the tags among `atoms` on `stack`.
fn apply(atoms: &[Atom], stack: &mut Vec<usize>) {
    for atom in atoms {
        match atom {
            Atom::Open(tag) => stack.push(*tag),
            Atom::Close => {
                stack.pop();
            }
            Atom::Char(_) => {}
        }
    }
}

/// How well a cut reads: between blocks best, between words worst (inside a word is the last
/// resort and needs no candidate).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Cut {
    Word = 0,
    Line = 1,
    Block = 2,
}

/// A place a message may end, before atom `at`, and the size of the message up to it.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    at: usize,
    cost: usize,
}

/// The end of the longest good message starting at `start` with `stack` open.
fn fit(rendered: &Rendered, start: usize, stack: &[usize], limit: usize) -> usize {
    let mut open = stack.to_vec();
    // Tags are written when text needs them: `open[..written]` are in the message.
    let mut written = 0;
    // The message's size so far, with the closing tags it would need.
    let mut cost = 0;
    let mut seen_text = false;
    // The blank run since the last visible character: its newlines, and the cut after the
    // last of them (which keeps a code line's indentation in the next message).
    let mut run: Option<(usize, Option<Candidate>)> = None;
    let mut best: [Option<Candidate>; 3] = [None; 3];
    for (i, atom) in rendered.atoms.iter().enumerate().skip(start) {
        let c = match *atom {
            Atom::Open(tag) => {
                open.push(tag);
                continue;
            }
            Atom::Close => {
                // Its closing tag was already counted.
                written = written.min(open.len().saturating_sub(1));
                open.pop();
                continue;
            }
            Atom::Char(c) => c,
        };
        let reopen: usize = open[written..]
            .iter()
            .map(|&t| rendered.tags[t].cost())
            .sum();
        let added = reopen + escaped_len(c);
        if cost + added > limit {
            return choose(&best, i, limit);
        }
        if c.is_whitespace() {
            if seen_text {
                let (newlines, line) = run.get_or_insert((0, None));
                if c == '\n' {
                    *newlines += 1;
                    *line = Some(Candidate {
                        at: i + 1,
                        cost: cost + added,
                    });
                }
            }
        } else if let Some((newlines, line)) = run.take() {
            let word = Candidate { at: i, cost };
            let cut = match newlines {
                0 => Cut::Word,
                1 => Cut::Line,
                _ => Cut::Block,
            };
            best[cut as usize] = Some(line.unwrap_or(word));
        }
        seen_text |= !c.is_whitespace();
        cost += added;
        written = open.len();
    }
    rendered.atoms.len()
}

/// The cut for a message that cannot take atom `overflow`: the best kind of cut that keeps the
/// message at least half full, else right before `overflow`.
fn choose(best: &[Option<Candidate>; 3], overflow: usize, limit: usize) -> usize {
    [Cut::Block, Cut::Line, Cut::Word]
        .iter()
        .filter_map(|cut| best[*cut as usize])
        .find(|candidate| candidate.cost >= limit / 2)
        .map_or(overflow, |candidate| candidate.at)
}

/// The message of atoms `start..end`, without blank space at its end; `stack` holds the tags
/// open at its start and is left with those open at its end.
fn write(rendered: &Rendered, start: usize, end: usize, stack: &mut Vec<usize>) -> Chunk {
    let atoms = &rendered.atoms[start..end];
    let last_visible = atoms.iter().rposition(is_visible).unwrap_or(0);
    let mut html = String::new();
    let mut plain = String::new();
    let mut written = 0;
    for (i, atom) in atoms.iter().enumerate() {
        match *atom {
            Atom::Open(tag) => stack.push(tag),
            Atom::Close => {
                if written == stack.len()
                    && let Some(&tag) = stack.last()
                {
                    html.push_str(rendered.tags[tag].close);
                    written -= 1;
                }
                stack.pop();
            }
            Atom::Char(_) if i > last_visible => {}
            Atom::Char(c) => {
                for &tag in &stack[written..] {
                    html.push_str(&rendered.tags[tag].open);
                }
                written = stack.len();
                push_escaped(&mut html, c);
                plain.push(c);
            }
        }
    }
    for &tag in stack[..written].iter().rev() {
        html.push_str(rendered.tags[tag].close);
    }
    debug_assert!(utf16_len(&plain) <= utf16_len(&html));
    Chunk { html, plain }
}
