//! The SQL of the batch writer: a whole batch in one multi-row insert, and the row-by-row fallback that gives each
//! caller its own answer when a unique key or a missing topic gets in the way.
//!
//! Both paths lock the batch's topic rows before touching history (the fast path through the `UPDATE` that raises
//! their seq, the fallback through `SELECT … FOR UPDATE`), in primary-key order. Every other writer of history
//! (deletions, topic removal) also takes the topic row first, so concurrent writers queue on it instead of
//! deadlocking over index gaps.

use crate::batch::AppendRequest;
use crate::codec::{DATETIME_CLOSE, DATETIME_OPEN, risk_flags_col, user_col};
use crate::derive::{Derived, derive};
use crate::error::{db_error, is_unique_violation};
use crate::table::Table;
use palaver_core::{AppendOutcome, Message, StoreError, StoreResult};
use serde_json::Value;
use sqlx::mysql::MySqlArguments;
use sqlx::query::Query;
use sqlx::{MySql, MySqlConnection, MySqlPool, QueryBuilder};
use std::collections::{BTreeMap, HashSet};

/// A message with its column values computed once, whichever path writes it.
struct Row<'a> {
    msg: &'a Message,
    table: Table,
    content: String,
    head: Option<String>,
    derived: Derived,
    risk_flags: Option<String>,
}

impl<'a> Row<'a> {
    fn new(msg: &'a Message) -> Self {
        let content = msg.content.to_string();
        let derived = derive(msg, &content);
        Row {
            msg,
            table: Table::of(&msg.topic),
            head: msg.head.as_ref().map(|h| Value::Object(h.clone()).to_string()),
            risk_flags: risk_flags_col(&msg.risk_flags),
            content,
            derived,
        }
    }

    /// Binds the row to a one-row insert, in `insert_columns!` order.
    fn bind<'q>(&self, query: Query<'q, MySql, MySqlArguments>) -> Query<'q, MySql, MySqlArguments> {
        let (m, d) = (self.msg, &self.derived);
        query
            .bind(m.topic.clone())
            .bind(d.group_id)
            .bind(m.seq)
            .bind(user_col(m.from))
            .bind(m.client_mid.clone())
            .bind(d.msg_type)
            .bind(self.content.clone())
            .bind(self.head.clone())
            .bind(d.mentioned_user_ids.clone())
            .bind(d.mention_all)
            .bind(d.reply_seqid)
            .bind(d.root_seqid)
            .bind(d.file_count)
            .bind(d.content_size)
            .bind(!m.risk_flags.is_empty())
            .bind(m.audit.as_str())
            .bind(self.risk_flags.clone())
            .bind(m.created)
            .bind(m.created)
    }

    /// Appends the row as one tuple of a multi-row insert, with the same values as [`Row::bind`].
    fn push(&self, qb: &mut QueryBuilder<MySql>) {
        let (m, d) = (self.msg, &self.derived);
        qb.push("(");
        let mut t = qb.separated(", ");
        t.push_bind(m.topic.clone()).push_bind(d.group_id).push_bind(m.seq).push_bind(user_col(m.from));
        t.push_bind(m.client_mid.clone()).push_bind(d.msg_type).push("'normal'").push_bind(self.content.clone());
        t.push_bind(self.head.clone()).push_bind(d.mentioned_user_ids.clone()).push_bind(d.mention_all);
        t.push_bind(d.reply_seqid).push_bind(d.root_seqid).push_bind(d.file_count).push_bind(d.content_size);
        t.push_bind(!m.risk_flags.is_empty()).push_bind(m.audit.as_str()).push_bind(self.risk_flags.clone());
        // created_at and updated_at, through the same expression as the one-row insert.
        for _ in 0..2 {
            t.push(DATETIME_OPEN);
            t.push_bind_unseparated(m.created);
            t.push_unseparated(DATETIME_CLOSE);
        }
        qb.push(")");
    }
}

/// Writes a batch and returns one outcome per request, in order. Nothing is reported `Stored` unless the
/// transaction holding it committed; a batch that fails as a whole reports the failure to every caller.
pub(crate) async fn write_batch(pool: &MySqlPool, batch: &[AppendRequest]) -> Vec<StoreResult<AppendOutcome>> {
    let rows: Vec<Row<'_>> = batch.iter().map(|r| Row::new(&r.msg)).collect();
    let everyone = |err: StoreError| vec![Err(err); rows.len()];
    let mut conn = match pool.acquire().await {
        Ok(conn) => conn,
        Err(err) => return everyone(db_error(err)),
    };
    match all_at_once(&mut conn, &rows).await {
        Ok(true) => vec![Ok(AppendOutcome::Stored); rows.len()],
        Ok(false) => row_by_row(&mut conn, &rows).await.unwrap_or_else(everyone),
        Err(err) => everyone(err),
    }
}

