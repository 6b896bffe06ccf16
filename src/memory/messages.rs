//! The working set and turn records. Messages are appended after every completed message, so
//! the write path is one transaction over cached statements; reads come back in `seq` order.

use rusqlite::{Row, params};

use super::db::{Db, from_sql_int, now_ms, to_sql_int};
use super::error::StoreError;
use super::types::{Millis, SessionTotals, StoredMessage, TurnRecord};
use crate::llm::{ContentBlock, Message, Role, Usage};
use crate::protocol::{TurnStatus, UserMessageKind};

/// The status of a turn that has started and not yet finished.
pub const TURN_RUNNING: &str = "running";
/// The status of a turn whose process died before it finished.
pub const TURN_KILLED: &str = "killed";

const SELECT_MESSAGE: &str = "SELECT seq, role, content, tokens, active, created_at, kind FROM messages WHERE session_id = ?1";

pub(super) fn role_name(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}

fn parse_role(name: &str) -> Result<Role, StoreError> {
    match name {
        "user" => Ok(Role::User),
        "assistant" => Ok(Role::Assistant),
        other => Err(StoreError::Corrupt(format!(
            "unknown message role `{other}`"
        ))),
    }
}

fn kind_name(kind: UserMessageKind) -> Option<&'static str> {
    match kind {
        UserMessageKind::Prompt => None,
        UserMessageKind::Injected => Some("injected"),
        UserMessageKind::Queued => Some("queued"),
        UserMessageKind::Continuation => Some("continuation"),
        UserMessageKind::StepLimit => Some("step_limit"),
        UserMessageKind::SkillRequest => Some("skill_request"),
    }
}

/// Unknown names (from a newer mnemo) read as a plain message.
fn parse_kind(name: &str) -> Option<UserMessageKind> {
    match name {
        "injected" => Some(UserMessageKind::Injected),
        "queued" => Some(UserMessageKind::Queued),
        "continuation" => Some(UserMessageKind::Continuation),
        "step_limit" => Some(UserMessageKind::StepLimit),
        "skill_request" => Some(UserMessageKind::SkillRequest),
        _ => None,
    }
}

pub fn turn_status_name(status: TurnStatus) -> &'static str {
    match status {
        TurnStatus::Completed => "completed",
        TurnStatus::Interrupted => "interrupted",
        TurnStatus::LoopDetected => "loop_detected",
        TurnStatus::StepLimit => "step_limit",
        TurnStatus::Failed => "failed",
        TurnStatus::CutOff => "cut_off",
        TurnStatus::Refused => "refused",
    }
}

/// A message row before its JSON is decoded (row closures cannot return serde errors).
struct RawMessage {
    seq: i64,
    role: String,
    content: String,
    tokens: u32,
    active: bool,
    created_at: Millis,
    kind: Option<String>,
}

fn raw_message(row: &Row<'_>) -> rusqlite::Result<RawMessage> {
    Ok(RawMessage {
        seq: row.get(0)?,
        role: row.get(1)?,
        content: row.get(2)?,
        tokens: row.get(3)?,
        active: row.get(4)?,
        created_at: row.get(5)?,
        kind: row.get(6)?,
    })
}

impl RawMessage {
    fn decode(self) -> Result<StoredMessage, StoreError> {
        let content: Vec<ContentBlock> = serde_json::from_str(&self.content)?;
        Ok(StoredMessage {
            seq: self.seq,
            message: Message {
                role: parse_role(&self.role)?,
                content,
            },
            tokens: self.tokens,
            active: self.active,
            created_at: self.created_at,
            kind: self.kind.as_deref().and_then(parse_kind),
        })
    }
}

