//! The database schema as an ordered list of migrations. `PRAGMA user_version` records how many
//! have been applied; opening a database applies the missing ones, each in its own transaction,
//! and refuses a database written by a newer mnemo instead of touching it.

use rusqlite::{Connection, TransactionBehavior};

use super::error::StoreError;

/// v1: sessions, the working set, turns and settings. Large columns come last in each row so
/// that reading the small ones never walks an overflow chain.
const V1: &str = "
CREATE TABLE sessions (
    id         TEXT PRIMARY KEY,
    parent_id  TEXT REFERENCES sessions(id) ON DELETE SET NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    cwd        TEXT NOT NULL,
    title      TEXT NOT NULL,
    model      TEXT NOT NULL,
    status     TEXT NOT NULL
);
CREATE INDEX sessions_by_updated ON sessions(updated_at);
CREATE INDEX sessions_by_cwd ON sessions(cwd, updated_at);
CREATE INDEX sessions_by_parent ON sessions(parent_id);

CREATE TABLE messages (
    id         INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    role       TEXT NOT NULL,
    tokens     INTEGER NOT NULL,
    active     INTEGER NOT NULL DEFAULT 1,
    created_at INTEGER NOT NULL,
    content    TEXT NOT NULL,
    UNIQUE (session_id, seq)
);
CREATE INDEX messages_active ON messages(session_id, seq) WHERE active = 1;

CREATE TABLE turns (
    session_id         TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    turn               INTEGER NOT NULL,
    status             TEXT NOT NULL,
    started_at         INTEGER NOT NULL,
    finished_at        INTEGER,
    input_tokens       INTEGER NOT NULL DEFAULT 0,
    output_tokens      INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd           REAL NOT NULL DEFAULT 0,
    report             TEXT,
    PRIMARY KEY (session_id, turn)
);

