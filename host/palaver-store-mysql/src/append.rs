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

/// The fast path: raise every topic's seq and touched time, insert all rows with one statement per table, commit.
/// `Ok(false)` (after rolling back) when a topic is missing or a unique key collides: the caller then answers row
/// by row.
async fn all_at_once(conn: &mut MySqlConnection, rows: &[Row<'_>]) -> StoreResult<bool> {
    let topics = raises(rows.iter());
    let mut tx = sqlx::Connection::begin(&mut *conn).await.map_err(db_error)?;
    if raise_topics(&mut tx, &topics).await? < topics.len() as u64 {
        tx.rollback().await.map_err(db_error)?;
        return Ok(false);
    }
    for table in [Table::Group, Table::P2p] {
        let Some(mut qb) = multi_row_insert(table, rows) else { continue };
        // Batches vary in size, so each statement text is used once: caching it would only evict the static
        // statements from the connection's cache.
        match qb.build().persistent(false).execute(&mut *tx).await {
            Ok(_) => {}
            Err(err) if is_unique_violation(&err) => {
                tx.rollback().await.map_err(db_error)?;
                return Ok(false);
            }
            Err(err) => return Err(db_error(err)),
        }
    }
    tx.commit().await.map_err(db_error)?;
    Ok(true)
}

/// One insert of every row of `rows` that belongs in `table`, or `None` if there are none. Built outside the
/// async functions so that no borrowing iterator is held across an await.
fn multi_row_insert(table: Table, rows: &[Row<'_>]) -> Option<QueryBuilder<MySql>> {
    let mut qb: Option<QueryBuilder<MySql>> = None;
    for row in rows.iter().filter(|r| r.table == table) {
        match &mut qb {
            Some(qb) => {
                qb.push(", ");
                row.push(qb);
            }
            None => {
                let mut fresh = QueryBuilder::new(table.insert_prefix());
                row.push(&mut fresh);
                qb = Some(fresh);
            }
        }
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
    let topics = raises(stored.into_iter());
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

/// Locks the named topic rows and returns the names that exist.
async fn lock_topics(conn: &mut MySqlConnection, names: &[&str]) -> StoreResult<HashSet<String>> {
    let found: Vec<String> = if let [name] = names {
        sqlx::query_scalar("SELECT name FROM topics WHERE name = ? FOR UPDATE")
            .bind(*name)
            .fetch_all(&mut *conn)
            .await
            .map_err(db_error)?
    } else {
        let mut qb = QueryBuilder::<MySql>::new("SELECT name FROM topics WHERE name IN (");
        push_list(&mut qb, names.iter().copied());
        qb.push(") FOR UPDATE");
        qb.build_query_scalar().persistent(false).fetch_all(&mut *conn).await.map_err(db_error)?
    };
    Ok(found.into_iter().collect())
}

/// Raises each topic's seq and touched time to at least the given values, never lowering them, and returns how
/// many of the topics exist.
async fn raise_topics(conn: &mut MySqlConnection, topics: &BTreeMap<&str, (i64, i64)>) -> StoreResult<u64> {
    let done = if let Some((name, (seq, touched))) = topics.first_key_value().filter(|_| topics.len() == 1) {
        sqlx::query("UPDATE topics SET seq = GREATEST(seq, ?), touched_at = GREATEST(touched_at, ?) WHERE name = ?")
            .bind(*seq)
            .bind(*touched)
            .bind(*name)
            .execute(&mut *conn)
            .await
    } else {
        let mut qb = QueryBuilder::<MySql>::new("UPDATE topics SET seq = GREATEST(seq, CASE name");
        for (name, (seq, _)) in topics {
            qb.push(" WHEN ").push_bind(*name).push(" THEN ").push_bind(*seq);
        }
        qb.push(" END), touched_at = GREATEST(touched_at, CASE name");
        for (name, (_, touched)) in topics {
            qb.push(" WHEN ").push_bind(*name).push(" THEN ").push_bind(*touched);
        }
        qb.push(" END) WHERE name IN (");
        push_list(&mut qb, topics.keys().copied());
        qb.push(")");
        qb.build().persistent(false).execute(&mut *conn).await
    };
    // The connection reports rows matched, not rows changed (CLIENT_FOUND_ROWS), so an unchanged topic counts.
    Ok(done.map_err(db_error)?.rows_affected())
}

/// Pushes `?, ?, …` bound to `items`.
fn push_list<'a>(qb: &mut QueryBuilder<MySql>, items: impl IntoIterator<Item = &'a str>) {
    let mut list = qb.separated(", ");
    for item in items {
        list.push_bind(item.to_owned());
    }
}
