//! A small in-memory FTS5 index of tools by name and description, for finding the tools of
//! MCP servers too large to list. It lives as long as the tool list it was built from, so it
//! never touches the session store.

use std::sync::Mutex;

use rusqlite::{Connection, params};

use super::StoreError;
use super::fts_query::{content_terms, quote_terms, terms_matched};
use super::ranking::KEYWORD_FLOOR;

pub struct ToolIndex {
    conn: Mutex<Connection>,
}

impl ToolIndex {
    /// Indexes `(name, words, description)` triples; `words` are searched like the name (for
    /// example the server's and the tool's own names).
    pub fn build<'a>(
        tools: impl IntoIterator<Item = (&'a str, &'a str, &'a str)>,
    ) -> Result<Self, StoreError> {
        let mut conn = Connection::open_in_memory()?;
        conn.execute_batch(
            "CREATE VIRTUAL TABLE tools USING fts5(name UNINDEXED, words, description)",
        )?;
        let tx = conn.transaction()?;
        {
            let mut insert =
                tx.prepare("INSERT INTO tools(name, words, description) VALUES (?1, ?2, ?3)")?;
            for (name, words, description) in tools {
                insert.execute(params![name, words, description])?;
            }
        }
        tx.commit()?;
        Ok(Self {
            conn: Mutex::new(conn),
        })
    }

    /// The names of the tools closest to `query` (bm25, words weighing more than the
    /// description), best first, among those matching at least half of its content words:
    /// a tool found enters the tool list, so one that shares an incidental word is left out.
    /// Any text is a valid query; one without words finds nothing.
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        let terms = content_terms(query);
        if terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let conn = self
            .conn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut stmt = conn.prepare_cached(
            "SELECT name FROM tools WHERE tools MATCH ?1
             ORDER BY bm25(tools, 0.0, 4.0, 1.0), name LIMIT ?2",
        )?;
        let pool = i64::try_from(limit.saturating_mul(4)).unwrap_or(i64::MAX);
        let names = stmt
            .query_map(params![quote_terms(&terms), pool], |row| row.get(0))?
            .collect::<Result<Vec<String>, _>>()?;
        let matched = terms_matched(&conn, "tools", "name", &terms, &names)?;
        let floor = terms.len() as f64 * KEYWORD_FLOOR;
        Ok(names
            .into_iter()
            .filter(|name| matched.get(name).copied().unwrap_or(0) as f64 >= floor)
            .take(limit)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_are_found_by_the_words_of_their_names_and_descriptions() -> Result<(), StoreError> {
        let index = ToolIndex::build([
            (
                "mcp__fs__read_file",
                "fs read_file",
                "Read the complete contents of a file",
            ),
            (
                "mcp__fs__list_directory",
                "fs list_directory",
                "List the entries of a directory",
            ),
            ("mcp__fs__move_file", "fs move_file", "Move or rename files"),
        ])?;
        assert_eq!(index.search("read a file", 1)?, ["mcp__fs__read_file"]);
        assert_eq!(
            index.search("directory entries", 5)?,
            ["mcp__fs__list_directory"]
        );
        // Query syntax is taken as words, and a query without words finds nothing.
        assert_eq!(index.search("rename NEAR(\"*", 5)?, ["mcp__fs__move_file"]);
        assert!(index.search("  *** ", 5)?.is_empty());
        assert!(index.search("kubernetes", 5)?.is_empty());
        // One incidental word of four is not enough to enter the tool list.
        assert!(
            index
                .search("read the calendar of the meeting room", 5)?
                .is_empty()
        );
        assert_eq!(
            index.search("please read the whole file", 5)?,
            ["mcp__fs__read_file"]
        );
        Ok(())
    }
}