CREATE TABLE kv (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
";

/// v2: the archive with its full-text index, experiences, and session subtitles. The index is
/// an external-content FTS5 table (the text is stored once, in `archive`) kept in sync by
/// triggers; porter stemming lets "configured" find "configure"; topic and summary weigh more
/// than the body in bm25.
const V2: &str = "
ALTER TABLE sessions ADD COLUMN subtitle TEXT;

CREATE TABLE archive (
    id          INTEGER PRIMARY KEY,
    session_id  TEXT REFERENCES sessions(id) ON DELETE CASCADE,
    created_at  INTEGER NOT NULL,
    started_at  INTEGER NOT NULL,
    ended_at    INTEGER NOT NULL,
    first_seq   INTEGER NOT NULL,
    last_seq    INTEGER NOT NULL,
    token_count INTEGER NOT NULL,
    importance  REAL NOT NULL,
    topic       TEXT NOT NULL,
    summary     TEXT NOT NULL,
    embedding   BLOB,
    body        TEXT NOT NULL,
    messages    TEXT NOT NULL
);
CREATE INDEX archive_by_session ON archive(session_id);

CREATE VIRTUAL TABLE archive_fts USING fts5(
    topic, summary, body,
    content = 'archive', content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO archive_fts(archive_fts, rank) VALUES ('rank', 'bm25(4.0, 2.0, 1.0)');
CREATE TRIGGER archive_fts_insert AFTER INSERT ON archive BEGIN
    INSERT INTO archive_fts(rowid, topic, summary, body)
    VALUES (new.id, new.topic, new.summary, new.body);
END;
CREATE TRIGGER archive_fts_delete AFTER DELETE ON archive BEGIN
    INSERT INTO archive_fts(archive_fts, rowid, topic, summary, body)
    VALUES ('delete', old.id, old.topic, old.summary, old.body);
END;
CREATE TRIGGER archive_fts_update AFTER UPDATE OF topic, summary, body ON archive BEGIN
    INSERT INTO archive_fts(archive_fts, rowid, topic, summary, body)
    VALUES ('delete', old.id, old.topic, old.summary, old.body);
    INSERT INTO archive_fts(rowid, topic, summary, body)
    VALUES (new.id, new.topic, new.summary, new.body);
END;

CREATE TABLE experiences (
    id         INTEGER PRIMARY KEY,
    text       TEXT NOT NULL,
    normalized TEXT NOT NULL,
    scope      TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    source     TEXT NOT NULL
);
CREATE UNIQUE INDEX experiences_by_scope_text ON experiences(scope, normalized);

INSERT INTO kv(key, value) VALUES ('experiences.version', '0');
CREATE TRIGGER experiences_version_insert AFTER INSERT ON experiences BEGIN
    UPDATE kv SET value = CAST(value AS INTEGER) + 1 WHERE key = 'experiences.version';
END;
CREATE TRIGGER experiences_version_delete AFTER DELETE ON experiences BEGIN
    UPDATE kv SET value = CAST(value AS INTEGER) + 1 WHERE key = 'experiences.version';
END;
CREATE TRIGGER experiences_version_update AFTER UPDATE ON experiences BEGIN
    UPDATE kv SET value = CAST(value AS INTEGER) + 1 WHERE key = 'experiences.version';
END;
";

/// v3: how a user message arrived while a turn ran (`injected`, `queued`); NULL otherwise.
const V3: &str = "ALTER TABLE messages ADD COLUMN kind TEXT;";

/// v4: capabilities, the tools the agent wrote for itself. Every version is a row (rows are
/// never updated: a change is a new version), the code last so that a search reading
/// embeddings does not walk its overflow pages; use counts and the pin belong to the name
/// and outlive versions. The full-text index holds only the latest version of each name (its
/// rowid is that version's id), kept so by triggers: tags and the string and number leaves of
/// the examples are indexed as plain words, JSON punctuation and keys left out.
const V4: &str = "
CREATE TABLE capabilities (
    id           INTEGER PRIMARY KEY,
    name         TEXT NOT NULL,
    version      INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    session_id   TEXT,
    turn         INTEGER,
    language     TEXT NOT NULL,
    description  TEXT NOT NULL,
    tags         TEXT NOT NULL,
    input_schema TEXT NOT NULL,
    examples     TEXT NOT NULL,
    embedding    BLOB,
    code         TEXT NOT NULL,
    UNIQUE (name, version)
);

CREATE TABLE capability_stats (
    name         TEXT PRIMARY KEY,
    access_count INTEGER NOT NULL DEFAULT 0,
    last_access  INTEGER,
    pinned       INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

CREATE VIRTUAL TABLE capabilities_fts USING fts5(
    name, description, tags, examples,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO capabilities_fts(capabilities_fts, rank) VALUES ('rank', 'bm25(4.0, 2.0, 2.0, 1.0)');
CREATE TRIGGER capabilities_fts_insert AFTER INSERT ON capabilities BEGIN
    DELETE FROM capabilities_fts
    WHERE rowid IN (SELECT id FROM capabilities WHERE name = new.name AND id <> new.id);
    INSERT INTO capabilities_fts(rowid, name, description, tags, examples)
    VALUES (
        new.id, new.name, new.description,
        (SELECT group_concat(value, ' ') FROM json_each(new.tags)),
        (SELECT group_concat(value, ' ') FROM json_tree(new.examples)
         WHERE type IN ('text', 'integer', 'real'))
    );
END;
CREATE TRIGGER capabilities_fts_delete AFTER DELETE ON capabilities BEGIN
    DELETE FROM capabilities_fts WHERE rowid = old.id;
END;
";

/// v5: skills' stats. The skills themselves are folders on disk (Agent Skills format); a row
/// records who wrote one (a person, the agent, an import), where the agent did, how often it
/// was loaded and how the turns that loaded it ended. `failure_streak` counts the failed
/// turns since the last good one (two make a learned skill suspect). The full-text index of
/// names and descriptions is refreshed from disk at session start and finds similar skills
/// before a new one is written.
const V5: &str = "
CREATE TABLE skill_stats (
    name           TEXT PRIMARY KEY,
    origin         TEXT NOT NULL,
    session_id     TEXT,
    turn           INTEGER,
    created_at     INTEGER NOT NULL,
    loads          INTEGER NOT NULL DEFAULT 0,
    successes      INTEGER NOT NULL DEFAULT 0,
    failures       INTEGER NOT NULL DEFAULT 0,
    failure_streak INTEGER NOT NULL DEFAULT 0,
    last_used      INTEGER,
    pinned         INTEGER NOT NULL DEFAULT 0,
    stale          INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

CREATE VIRTUAL TABLE skills_fts USING fts5(
    name, description,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO skills_fts(skills_fts, rank) VALUES ('rank', 'bm25(3.0, 1.0)');
";

/// v6: recall by meaning. Each archive entry and experience is embedded in pieces that fit
/// the embedding model's input (see `pieces.rs`), one row per piece and model, the vector as
/// little-endian f32 of unit length; rows go with what they embed. Experiences get a
/// full-text index like the archive's.
const V6: &str = "
CREATE TABLE memory_pieces (
    id        INTEGER PRIMARY KEY,
    source    TEXT NOT NULL,
    source_id INTEGER NOT NULL,
    ord       INTEGER NOT NULL,
    model     TEXT NOT NULL,
    embedding BLOB NOT NULL
);
CREATE UNIQUE INDEX memory_pieces_key ON memory_pieces(model, source, source_id, ord);
CREATE INDEX memory_pieces_by_source ON memory_pieces(source, source_id);
CREATE TRIGGER memory_pieces_archive_delete AFTER DELETE ON archive BEGIN
    DELETE FROM memory_pieces WHERE source = 'archive' AND source_id = old.id;
END;
CREATE TRIGGER memory_pieces_archive_update AFTER UPDATE OF topic, summary, messages ON archive
BEGIN
    DELETE FROM memory_pieces WHERE source = 'archive' AND source_id = old.id;
END;
CREATE TRIGGER memory_pieces_experience_delete AFTER DELETE ON experiences BEGIN
    DELETE FROM memory_pieces WHERE source = 'experience' AND source_id = old.id;
END;
CREATE TRIGGER memory_pieces_experience_update AFTER UPDATE OF text ON experiences BEGIN
    DELETE FROM memory_pieces WHERE source = 'experience' AND source_id = old.id;
END;

CREATE VIRTUAL TABLE experiences_fts USING fts5(
    text,
    content = 'experiences', content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO experiences_fts(experiences_fts) VALUES ('rebuild');
CREATE TRIGGER experiences_fts_insert AFTER INSERT ON experiences BEGIN
    INSERT INTO experiences_fts(rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER experiences_fts_delete AFTER DELETE ON experiences BEGIN
    INSERT INTO experiences_fts(experiences_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
CREATE TRIGGER experiences_fts_update AFTER UPDATE OF text ON experiences BEGIN
    INSERT INTO experiences_fts(experiences_fts, rowid, text) VALUES ('delete', old.id, old.text);
    INSERT INTO experiences_fts(rowid, text) VALUES (new.id, new.text);
END;
";

/// v7: the working messages of every session are searchable until compaction archives them
/// (a session's first message is never archived): their text blocks in a full-text index,
/// filled and emptied by triggers, their pieces gone with them.
const V7: &str = "
CREATE VIRTUAL TABLE messages_fts USING fts5(
    text,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO messages_fts(rowid, text)
    SELECT m.id, group_concat(json_extract(b.value, '$.text'), char(10))
    FROM messages m, json_each(m.content) b
    WHERE m.active = 1 AND json_valid(m.content) AND json_extract(b.value, '$.type') = 'text'
    GROUP BY m.id;
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages WHEN new.active = 1
    AND json_valid(new.content) BEGIN
    INSERT INTO messages_fts(rowid, text)
        SELECT new.id, group_concat(json_extract(b.value, '$.text'), char(10))
        FROM json_each(new.content) b WHERE json_extract(b.value, '$.type') = 'text'
        HAVING count(*) > 0;
END;
CREATE TRIGGER messages_fts_retire AFTER UPDATE OF active ON messages WHEN new.active = 0 BEGIN
    DELETE FROM messages_fts WHERE rowid = old.id;
    DELETE FROM memory_pieces WHERE source = 'message' AND source_id = old.id;
END;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF content ON messages WHEN new.active = 1
    AND json_valid(new.content) BEGIN
    DELETE FROM messages_fts WHERE rowid = old.id;
    DELETE FROM memory_pieces WHERE source = 'message' AND source_id = old.id;
    INSERT INTO messages_fts(rowid, text)
        SELECT new.id, group_concat(json_extract(b.value, '$.text'), char(10))
        FROM json_each(new.content) b WHERE json_extract(b.value, '$.type') = 'text'
        HAVING count(*) > 0;
END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    DELETE FROM messages_fts WHERE rowid = old.id;
    DELETE FROM memory_pieces WHERE source = 'message' AND source_id = old.id;
END;
";

/// v8: session leases. One process writes a session at a time; the holder renews its row
/// while it lives, and a row of a dead holder (gone from this host, or not renewed in time
/// on another) is taken over.
const V8: &str = "
CREATE TABLE session_leases (
    session_id TEXT PRIMARY KEY,
    pid        INTEGER NOT NULL,
    host       TEXT NOT NULL,
    started    INTEGER NOT NULL,
    renewed_at INTEGER NOT NULL
);
";

/// Schedules the agent made (`schedule_create`) and the run record of every job `mnemo serve`
/// runs (heartbeats and schedules): the last start, and who runs it now. `running_pid` lets a
/// later daemon see that a run whose process died (killed mid-run) no longer runs.
const SCHEDULES: &str = "
CREATE TABLE schedules (
    id         INTEGER PRIMARY KEY,
    created_at INTEGER NOT NULL,
    session_id TEXT REFERENCES sessions(id) ON DELETE SET NULL,
    workspace  TEXT NOT NULL,
    cron       TEXT,
    every_secs INTEGER,
    at         INTEGER,
    prompt     TEXT NOT NULL
);
CREATE TABLE job_runs (
    job           TEXT PRIMARY KEY,
    last_run      INTEGER,
    last_status   TEXT,
    last_session  TEXT,
    running_since INTEGER,
    running_pid   INTEGER
) WITHOUT ROWID;
";

/// The Telegram channel: chats paired from a terminal (each with its current session and the
/// sessions it started) and the one-time codes waiting for `mnemo telegram pair`. The update
/// offset and the channel's state are kv entries.
const TELEGRAM: &str = "
CREATE TABLE telegram_chats (
    chat_id    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    paired_at  INTEGER NOT NULL,
    session_id TEXT
);
CREATE TABLE telegram_chat_sessions (
    chat_id    INTEGER NOT NULL REFERENCES telegram_chats(chat_id) ON DELETE CASCADE,
    session_id TEXT NOT NULL,
    started_at INTEGER NOT NULL,
    PRIMARY KEY (chat_id, session_id)
) WITHOUT ROWID;
CREATE TABLE telegram_pairings (
    chat_id    INTEGER PRIMARY KEY,
    code       TEXT NOT NULL UNIQUE,
    name       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    sent_at    INTEGER NOT NULL
);
ALTER TABLE schedules ADD COLUMN deliver TEXT NOT NULL DEFAULT '';
";

/// The dream cycle's notes (`MEMORY.md`, `USER.md`). Every version of the pair is a row,
/// never updated but for `undone` (an undo marks the current version; the latest version not
/// undone is current); a counter bumped by triggers tells sessions to re-render their prompt.
/// The paragraphs of the current version are recall's fourth source, with a full-text index
/// and pieces like the others; ids are never reused so that a stale piece cannot point at a
/// newer paragraph.
const DREAM: &str = "
CREATE TABLE dream_notes (
    id         INTEGER PRIMARY KEY,
    created_at INTEGER NOT NULL,
    origin     TEXT NOT NULL,
    cursor     INTEGER NOT NULL,
    undone     INTEGER NOT NULL DEFAULT 0,
    memory_md  TEXT NOT NULL,
    user_md    TEXT NOT NULL
);

INSERT INTO kv(key, value) VALUES ('dream_notes.version', '0');
CREATE TRIGGER dream_notes_version_insert AFTER INSERT ON dream_notes BEGIN
    UPDATE kv SET value = CAST(value AS INTEGER) + 1 WHERE key = 'dream_notes.version';
END;
CREATE TRIGGER dream_notes_version_update AFTER UPDATE ON dream_notes BEGIN
    UPDATE kv SET value = CAST(value AS INTEGER) + 1 WHERE key = 'dream_notes.version';
END;

CREATE TABLE dream_paragraphs (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    version_id INTEGER NOT NULL REFERENCES dream_notes(id) ON DELETE CASCADE,
    file       TEXT NOT NULL,
    text       TEXT NOT NULL
);
CREATE VIRTUAL TABLE dream_paragraphs_fts USING fts5(
    text,
    content = 'dream_paragraphs', content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER dream_paragraphs_fts_insert AFTER INSERT ON dream_paragraphs BEGIN
    INSERT INTO dream_paragraphs_fts(rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER dream_paragraphs_fts_delete AFTER DELETE ON dream_paragraphs BEGIN
    INSERT INTO dream_paragraphs_fts(dream_paragraphs_fts, rowid, text)
    VALUES ('delete', old.id, old.text);
    DELETE FROM memory_pieces WHERE source = 'dream' AND source_id = old.id;
END;
";

/// The session hosts' event journal: each session's numbered events as JSON, so a front end
/// can go on from an old sequence number and a resumed session continues its numbering. No
/// foreign key: a new session's first events come before its row is written (with its first
/// message); a trigger removes a deleted session's events instead.
const SESSION_EVENTS: &str = "
CREATE TABLE session_events (
    session_id TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    event      TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
CREATE TRIGGER session_events_on_session_delete AFTER DELETE ON sessions BEGIN
    DELETE FROM session_events WHERE session_id = old.id;
END;
";

/// A run of text deltas is journaled as one row: `seq` is its first event's number and
/// `last_seq` its last (NULL for a row of one event).
const SESSION_EVENT_RUNS: &str = "
ALTER TABLE session_events ADD COLUMN last_seq INTEGER;
";

/// What the session that made a schedule was allowed (approval mode, sandbox policy, network,
/// workspace trust), so that its runs never get more. Schedules made before this was kept get
/// the least: read-only, offline, untrusted.
const SCHEDULE_RIGHTS: &str = "
ALTER TABLE schedules ADD COLUMN approval TEXT NOT NULL DEFAULT 'read-only';
ALTER TABLE schedules ADD COLUMN sandbox TEXT NOT NULL DEFAULT 'read-only';
ALTER TABLE schedules ADD COLUMN network INTEGER NOT NULL DEFAULT 0;
ALTER TABLE schedules ADD COLUMN trusted INTEGER NOT NULL DEFAULT 0;
CREATE INDEX schedules_workspace ON schedules(workspace);
";

/// The sessions heartbeat and schedule runs were stored in, per job, so that only the newest
/// few are kept and people's own session lists leave them out; and the results of schedules
/// waiting to be shown in the session that made them (once, when a front end is there). A
/// deleted session takes its rows along.
const JOB_RUN_SESSIONS: &str = "
CREATE TABLE job_run_sessions (
    id         INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL UNIQUE REFERENCES sessions(id) ON DELETE CASCADE,
    job        TEXT NOT NULL,
    ended_at   INTEGER NOT NULL
);
CREATE INDEX job_run_sessions_by_job ON job_run_sessions(job, id);

CREATE TABLE session_notices (
    id         INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    created_at INTEGER NOT NULL,
    title      TEXT NOT NULL,
    body       TEXT NOT NULL
);
CREATE INDEX session_notices_by_session ON session_notices(session_id, id);
";

/// Migration `i` brings the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    V1,
    V2,
    V3,
    V4,
    V5,
    V6,
    V7,
    V8,
    SCHEDULES,
    DREAM,
    TELEGRAM,
    SESSION_EVENTS,
    SCHEDULE_RIGHTS,
    SESSION_EVENT_RUNS,
    JOB_RUN_SESSIONS,
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// The kv key holding the experiences change counter (bumped by triggers).
pub(crate) const EXPERIENCES_VERSION_KEY: &str = "experiences.version";

/// The kv key holding the dream notes' change counter (bumped by triggers).
pub(crate) const DREAM_NOTES_VERSION_KEY: &str = "dream_notes.version";

fn user_version(conn: &Connection) -> Result<i64, rusqlite::Error> {
    conn.query_row("PRAGMA user_version", [], |row| row.get(0))
}

/// Brings the database to `SCHEMA_VERSION`, or fails without writing when it is newer.
pub(crate) fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    let mut current = checked_version(user_version(conn)?)?;
    for (from, sql) in (0u32..).zip(MIGRATIONS) {
        if current > from {
            continue;
        }
        let to = from + 1;
        let failed = |source| StoreError::Migration { from, to, source };
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(failed)?;
        // Read again under the write lock: another process may have migrated meanwhile.
        let now = checked_version(user_version(&tx).map_err(failed)?)?;
        if now == from {
            tx.execute_batch(sql).map_err(failed)?;
            tx.pragma_update(None, "user_version", to).map_err(failed)?;
        }
        tx.commit().map_err(failed)?;
        current = now.max(to);
    }
    Ok(())
}

fn checked_version(found: i64) -> Result<u32, StoreError> {
    match u32::try_from(found) {
        Ok(version) if version <= SCHEMA_VERSION => Ok(version),
        _ => Err(StoreError::TooNew {
            found,
            supported: SCHEMA_VERSION,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Db;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    #[test]
    fn a_v1_database_with_data_is_upgraded_to_the_latest_version() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("old.db");
        {
            let conn = Connection::open(&path)?;
            conn.execute_batch(V1)?;
            conn.execute_batch(
                "INSERT INTO sessions VALUES ('s-old', NULL, 1, 2, '/w', 'old work', 'm', 'idle');
                 INSERT INTO messages(session_id, seq, role, tokens, active, created_at, content)
                 VALUES ('s-old', 1, 'user', 3, 1, 1, '[{\"type\":\"text\",\"text\":\"hi\"}]');
                 INSERT INTO kv VALUES ('cursor', '7');
                 PRAGMA user_version = 1;",
            )?;
        }
        let mut db = Db::open(&path)?;
        assert_eq!(db.schema_version()?, i64::from(SCHEMA_VERSION));
        let session = db.session("s-old")?;
        assert_eq!(session.title, "old work");
        assert_eq!(session.subtitle, None);
        assert_eq!(session.message_count, 1);
        assert_eq!(db.active_messages("s-old")?[0].message.text(), "hi");
        assert_eq!(db.kv_get("cursor")?.as_deref(), Some("7"));
        // The v2 tables work on the upgraded file.
        db.set_subtitle("s-old", Some("greeting"))?;
        assert_eq!(db.session("s-old")?.subtitle.as_deref(), Some("greeting"));
        assert_eq!(db.experiences_version()?, 0);
        Ok(())
    }

    #[test]
    fn a_database_from_a_newer_version_is_refused_untouched() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("new.db");
        {
            let conn = Connection::open(&path)?;
            conn.execute_batch("CREATE TABLE future (x); PRAGMA user_version = 99;")?;
        }
        let err = Db::open(&path)
            .err()
            .ok_or("a newer database was accepted")?;
        assert!(matches!(err, StoreError::TooNew { found: 99, .. }), "{err}");
        assert!(err.to_string().contains("upgrade mnemo"));
        let conn = Connection::open(&path)?;
        assert_eq!(user_version(&conn)?, 99);
        let tables: i64 = conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))?;
        assert_eq!(tables, 1);
        Ok(())
    }

    #[test]
    fn opening_twice_does_not_migrate_again() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("nested").join("twice.db");
        drop(Db::open(&path)?);
        let db = Db::open(&path)?;
        assert_eq!(db.schema_version()?, i64::from(SCHEMA_VERSION));
        Ok(())
    }
}