/// The highest seq and creation time per topic among `rows`, sorted by name so that locks are taken in key order.
fn raises<'a>(rows: impl Iterator<Item = &'a Row<'a>>) -> BTreeMap<&'a str, (i64, i64)> {
    let mut raises: BTreeMap<&str, (i64, i64)> = BTreeMap::new();
    for row in rows {
        let entry = raises.entry(row.msg.topic.as_str()).or_insert((row.msg.seq, row.msg.created));
        *entry = (entry.0.max(row.msg.seq), entry.1.max(row.msg.created));
    }
    raises
}

/// The largest number of rows (or topics) one statement carries. Larger batches take several statements.
const MAX_CHUNK: usize = 256;

/// Up to this many rows (or topics) go in one statement of exactly their number; a batch of a hot topic is
/// usually that small, and then its rows take one insert instead of one per set bit of the count.
const EXACT_CHUNK: usize = 16;

/// Splits `n` items into chunks: `n` itself up to [`EXACT_CHUNK`], otherwise powers of two (largest first, none
/// above [`MAX_CHUNK`]) down to a remainder of at most [`EXACT_CHUNK`] in one chunk.
///
/// Statements built for a chunk are then one of a few dozen texts per table (1 to 16 and the powers of two up
/// to 256), which the connection's statement cache (100 by default) keeps prepared. A one-off statement would
/// have to be closed after use, and that close (a packet the server never answers) leaves the next request
/// waiting on Nagle's algorithm for the delayed ACK: about 40 ms per transaction on Linux, since sqlx does not
/// set `TCP_NODELAY`.
fn chunks(mut n: usize) -> Vec<usize> {
    let mut sizes = Vec::new();
    while n > 0 {
        let size = if n >= MAX_CHUNK {
            MAX_CHUNK
        } else if n <= EXACT_CHUNK {
            n
        } else {
            1 << n.ilog2()
        };
        sizes.push(size);
        n -= size;
    }
    sizes
}

