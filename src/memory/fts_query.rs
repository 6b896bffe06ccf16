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

/// Words that say how something is asked, not what about: bm25 would rank a match on them
/// as it ranks any other word.
const FUNCTION_WORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be",
    "been", "before", "but", "by", "can", "could", "did", "do", "does", "doing", "done", "for",
    "from", "had", "has", "have", "he", "her", "here", "him", "his", "how", "i", "if", "in",
    "into", "is", "it", "its", "just", "me", "my", "no", "not", "now", "of", "on", "one", "or",
    "our", "out", "over", "please", "she", "should", "so", "some", "than", "that", "the", "their",
    "them", "then", "there", "these", "they", "this", "those", "to", "up", "us", "was", "we",
    "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with",
    "would", "you", "your",
];

/// The words of `query` that carry its content: without function words, unless nothing
/// else is left.
pub fn content_terms(query: &str) -> Vec<String> {
    let terms = query_terms(query);
    let content: Vec<String> = terms
        .iter()
        .filter(|t| !FUNCTION_WORDS.contains(&t.as_str()))
        .cloned()
        .collect();
    if content.is_empty() { terms } else { content }
}

/// Each term as an FTS5 string (`"` doubled), joined with OR.
pub fn quote_terms(terms: &[String]) -> String {
    let quoted: Vec<String> = terms
        .iter()
        .map(|term| format!("\"{}\"", term.replace('"', "\"\"")))
        .collect();
    quoted.join(" OR ")
}

/// How many of `terms` each of `keys` matches in `table`, whose column `key` names a row
/// (`rowid`, or a stored name): a match on one incidental word of a long question is a weak
/// keyword signal however well bm25 ranks it.
pub(super) fn terms_matched<K>(
    conn: &rusqlite::Connection,
    table: &str,
    key: &str,
    terms: &[String],
    keys: &[K],
) -> Result<std::collections::HashMap<K, usize>, super::StoreError>
where
    K: rusqlite::types::FromSql + serde::Serialize + Eq + std::hash::Hash,
{
    let mut matched = std::collections::HashMap::new();
    if keys.is_empty() {
        return Ok(matched);
    }
    let sql = format!(
        "SELECT {key} FROM {table} WHERE {table} MATCH ?1
         AND {key} IN (SELECT value FROM json_each(?2))"
    );
    let keys = serde_json::to_string(keys)?;
    let mut stmt = conn.prepare_cached(&sql)?;
    for term in terms {
        let expression = quote_terms(std::slice::from_ref(term));
        let rows = stmt.query_map(rusqlite::params![expression, keys], |row| {
            row.get::<_, K>(0)
        })?;
        for found in rows {
            *matched.entry(found?).or_default() += 1;
        }
    }
    Ok(matched)
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
    fn function_words_are_left_out_unless_nothing_else_is_asked() {
        assert_eq!(
            content_terms("Which port does the pre-production DB listen on?"),
            ["port", "pre", "production", "db", "listen"]
        );
        assert_eq!(content_terms("how do we"), ["how", "do", "we"]);
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
