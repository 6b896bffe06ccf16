//! Turns what a user or model typed into an FTS5 MATCH expression that cannot fail to parse.
//! FTS5 query syntax (quotes, `*`, `-`, `:`, `^`, parentheses, AND/OR/NOT/NEAR) is never passed
//! through: every word becomes a quoted string and the strings are joined with OR.

/// At most this many distinct words of a query reach FTS5, which bounds the work per search.
pub const MAX_TERMS: usize = 16;

/// The distinct words of `query` (runs of letters and digits), lowercased, in order.
pub fn query_terms(query: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    for word in query.split(|c: char| !c.is_alphanumeric()) {
        if word.is_empty() {
            continue;
        }
        let word = word.to_lowercase();
        if !terms.contains(&word) {
            terms.push(word);
        }
        if terms.len() == MAX_TERMS {
            break;
        }
    }
    terms
}

/// Each term as an FTS5 string (`"` doubled), joined with OR.
pub fn quote_terms(terms: &[String]) -> String {
    let quoted: Vec<String> = terms
        .iter()
        .map(|term| format!("\"{}\"", term.replace('"', "\"\"")))
        .collect();
    quoted.join(" OR ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The MATCH expression for `query`, or `None` when it holds no word.
    fn match_expression(query: &str) -> Option<String> {
        let terms = query_terms(query);
        (!terms.is_empty()).then(|| quote_terms(&terms))
    }

    #[test]
    fn words_are_quoted_and_joined_with_or() {
        assert_eq!(
            match_expression("Fix the nginx-config, fix it!").as_deref(),
            Some("\"fix\" OR \"the\" OR \"nginx\" OR \"config\" OR \"it\"")
        );
    }

    #[test]
    fn operators_become_plain_words_and_punctuation_disappears() {
        assert_eq!(
            match_expression("NEAR(a b) AND -x:y^ \"q*").as_deref(),
            Some("\"near\" OR \"a\" OR \"b\" OR \"and\" OR \"x\" OR \"y\" OR \"q\"")
        );
    }

    #[test]
    fn quotes_inside_a_term_are_doubled() {
        assert_eq!(quote_terms(&["a\"b".to_owned()]), "\"a\"\"b\"");
    }

    #[test]
    fn a_query_without_words_has_no_expression() {
        assert_eq!(match_expression(""), None);
        assert_eq!(match_expression(" \"*-:^()\" "), None);
    }

    #[test]
    fn unicode_words_are_kept_and_the_term_count_is_bounded() {
        assert_eq!(query_terms("Größe café"), vec!["größe", "café"]);
        let long: String = (0..100).map(|i| format!("w{i} ")).collect();
        assert_eq!(query_terms(&long).len(), MAX_TERMS);
    }
}
