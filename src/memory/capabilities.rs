//! Capabilities: small scripts (bash, python3, node) the agent wrote for itself and reuses as
//! tools. Every change is a new version and the old ones are kept; use counts and the pin
//! belong to the name. Search ranks the latest versions by keywords (FTS5 bm25, kept in sync
//! by the triggers of schema v4), blended with embedding similarity when the caller has a
//! query vector, and with how much each capability is used.

use std::collections::HashMap;

use rusqlite::{Params, Row, TransactionBehavior, params};
use serde::Serialize;
use serde_json::Value;

use super::db::{Db, from_sql_int, now_ms, to_sql_int};
use super::error::StoreError;
use super::fts_query::{content_terms, quote_terms, terms_matched};
use super::ranking::{self, Signals};
use super::types::Millis;
use super::vectors::{dot, from_blob, normalize, to_blob};

/// Uses at which the usage signal of search reaches one half (a pin counts as full use).
const HALF_USAGE: f64 = 5.0;

/// Candidates each signal contributes for a search returning `limit` capabilities.
fn pool_size(limit: usize) -> usize {
    limit.saturating_mul(4).clamp(20, 200)
}

/// What the agent hands over to store a capability (a new name, or a new version of one).
#[derive(Debug, Clone, Default)]
pub struct NewCapability {
    pub name: String,
    pub description: String,
    pub tags: Vec<String>,
    pub input_schema: Value,
    pub language: String,
    pub code: String,
    pub examples: Vec<Value>,
    pub session_id: Option<String>,
    pub turn: Option<u64>,
    pub embedding: Option<Vec<f32>>,
}

/// One version of a capability with the stats of its name.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Capability {
    pub name: String,
    pub version: u32,
    pub description: String,
    pub tags: Vec<String>,
    pub input_schema: Value,
    pub language: String,
    pub code: String,
    pub examples: Vec<Value>,
    pub session_id: Option<String>,
    pub turn: Option<u64>,
    pub created_at: Millis,
    pub access_count: u64,
    pub last_access: Option<Millis>,
    pub pinned: bool,
}

/// A line of a capability's history.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CapabilityVersion {
    pub version: u32,
    pub created_at: Millis,
    pub session_id: Option<String>,
    pub turn: Option<u64>,
    pub code_bytes: usize,
}

/// Versions with their name's stats; the literals appended filter and order them.
macro_rules! select_capabilities {
    ($($tail:expr),+) => {
        concat!(
            "SELECT c.name, c.version, c.description, c.tags, c.input_schema, c.language, c.code,
                 c.examples, c.session_id, c.turn, c.created_at, coalesce(s.access_count, 0),
                 s.last_access, coalesce(s.pinned, 0), c.id
             FROM capabilities c LEFT JOIN capability_stats s ON s.name = c.name ",
            $($tail),+
        )
    };
}

/// The condition that keeps only the latest version of each name (an index seek per row).
macro_rules! latest {
    () => {
        "c.version = (SELECT max(version) FROM capabilities WHERE name = c.name)"
    };
}

/// A row of `select_capabilities!`: its id, then the capability with its JSON columns (tags,
/// input schema, examples) still unparsed.
type RawCapability = (i64, Capability, [String; 3]);

fn capability_row(row: &Row<'_>) -> rusqlite::Result<RawCapability> {
    let capability = Capability {
        name: row.get(0)?,
        version: row.get(1)?,
        description: row.get(2)?,
        tags: Vec::new(),
        input_schema: Value::Null,
        language: row.get(5)?,
        code: row.get(6)?,
        examples: Vec::new(),
        session_id: row.get(8)?,
        turn: row.get::<_, Option<i64>>(9)?.map(from_sql_int),
        created_at: row.get(10)?,
        access_count: from_sql_int(row.get(11)?),
        last_access: row.get(12)?,
        pinned: row.get(13)?,
    };
    Ok((
        row.get(14)?,
        capability,
        [row.get(3)?, row.get(4)?, row.get(7)?],
    ))
}

