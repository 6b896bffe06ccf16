//! The diffs the file tools answer with and show for approval, bounded in time and size. A
//! line diff of two large, very different files is quadratic, so the diff gets a deadline
//! (after which `similar` settles for a coarser but still correct diff) and the text shown is
//! cut to a head with a count of what was left out: a write of any size answers in bounded time
//! and adds a bounded amount to the context.

use std::time::Duration;

use similar::{Algorithm, ChangeTag, TextDiff};

/// The longest a diff may search for the smallest edit.
const DIFF_DEADLINE: Duration = Duration::from_millis(300);
/// Diff lines shown at most; the rest is counted.
const MAX_DIFF_LINES: usize = 400;
/// Diff bytes shown at most.
const MAX_DIFF_BYTES: usize = 32 * 1024;

/// `verb shown: +A -R lines` and the (bounded) unified diff.
pub fn change_report(verb: &str, shown: &str, old: &str, new: &str) -> String {
    let diff = line_diff(old, new);
    let (mut added, mut removed) = (0, 0);
    for op in diff.ops() {
        for change in diff.iter_changes(op) {
            match change.tag() {
                ChangeTag::Insert => added += 1,
                ChangeTag::Delete => removed += 1,
                ChangeTag::Equal => {}
            }
        }
    }
    let unified = bounded_unified(&diff, shown);
    format!("{verb} {shown}: +{added} -{removed} lines\n{unified}")
}

/// The (bounded) unified diff between `old` and `new`, with `a/` and `b/` headers.
pub fn unified(shown: &str, old: &str, new: &str) -> String {
    bounded_unified(&line_diff(old, new), shown)
}

fn line_diff<'a>(old: &'a str, new: &'a str) -> TextDiff<'a, 'a, 'a, str> {
    TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .timeout(DIFF_DEADLINE)
        .diff_lines(old, new)
}

fn bounded_unified<'a>(diff: &'a TextDiff<'a, 'a, 'a, str>, shown: &str) -> String {
    let mut out = String::new();
    let mut lines = 0usize;
    let mut left_out = 0usize;
    let mut unified = diff.unified_diff();
    unified
        .context_radius(3)
        .header(&format!("a/{shown}"), &format!("b/{shown}"));
    let mut header = true;
    for hunk in unified.iter_hunks() {
        // Past the limit, hunks are only counted: formatting them is what costs.
        if lines >= MAX_DIFF_LINES || out.len() >= MAX_DIFF_BYTES {
            left_out += hunk.iter_changes().count() + 1;
            continue;
        }
        if std::mem::take(&mut header) {
            out.push_str(&format!("--- a/{shown}\n+++ b/{shown}\n"));
        }
        for line in hunk.to_string().split_inclusive('\n') {
            if lines < MAX_DIFF_LINES && out.len() + line.len() <= MAX_DIFF_BYTES {
                out.push_str(line);
                lines += 1;
            } else {
                left_out += 1;
            }
        }
    }
    if left_out > 0 {
        out.push_str(&format!(
            "[… {left_out} more diff lines not shown; read the file to see the rest]\n"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_changes_show_the_whole_diff() {
        let report = change_report("wrote", "f.txt", "one\ntwo\n", "one\n2\n");
        assert_eq!(
            report,
            "wrote f.txt: +1 -1 lines\n--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n"
        );
    }

    #[test]
    fn a_huge_rewrite_is_reported_briefly() {
        let old: String = (0..400_000).map(|i| format!("old line {i}\n")).collect();
        let new: String = (0..400_000).map(|i| format!("new line {i}\n")).collect();
        let report = change_report("wrote", "big.txt", &old, &new);
        assert!(
            report.starts_with("wrote big.txt: +400000 -400000 lines\n"),
            "{}",
            &report[..80]
        );
        assert!(report.len() <= MAX_DIFF_BYTES + 200, "{}", report.len());
        assert!(report.contains("more diff lines not shown"));
    }
}
