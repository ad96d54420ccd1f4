//! The topic port over a tenant database: the `topics` and `topic_tags` tables, and whole-topic deletion.

use crate::MysqlStore;
use crate::codec::{
    defacs_of, json_change, json_col, json_of, kind_col, kind_of, limit_col, mode_col, state_col, state_of, tags_col,
    tags_of, user_col, user_of,
};
use crate::error::{CorruptRow, db_error};
use crate::table::Table;
use crate::users::json_tags;
use palaver_core::ports::TopicStore;
use palaver_core::{StoreError, StoreResult, TenantId, Topic, TopicUpdate};
use sqlx::MySqlConnection;

/// The columns of a [`TopicRow`], as a literal so that `concat!` can splice it into static SQL.
macro_rules! topic_columns {
    () => {
        "p.name, p.kind, p.created_at, p.updated_at, p.touched_at, p.state, p.owner, p.defacs_auth, p.defacs_anon, \
         p.public, p.trusted, p.tags, p.seq, p.del_id"
    };
}

/// A `topics` row as selected by `topic_columns!`.
#[derive(sqlx::FromRow)]
struct TopicRow {
    name: String,
    kind: String,
    created_at: i64,
    updated_at: i64,
    touched_at: i64,
    state: String,
    owner: Option<i64>,
    defacs_auth: i16,
    defacs_anon: i16,
    public: Option<String>,
    trusted: Option<String>,
    tags: String,
    seq: i64,
    del_id: i64,
}

impl TryFrom<TopicRow> for Topic {
    type Error = CorruptRow;

    fn try_from(r: TopicRow) -> Result<Self, CorruptRow> {
        Ok(Topic {
            name: r.name,
            kind: kind_of(&r.kind)?,
            created: r.created_at,
            updated: r.updated_at,
            touched: r.touched_at,
            state: state_of(&r.state)?,
            owner: r.owner.map(user_of),
            defacs: defacs_of(r.defacs_auth, r.defacs_anon)?,
            public: json_of("public", r.public)?,
            trusted: json_of("trusted", r.trusted)?,
            tags: tags_of(&r.tags)?,
            seq: r.seq,
            del_id: r.del_id,
        })
    }
}

/// Replaces the search rows of a topic's tags.
async fn write_tags(conn: &mut MySqlConnection, topic: &str, tags: &[String]) -> StoreResult<()> {
    sqlx::query("DELETE FROM topic_tags WHERE topic = ?").bind(topic).execute(&mut *conn).await.map_err(db_error)?;
    sqlx::query(concat!("INSERT IGNORE INTO topic_tags (topic, tag) SELECT ?, t.tag FROM (", json_tags!(), ") t"))
        .bind(topic)
        .bind(tags_col(tags))
        .execute(&mut *conn)
        .await
        .map_err(db_error)?;
    Ok(())
}