/// The fast path: raise every topic's seq and touched time, insert all rows (a few multi-row statements per
/// table), commit. `Ok(false)` (after rolling back) when a topic is missing or a unique key collides: the caller
/// then answers row by row.
async fn all_at_once(conn: &mut MySqlConnection, rows: &[Row<'_>]) -> StoreResult<bool> {
    let topics: Vec<(&str, (i64, i64))> = raises(rows.iter()).into_iter().collect();
    let mut tx = sqlx::Connection::begin(&mut *conn).await.map_err(db_error)?;
    if raise_topics(&mut tx, &topics).await? < topics.len() as u64 {
        tx.rollback().await.map_err(db_error)?;
        return Ok(false);
    }
    for table in [Table::Group, Table::P2p] {
        let part: Vec<&Row<'_>> = rows.iter().filter(|r| r.table == table).collect();
        let mut offset = 0;
        for size in chunks(part.len()) {
            let mut qb = multi_row_insert(table, &part[offset..offset + size]);
            offset += size;
            match qb.build().execute(&mut *tx).await {
                Ok(_) => {}
                Err(err) if is_unique_violation(&err) => {
                    tx.rollback().await.map_err(db_error)?;
                    return Ok(false);
                }
                Err(err) => return Err(db_error(err)),
            }
        }
    }
    tx.commit().await.map_err(db_error)?;
    Ok(true)
}

/// One insert of `rows`, all of which belong in `table`. Built outside the async functions so that no borrowing
/// iterator is held across an await.
fn multi_row_insert(table: Table, rows: &[&Row<'_>]) -> QueryBuilder<MySql> {
    let mut qb = QueryBuilder::new(table.insert_prefix());
    for (i, row) in rows.iter().enumerate() {
        if i > 0 {
            qb.push(", ");
        }
        row.push(&mut qb);
    }
    qb
}

/// The fallback: one transaction, one insert per row, each unique violation resolved into `Duplicate` (the same
/// sender and key are stored) or `Conflict` (the seq is taken). Rows of missing topics are `NotFound`.
async fn row_by_row(conn: &mut MySqlConnection, rows: &[Row<'_>]) -> StoreResult<Vec<StoreResult<AppendOutcome>>> {
    let names: Vec<&str> = raises(rows.iter()).into_keys().collect();
    let mut tx = sqlx::Connection::begin(&mut *conn).await.map_err(db_error)?;
    let existing = lock_topics(&mut tx, &names).await?;
    let mut outcomes = Vec::with_capacity(rows.len());
    let mut stored = Vec::new();
    for row in rows {
        if !existing.contains(row.msg.topic.as_str()) {
            outcomes.push(Err(StoreError::NotFound));
            continue;
        }
        // A failed statement is rolled back on its own by InnoDB; the transaction and its earlier rows stay.
        match row.bind(sqlx::query(row.table.insert_one_sql())).execute(&mut *tx).await {
            Ok(_) => {
                outcomes.push(Ok(AppendOutcome::Stored));
                stored.push(row);
            }
            Err(err) if is_unique_violation(&err) => outcomes.push(resolve(&mut tx, row, err).await?),
            Err(err) => return Err(db_error(err)),
        }
    }
    let topics: Vec<(&str, (i64, i64))> = raises(stored.into_iter()).into_iter().collect();
    if !topics.is_empty() {
        raise_topics(&mut tx, &topics).await?;
    }
    tx.commit().await.map_err(db_error)?;
    Ok(outcomes)
}

/// Tells a duplicate idempotency key from a taken seq after a row's insert hit a unique key.
async fn resolve(
    conn: &mut MySqlConnection,
    row: &Row<'_>,
    err: sqlx::Error,
) -> StoreResult<StoreResult<AppendOutcome>> {
    if let Some(mid) = &row.msg.client_mid {
        let existing: Option<i64> = sqlx::query_scalar(row.table.find_mid_locking_sql())
            .bind(&row.msg.topic)
            .bind(user_col(row.msg.from))
            .bind(mid)
            .fetch_optional(&mut *conn)
            .await
            .map_err(db_error)?;
        if let Some(seq) = existing {
            return Ok(Ok(AppendOutcome::Duplicate { seq }));
        }
    }
    let detail = match db_error(err) {
        StoreError::Conflict(detail) => detail,
        other => other.to_string(),
    };
    Ok(Err(StoreError::Conflict(format!("seq {} of {} is already stored: {detail}", row.msg.seq, row.msg.topic))))
}

/// Locks the named topic rows (sorted, so in key order) and returns the names that exist.
async fn lock_topics(conn: &mut MySqlConnection, names: &[&str]) -> StoreResult<HashSet<String>> {
    let mut found = HashSet::new();
    let mut offset = 0;
    for size in chunks(names.len()) {
        let mut qb = lock_statement(&names[offset..offset + size]);
        offset += size;
        let names: Vec<String> = qb.build_query_scalar().fetch_all(&mut *conn).await.map_err(db_error)?;
        found.extend(names);
    }
    Ok(found)
}

fn lock_statement(names: &[&str]) -> QueryBuilder<MySql> {
    let mut qb = QueryBuilder::<MySql>::new("SELECT name FROM topics WHERE name IN (");
    let mut list = qb.separated(", ");
    for name in names {
        list.push_bind(name.to_string());
    }
    qb.push(") FOR UPDATE");
    qb
}

/// Raises each topic's seq and touched time to at least the given values, never lowering them, and returns how
/// many of the topics exist. The connection reports rows matched, not rows changed (CLIENT_FOUND_ROWS), so a
/// topic already at those values still counts.
async fn raise_topics(conn: &mut MySqlConnection, topics: &[(&str, (i64, i64))]) -> StoreResult<u64> {
    let mut matched = 0;
    let mut offset = 0;
    for size in chunks(topics.len()) {
        let mut qb = raise_statement(&topics[offset..offset + size]);
        offset += size;
        matched += qb.build().execute(&mut *conn).await.map_err(db_error)?.rows_affected();
    }
    Ok(matched)
}

fn raise_statement(topics: &[(&str, (i64, i64))]) -> QueryBuilder<MySql> {
    let mut qb = QueryBuilder::<MySql>::new("UPDATE topics SET seq = GREATEST(seq, CASE name");
    for (name, (seq, _)) in topics {
        qb.push(" WHEN ").push_bind(name.to_string()).push(" THEN ").push_bind(*seq);
    }
    qb.push(" END), touched_at = GREATEST(touched_at, CASE name");
    for (name, (_, touched)) in topics {
        qb.push(" WHEN ").push_bind(name.to_string()).push(" THEN ").push_bind(*touched);
    }
    qb.push(" END) WHERE name IN (");
    let mut list = qb.separated(", ");
    for (name, _) in topics {
        list.push_bind(name.to_string());
    }
    qb.push(")");
    qb
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_are_few_known_sizes_and_add_up() {
        assert_eq!(chunks(0), Vec::<usize>::new());
        assert_eq!(chunks(1), vec![1]);
        assert_eq!(chunks(7), vec![7]);
        assert_eq!(chunks(16), vec![16]);
        assert_eq!(chunks(37), vec![32, 5]);
        assert_eq!(chunks(200), vec![128, 64, 8]);
        assert_eq!(chunks(600), vec![256, 256, 64, 16, 8]);
        let mut texts = std::collections::BTreeSet::new();
        for n in 0..1000 {
            let sizes = chunks(n);
            assert_eq!(sizes.iter().sum::<usize>(), n);
            assert!(sizes.iter().all(|s| (*s <= EXACT_CHUNK || s.is_power_of_two()) && *s <= MAX_CHUNK));
            assert!(sizes.len() <= n / MAX_CHUNK + 5, "{n}: {sizes:?}");
            texts.extend(sizes);
        }
        // Per table, well inside sqlx's statement cache of 100.
        assert_eq!(texts.len(), 20);
    }

    #[test]
    fn statements_for_one_size_share_one_text() {
        let a = raise_statement(&[("grpA", (1, 2)), ("grpB", (3, 4))]).into_string();
        let b = raise_statement(&[("grpC", (5, 6)), ("grpD", (7, 8))]).into_string();
        assert_eq!(a, b);
        assert_eq!(
            lock_statement(&["x", "y"]).into_string(),
            "SELECT name FROM topics WHERE name IN (?, ?) FOR UPDATE"
        );
    }
}
