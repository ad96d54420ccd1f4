//! The topic port over a tenant database: the `topics` and `topic_tags` tables, and whole-topic deletion.

use crate::MysqlStore;
use crate::codec::{limit_col, tags_col, user_col};
use crate::error::db_error;
use crate::table::Table;
use crate::users::json_tags;
use palaver_core::ports::TopicStore;
use palaver_core::{StoreError, StoreResult, TenantId, Topic, TopicUpdate};
use palaver_store_sql::rows::TopicRow;
use sqlx::MySqlConnection;

/// The columns of a [`TopicRow`], as a literal so that `concat!` can splice it into static SQL.
macro_rules! topic_columns {
    () => {
        "p.name, p.kind, p.created_at, p.updated_at, p.touched_at, p.state, p.owner, p.defacs_auth, p.defacs_anon, \
         p.public, p.trusted, p.tags, p.seq, p.del_id"
    };
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
        palaver_store_sql::bind_topic!(
            sqlx::query(
                "INSERT INTO topics (name, kind, created_at, updated_at, touched_at, state, owner, defacs_auth, \
                 defacs_anon, public, trusted, tags, seq, del_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            ),
            topic
        )
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
        let mut tx = db.pool.begin().await.map_err(db_error)?;
        let done = palaver_store_sql::bind_profile_change!(
            sqlx::query(
                "UPDATE topics SET updated_at = ?, \
                 public = IF(?, ?, public), trusted = IF(?, ?, trusted), tags = COALESCE(?, tags), \
                 defacs_auth = COALESCE(?, defacs_auth), defacs_anon = COALESCE(?, defacs_anon), \
                 owner = COALESCE(?, owner) WHERE name = ?",
            ),
            update
        )
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