impl Db {
    /// Appends `(seq, message, token estimate)` rows to the working set in one transaction
    /// and marks the session as updated.
    pub fn append_messages(
        &mut self,
        session_id: &str,
        messages: &[(i64, &Message, u32)],
    ) -> Result<(), StoreError> {
        let now = now_ms();
        let tx = self.conn.transaction()?;
        let touched = tx
            .prepare_cached("UPDATE sessions SET updated_at = ?2 WHERE id = ?1")?
            .execute(params![session_id, now])?;
        if touched == 0 {
            return Err(StoreError::NotFound {
                what: "session",
                key: session_id.to_owned(),
            });
        }
        {
            let mut insert = tx.prepare_cached(
                "INSERT INTO messages(session_id, seq, role, tokens, active, created_at, content)
                 VALUES (?1, ?2, ?3, ?4, 1, ?5, ?6)",
            )?;
            for (seq, message, tokens) in messages {
                let content = serde_json::to_string(&message.content)?;
                insert.execute(params![
                    session_id,
                    seq,
                    role_name(message.role),
                    tokens,
                    now,
                    content
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// The working set: messages not moved to the archive, in `seq` order.
    pub fn active_messages(&self, session_id: &str) -> Result<Vec<StoredMessage>, StoreError> {
        self.load_messages(
            &format!("{SELECT_MESSAGE} AND active = 1 ORDER BY seq"),
            session_id,
        )
    }

    /// Every message of the session, archived ones included, in `seq` order.
    pub fn all_messages(&self, session_id: &str) -> Result<Vec<StoredMessage>, StoreError> {
        self.load_messages(&format!("{SELECT_MESSAGE} ORDER BY seq"), session_id)
    }

    fn load_messages(&self, sql: &str, session_id: &str) -> Result<Vec<StoredMessage>, StoreError> {
        let mut stmt = self.conn.prepare_cached(sql)?;
        let raw = stmt
            .query_map([session_id], raw_message)?
            .collect::<Result<Vec<_>, _>>()?;
        raw.into_iter().map(RawMessage::decode).collect()
    }

    /// Records how the user message `seq` arrived (a plain prompt needs no record).
    pub fn set_message_kind(
        &mut self,
        session_id: &str,
        seq: i64,
        kind: UserMessageKind,
    ) -> Result<(), StoreError> {
        let Some(name) = kind_name(kind) else {
            return Ok(());
        };
        self.conn
            .prepare_cached("UPDATE messages SET kind = ?3 WHERE session_id = ?1 AND seq = ?2")?
            .execute(params![session_id, seq, name])?;
        Ok(())
    }

    pub fn max_seq(&self, session_id: &str) -> Result<Option<i64>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT max(seq) FROM messages WHERE session_id = ?1")?;
        Ok(stmt.query_row([session_id], |row| row.get(0))?)
    }

    #[cfg(test)]
    pub fn count_active(&self, session_id: &str) -> Result<u64, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT count(*) FROM messages WHERE session_id = ?1 AND active = 1")?;
        Ok(from_sql_int(
            stmt.query_row([session_id], |row| row.get(0))?,
        ))
    }

    /// Records that turn `turn` started; it stays "running" until `finish_turn`.
    pub fn begin_turn(
        &mut self,
        session_id: &str,
        turn: u64,
        started_at: Millis,
    ) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        tx.prepare_cached(
            "INSERT INTO turns(session_id, turn, status, started_at) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT(session_id, turn) DO UPDATE SET status = excluded.status,
                 started_at = excluded.started_at, finished_at = NULL",
        )?
        .execute(params![
            session_id,
            to_sql_int(turn),
            TURN_RUNNING,
            started_at
        ])?;
        tx.commit()?;
        Ok(())
    }

    /// Stores the outcome of a turn, whether or not `begin_turn` recorded its start.
    pub fn finish_turn(&mut self, record: &TurnRecord) -> Result<(), StoreError> {
        let report = record
            .report
            .as_ref()
            .map(serde_json::to_string)
            .transpose()?;
        let usage = &record.usage;
        let tx = self.conn.transaction()?;
        tx.prepare_cached(
            "INSERT INTO turns(session_id, turn, status, started_at, finished_at, input_tokens,
                 output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, report)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
             ON CONFLICT(session_id, turn) DO UPDATE SET status = excluded.status,
                 started_at = excluded.started_at, finished_at = excluded.finished_at,
                 input_tokens = excluded.input_tokens, output_tokens = excluded.output_tokens,
                 cache_read_tokens = excluded.cache_read_tokens,
                 cache_write_tokens = excluded.cache_write_tokens,
                 cost_usd = excluded.cost_usd, report = excluded.report",
        )?
        .execute(params![
            record.session_id,
            to_sql_int(record.turn),
            turn_status_name(record.status),
            record.started_at,
            record.finished_at,
            to_sql_int(usage.input_tokens),
            to_sql_int(usage.output_tokens),
            to_sql_int(usage.cache_read_tokens),
            to_sql_int(usage.cache_write_tokens),
            record.cost_usd,
            report
        ])?;
        tx.commit()?;
        Ok(())
    }

    /// Marks the session's unfinished turns as "killed" (its process died mid-turn) and
    /// returns how many there were.
    pub fn mark_running_turns_killed(&mut self, session_id: &str) -> Result<u64, StoreError> {
        let tx = self.conn.transaction()?;
        let changed = tx
            .prepare_cached(
                "UPDATE turns SET status = ?2, finished_at = coalesce(finished_at, ?3)
                 WHERE session_id = ?1 AND status = ?4",
            )?
            .execute(params![session_id, TURN_KILLED, now_ms(), TURN_RUNNING])?;
        tx.commit()?;
        Ok(u64::try_from(changed).unwrap_or(u64::MAX))
    }

    /// Takes the conversation back to before message `from_seq` (a rewind): the messages from
    /// it on are deleted. The turns' records (and what they cost) stay. Returns how many went.
    pub fn delete_messages_from(
        &mut self,
        session_id: &str,
        from_seq: i64,
    ) -> Result<u64, StoreError> {
        let tx = self.conn.transaction()?;
        let deleted = tx
            .prepare_cached("DELETE FROM messages WHERE session_id = ?1 AND seq >= ?2")?
            .execute(params![session_id, from_seq])?;
        tx.prepare_cached("UPDATE sessions SET updated_at = ?2 WHERE id = ?1")?
            .execute(params![session_id, now_ms()])?;
        tx.commit()?;
        Ok(u64::try_from(deleted).unwrap_or(u64::MAX))
    }

    /// Turn count, usage and cost over the session's turns that are no longer running.
    pub fn session_totals(&self, session_id: &str) -> Result<SessionTotals, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT count(*), coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0),
                 coalesce(sum(cache_read_tokens), 0), coalesce(sum(cache_write_tokens), 0),
                 coalesce(sum(cost_usd), 0.0)
             FROM turns WHERE session_id = ?1 AND status <> ?2",
        )?;
        let totals = stmt.query_row(params![session_id, TURN_RUNNING], |row| {
            Ok(SessionTotals {
                turns: from_sql_int(row.get(0)?),
                usage: Usage {
                    input_tokens: from_sql_int(row.get(1)?),
                    output_tokens: from_sql_int(row.get(2)?),
                    cache_read_tokens: from_sql_int(row.get(3)?),
                    cache_write_tokens: from_sql_int(row.get(4)?),
                },
                cost_usd: row.get(5)?,
            })
        })?;
        Ok(totals)
    }
}

#[cfg(test)]
#[path = "messages_tests.rs"]
mod tests;