fn parse_json(
    (id, mut capability, [tags, schema, examples]): RawCapability,
) -> Result<(i64, Capability), StoreError> {
    capability.tags = serde_json::from_str(&tags)?;
    capability.input_schema = serde_json::from_str(&schema)?;
    capability.examples = serde_json::from_str(&examples)?;
    Ok((id, capability))
}

/// Search candidates: row id → keyword score and cosine (when the query has a vector).
/// How much a capability is used, in [0, 1]: the third signal of search after keywords and
/// meaning. A pinned one counts as fully used.
fn usage(capability: &Capability) -> f64 {
    if capability.pinned {
        return 1.0;
    }
    let uses = capability.access_count as f64;
    uses / (uses + HALF_USAGE)
}

/// The last use, or the creation of a never-used capability.
fn recency(capability: &Capability) -> Millis {
    capability.last_access.unwrap_or(capability.created_at)
}

impl Db {
    /// Stores a new version (1 for a new name, else latest+1); earlier versions are kept.
    /// Returns the stored capability (latest).
    pub fn create_capability(&mut self, new: NewCapability) -> Result<Capability, StoreError> {
        let embedding = new.embedding.map(|mut vector| {
            normalize(&mut vector);
            to_blob(&vector)
        });
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let version: u32 = tx
            .prepare_cached(
                "SELECT coalesce(max(version), 0) + 1 FROM capabilities WHERE name = ?1",
            )?
            .query_row([&new.name], |row| row.get(0))?;
        tx.prepare_cached(
            "INSERT INTO capabilities(name, version, created_at, session_id, turn, language,
                 description, tags, input_schema, examples, code, embedding)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        )?
        .execute(params![
            new.name,
            version,
            now_ms(),
            new.session_id,
            new.turn.map(to_sql_int),
            new.language,
            new.description,
            serde_json::to_string(&new.tags)?,
            serde_json::to_string(&new.input_schema)?,
            serde_json::to_string(&new.examples)?,
            new.code,
            embedding
        ])?;
        tx.prepare_cached("INSERT INTO capability_stats(name) VALUES (?1) ON CONFLICT DO NOTHING")?
            .execute([&new.name])?;
        tx.commit()?;
        self.capability_version(&new.name, version)?
            .ok_or_else(|| StoreError::Corrupt(format!("capability `{}` was not stored", new.name)))
    }

    /// The latest version of `name`.
    pub fn capability(&self, name: &str) -> Result<Option<Capability>, StoreError> {
        let sql = select_capabilities!("WHERE c.name = ?1 ORDER BY c.version DESC LIMIT 1");
        Ok(self.query_capabilities(sql, [name])?.pop())
    }

    pub fn capability_version(
        &self,
        name: &str,
        version: u32,
    ) -> Result<Option<Capability>, StoreError> {
        let sql = select_capabilities!("WHERE c.name = ?1 AND c.version = ?2");
        Ok(self.query_capabilities(sql, params![name, version])?.pop())
    }

    /// The workspace of the session that wrote version `version` of `name`; `None` when no
    /// session still recorded wrote it.
    pub fn capability_workspace(
        &self,
        name: &str,
        version: u32,
    ) -> Result<Option<String>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT s.cwd FROM capabilities c JOIN sessions s ON s.id = c.session_id
             WHERE c.name = ?1 AND c.version = ?2",
        )?;
        let mut rows = stmt.query(params![name, version])?;
        Ok(match rows.next()? {
            Some(row) => Some(row.get(0)?),
            None => None,
        })
    }

    /// The history of `name`, oldest first; empty when there is no such capability.
    pub fn capability_versions(&self, name: &str) -> Result<Vec<CapabilityVersion>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT version, created_at, session_id, turn, length(CAST(code AS BLOB))
             FROM capabilities WHERE name = ?1 ORDER BY version",
        )?;
        let versions = stmt
            .query_map([name], |row| {
                Ok(CapabilityVersion {
                    version: row.get(0)?,
                    created_at: row.get(1)?,
                    session_id: row.get(2)?,
                    turn: row.get::<_, Option<i64>>(3)?.map(from_sql_int),
                    code_bytes: usize::try_from(row.get::<_, i64>(4)?).unwrap_or(0),
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(versions)
    }

    /// The latest version of every capability, by name.
    pub fn list_capabilities(&self) -> Result<Vec<Capability>, StoreError> {
        let sql = select_capabilities!("WHERE ", latest!(), " ORDER BY c.name");
        self.query_capabilities(sql, [])
    }

    /// How many capabilities (names) there are.
    pub fn capability_count(&self) -> Result<u64, StoreError> {
        let count: i64 = self
            .conn
            .prepare_cached("SELECT count(DISTINCT name) FROM capabilities")?
            .query_row([], |row| row.get(0))?;
        Ok(from_sql_int(count))
    }

    /// Best matches first, ranked as recall ranks: the keyword place (bm25 over
    /// name/description/tags/examples, scaled by how many of the query's words matched) and,
    /// with `query_vector`, the meaning place (cosine of the stored embedding), fused so either
    /// strong signal wins; use and pins only break ties. A capability related by neither (a
    /// match on a minority of the words, a distant meaning) is not returned: what a search
    /// finds enters the tool list. Any text is a valid query; one without words returns the
    /// most used and recently used capabilities.
    pub fn search_capabilities(
        &self,
        query: &str,
        query_vector: Option<&[f32]>,
        limit: usize,
    ) -> Result<Vec<Capability>, StoreError> {
        let terms = content_terms(query);
        if terms.is_empty() || limit == 0 {
            return self.most_used_capabilities(limit);
        }
        let pool = pool_size(limit);
        let mut signals: HashMap<i64, Signals> = HashMap::new();
        let hits = self.capability_keyword_hits(&terms, pool)?;
        let ids: Vec<i64> = hits.iter().map(|&(id, _)| id).collect();
        let matched = terms_matched(&self.conn, "capabilities_fts", "rowid", &terms, &ids)?;
        for (rank, id) in ids.iter().enumerate() {
            let count = matched.get(id).copied().unwrap_or(0);
            signals.insert(
                *id,
                Signals {
                    keyword: Some(rank),
                    coverage: count as f64 / terms.len() as f64,
                    ..Signals::default()
                },
            );
        }
        if let Some(vector) = query_vector {
            self.add_semantic_signals(&mut signals, vector, pool)?;
        }
        signals.retain(|_, s| ranking::related(s));
        let ids: Vec<i64> = signals.keys().copied().collect();
        let mut ranked: Vec<(f64, Capability)> = Vec::with_capacity(ids.len());
        for (id, capability) in self.capabilities_by_id(&ids)? {
            if let Some(signal) = signals.get(&id) {
                let score = ranking::fused(signal, usage(&capability));
                ranked.push((score, capability));
            }
        }
        ranked.sort_by(|(a_score, a), (b_score, b)| {
            b_score
                .total_cmp(a_score)
                .then(recency(b).cmp(&recency(a)))
                .then(a.name.cmp(&b.name))
        });
        ranked.truncate(limit);
        Ok(ranked
            .into_iter()
            .map(|(_, capability)| capability)
            .collect())
    }

    /// access_count += 1, last_access = now.
    pub fn touch_capability(&mut self, name: &str) -> Result<(), StoreError> {
        let touched = self
            .conn
            .prepare_cached(
                "UPDATE capability_stats SET access_count = access_count + 1, last_access = ?2
                 WHERE name = ?1",
            )?
            .execute(params![name, now_ms()])?;
        match touched {
            0 => Err(StoreError::NotFound {
                what: "capability",
                key: name.to_owned(),
            }),
            _ => Ok(()),
        }
    }

    /// Removes every version and its stats; false when there was none.
    pub fn remove_capability(&mut self, name: &str) -> Result<bool, StoreError> {
        let tx = self.conn.transaction()?;
        let removed = tx
            .prepare_cached("DELETE FROM capabilities WHERE name = ?1")?
            .execute([name])?;
        tx.prepare_cached("DELETE FROM capability_stats WHERE name = ?1")?
            .execute([name])?;
        tx.commit()?;
        Ok(removed > 0)
    }

    /// Pins or unpins every version of `name`; false when there is no such capability.
    pub fn pin_capability(&mut self, name: &str, pinned: bool) -> Result<bool, StoreError> {
        let changed = self
            .conn
            .prepare_cached("UPDATE capability_stats SET pinned = ?2 WHERE name = ?1")?
            .execute(params![name, pinned])?;
        Ok(changed > 0)
    }

    /// The latest version of every pinned capability, by name.
    pub fn pinned_capabilities(&self) -> Result<Vec<Capability>, StoreError> {
        let sql = select_capabilities!("WHERE s.pinned = 1 AND ", latest!(), " ORDER BY c.name");
        self.query_capabilities(sql, [])
    }

    fn query_capabilities(
        &self,
        sql: &str,
        values: impl Params,
    ) -> Result<Vec<Capability>, StoreError> {
        let rows = self.query_rows(sql, values)?;
        Ok(rows.into_iter().map(|(_, capability)| capability).collect())
    }

    /// The rows of `select_capabilities!` with their ids.
    fn query_rows(
        &self,
        sql: &str,
        values: impl Params,
    ) -> Result<Vec<(i64, Capability)>, StoreError> {
        let mut stmt = self.conn.prepare_cached(sql)?;
        let rows = stmt
            .query_map(values, capability_row)?
            .collect::<Result<Vec<_>, _>>()?;
        rows.into_iter().map(parse_json).collect()
    }

    /// The capability versions with these row ids, each with its id.
    fn capabilities_by_id(&self, ids: &[i64]) -> Result<Vec<(i64, Capability)>, StoreError> {
        let sql = select_capabilities!("WHERE c.id IN (SELECT value FROM json_each(?1))");
        self.query_rows(sql, [serde_json::to_string(ids)?])
    }

    /// The answer to a query without words: most used first, then the most recently used
    /// or created.
    fn most_used_capabilities(&self, limit: usize) -> Result<Vec<Capability>, StoreError> {
        let sql = select_capabilities!(
            "WHERE ",
            latest!(),
            " ORDER BY coalesce(s.access_count, 0) DESC,
                 coalesce(s.last_access, c.created_at) DESC, c.name
             LIMIT ?1"
        );
        self.query_capabilities(sql, [to_sql_int(limit as u64)])
    }

    /// The best `pool` keyword matches of `terms` (latest versions only) with their bm25.
    fn capability_keyword_hits(
        &self,
        terms: &[String],
        pool: usize,
    ) -> Result<Vec<(i64, f64)>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT rowid, rank FROM capabilities_fts WHERE capabilities_fts MATCH ?1
             ORDER BY rank LIMIT ?2",
        )?;
        let expression = quote_terms(terms);
        let limit = to_sql_int(pool as u64);
        let hits = stmt.query_map(params![expression, limit], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })?;
        Ok(hits.collect::<Result<Vec<_>, _>>()?)
    }

    /// Gives the candidates their meaning place and cosine with `vector`, adding the `pool`
    /// latest versions most similar to it that no keyword found.
    fn add_semantic_signals(
        &self,
        signals: &mut HashMap<i64, Signals>,
        vector: &[f32],
        pool: usize,
    ) -> Result<(), StoreError> {
        let mut query = vector.to_vec();
        normalize(&mut query);
        let bytes = to_sql_int(query.len().saturating_mul(4) as u64);
        let sql = concat!(
            "SELECT c.id, c.embedding FROM capabilities c WHERE length(c.embedding) = ?1 AND ",
            latest!()
        );
        let mut stmt = self.conn.prepare_cached(sql)?;
        let mut rows = stmt.query([bytes])?;
        let mut similar: Vec<(i64, f64)> = Vec::new();
        while let Some(row) = rows.next()? {
            if let Ok(Some(blob)) = row.get_ref(1)?.as_blob_or_null() {
                similar.push((row.get(0)?, f64::from(dot(&from_blob(blob), &query))));
            }
        }
        similar.sort_unstable_by(|a, b| b.1.total_cmp(&a.1));
        for (rank, (id, cosine)) in similar.into_iter().enumerate() {
            let known = signals.contains_key(&id);
            if known || rank < pool {
                let signal = signals.entry(id).or_default();
                signal.semantic = Some(rank);
                signal.cosine = Some(cosine);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "capabilities_tests.rs"]
mod tests;