#[async_trait::async_trait]
impl TopicStore for MysqlStore {
    #[tracing::instrument(name = "palaver.store.create_topic", skip_all, fields(tenant = %tenant))]
    async fn create_topic(&self, tenant: TenantId, topic: &Topic) -> StoreResult<()> {
        let db = self.db(tenant).await?;
        let mut tx = db.pool.begin().await.map_err(db_error)?;
        sqlx::query(
            "INSERT INTO topics (name, kind, created_at, updated_at, touched_at, state, owner, defacs_auth, \
             defacs_anon, public, trusted, tags, seq, del_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&topic.name)
        .bind(kind_col(topic.kind))
        .bind(topic.created)
        .bind(topic.updated)
        .bind(topic.touched)
        .bind(state_col(topic.state))
        .bind(topic.owner.map(user_col))
        .bind(mode_col(topic.defacs.auth))
        .bind(mode_col(topic.defacs.anon))
        .bind(json_col(topic.public.as_ref()))
        .bind(json_col(topic.trusted.as_ref()))
        .bind(tags_col(&topic.tags))
        .bind(topic.seq)
        .bind(topic.del_id)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        write_tags(&mut tx, &topic.name, &topic.tags).await?;
        tx.commit().await.map_err(db_error)
    }

    #[tracing::instrument(name = "palaver.store.get_topic", skip_all, fields(tenant = %tenant))]
    async fn get_topic(&self, tenant: TenantId, name: &str) -> StoreResult<Option<Topic>> {
        let db = self.db(tenant).await?;
        let sql = concat!("SELECT ", topic_columns!(), " FROM topics p WHERE p.name = ?");
        let row: Option<TopicRow> = sqlx::query_as(sql).bind(name).fetch_optional(&db.pool).await.map_err(db_error)?;
        Ok(row.map(Topic::try_from).transpose()?)
    }

    #[tracing::instrument(name = "palaver.store.update_topic", skip_all, fields(tenant = %tenant))]
    async fn update_topic(&self, tenant: TenantId, name: &str, update: &TopicUpdate) -> StoreResult<()> {
        let db = self.db(tenant).await?;
        let (set_public, public) = json_change(update.public.as_ref());
        let (set_trusted, trusted) = json_change(update.trusted.as_ref());
        let mut tx = db.pool.begin().await.map_err(db_error)?;
        let done = sqlx::query(
            "UPDATE topics SET updated_at = ?, \
             public = IF(?, ?, public), trusted = IF(?, ?, trusted), tags = COALESCE(?, tags), \
             defacs_auth = COALESCE(?, defacs_auth), defacs_anon = COALESCE(?, defacs_anon), \
             owner = COALESCE(?, owner) WHERE name = ?",
        )
        .bind(update.updated)
        .bind(set_public)
        .bind(public)
        .bind(set_trusted)
        .bind(trusted)
        .bind(update.tags.as_deref().map(tags_col))
        .bind(update.defacs.map(|d| mode_col(d.auth)))
        .bind(update.defacs.map(|d| mode_col(d.anon)))
        .bind(update.owner.map(user_col))
        .bind(name)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        if let Some(tags) = &update.tags {
            write_tags(&mut tx, name, tags).await?;
        }
        tx.commit().await.map_err(db_error)
    }

    #[tracing::instrument(name = "palaver.store.delete_topic", skip_all, fields(tenant = %tenant))]
    async fn delete_topic(&self, tenant: TenantId, name: &str) -> StoreResult<()> {
        let db = self.db(tenant).await?;
        let mut tx = db.pool.begin().await.map_err(db_error)?;
        // Deleting the topic row first also locks it, so a concurrent append (which locks it too) either lands
        // before and is deleted with the rest, or finds the topic gone.
        let done =
            sqlx::query("DELETE FROM topics WHERE name = ?").bind(name).execute(&mut *tx).await.map_err(db_error)?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        let dependents = [
            "DELETE FROM topic_tags WHERE topic = ?",
            "DELETE FROM subscriptions WHERE topic = ?",
            "DELETE FROM dellog WHERE topic = ?",
            Table::of(name).delete_topic_sql(),
        ];
        for sql in dependents {
            sqlx::query(sql).bind(name).execute(&mut *tx).await.map_err(db_error)?;
        }
        tx.commit().await.map_err(db_error)
    }

    #[tracing::instrument(name = "palaver.store.find_topics_by_tags", skip_all, fields(tenant = %tenant))]
    async fn find_topics_by_tags(&self, tenant: TenantId, tags: &[String], limit: usize) -> StoreResult<Vec<Topic>> {
        let db = self.db(tenant).await?;
        let sql = concat!(
            "SELECT ",
            topic_columns!(),
            " FROM topics p WHERE p.kind = 'grp' AND p.state = 'active' AND p.name IN \
             (SELECT g.topic FROM topic_tags g WHERE g.tag IN (",
            json_tags!(),
            ")) ORDER BY p.name LIMIT ?"
        );
        let rows: Vec<TopicRow> = sqlx::query_as(sql)
            .bind(tags_col(tags))
            .bind(limit_col(limit))
            .fetch_all(&db.pool)
            .await
            .map_err(db_error)?;
        Ok(rows.into_iter().map(Topic::try_from).collect::<Result<_, _>>()?)
    }
}
