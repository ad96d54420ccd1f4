//! The topic port over SQLite: the `topics` and `topic_tags` tables, and whole-topic deletion.

use crate::SqliteStore;
use crate::codec::{limit_col, tags_col, tenant, user_col};
use crate::error::db_error;
use crate::messages::Table;
use palaver_core::ports::TopicStore;
use palaver_core::{StoreError, StoreResult, TenantId, Topic, TopicUpdate};
use palaver_store_sql::rows::TopicRow;
use sqlx::{Sqlite, Transaction};

/// The columns of a [`TopicRow`], as a literal so that `concat!` can splice it into static SQL.
macro_rules! topic_columns {
    () => {
        "name, kind, created_at, updated_at, touched_at, state, owner, defacs_auth, defacs_anon, public, trusted, \
         tags, seq, del_id"
    };
}

/// Replaces the search rows of a topic's tags.
async fn write_tags(tx: &mut Transaction<'static, Sqlite>, t: i64, topic: &str, tags: &[String]) -> StoreResult<()> {
    sqlx::query("DELETE FROM topic_tags WHERE tenant_id = ? AND topic = ?")
        .bind(t)
        .bind(topic)
        .execute(&mut **tx)
        .await
        .map_err(db_error)?;
    sqlx::query("INSERT OR IGNORE INTO topic_tags (tenant_id, topic, tag) SELECT ?, ?, value FROM json_each(?)")
        .bind(t)
        .bind(topic)
        .bind(tags_col(tags))
        .execute(&mut **tx)
        .await
        .map_err(db_error)?;
    Ok(())
}

#[async_trait::async_trait]
impl TopicStore for SqliteStore {
    #[tracing::instrument(name = "palaver.store.create_topic", skip_all, fields(tenant = %tenant_id))]
    async fn create_topic(&self, tenant_id: TenantId, topic: &Topic) -> StoreResult<()> {
        let t = tenant(tenant_id);
        let mut tx = self.begin_write().await?;
        palaver_store_sql::bind_topic!(
    sqlx::query(
                "INSERT INTO topics (tenant_id, name, kind, created_at, updated_at, touched_at, state, owner, defacs_auth, \
                 defacs_anon, public, trusted, tags, seq, del_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(t),
            topic
        )
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        write_tags(&mut tx, t, &topic.name, &topic.tags).await?;
        tx.commit().await.map_err(db_error)
    }

    #[tracing::instrument(name = "palaver.store.get_topic", skip_all, fields(tenant = %tenant_id))]
    async fn get_topic(&self, tenant_id: TenantId, name: &str) -> StoreResult<Option<Topic>> {
        let sql = concat!("SELECT ", topic_columns!(), " FROM topics WHERE tenant_id = ? AND name = ?");
        let row: Option<TopicRow> = sqlx::query_as(sql)
            .bind(tenant(tenant_id))
            .bind(name)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_error)?;
        Ok(row.map(Topic::try_from).transpose()?)
    }

    #[tracing::instrument(name = "palaver.store.update_topic", skip_all, fields(tenant = %tenant_id))]
    async fn update_topic(&self, tenant_id: TenantId, name: &str, update: &TopicUpdate) -> StoreResult<()> {
        let t = tenant(tenant_id);
        let mut tx = self.begin_write().await?;
        let done = palaver_store_sql::bind_profile_change!(
            sqlx::query(
                "UPDATE topics SET updated_at = ?3, \
                 public = CASE WHEN ?4 THEN ?5 ELSE public END, \
                 trusted = CASE WHEN ?6 THEN ?7 ELSE trusted END, \
                 tags = COALESCE(?8, tags), \
                 defacs_auth = COALESCE(?9, defacs_auth), defacs_anon = COALESCE(?10, defacs_anon), \
                 owner = COALESCE(?11, owner) \
                 WHERE tenant_id = ?1 AND name = ?2",
            )
            .bind(t)
            .bind(name),
            update
        )
        .bind(update.owner.map(user_col))
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        if let Some(tags) = &update.tags {
            write_tags(&mut tx, t, name, tags).await?;
        }
        tx.commit().await.map_err(db_error)
    }

    #[tracing::instrument(name = "palaver.store.delete_topic", skip_all, fields(tenant = %tenant_id))]
    async fn delete_topic(&self, tenant_id: TenantId, name: &str) -> StoreResult<()> {
        let t = tenant(tenant_id);
        let mut tx = self.begin_write().await?;
        let done = sqlx::query("DELETE FROM topics WHERE tenant_id = ? AND name = ?")
            .bind(t)
            .bind(name)
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        let dependents = [
            "DELETE FROM topic_tags WHERE tenant_id = ? AND topic = ?",
            "DELETE FROM subscriptions WHERE tenant_id = ? AND topic = ?",
            "DELETE FROM dellog WHERE tenant_id = ? AND topic = ?",
            Table::of(name).delete_topic_sql(),
        ];
        for sql in dependents {
            sqlx::query(sql).bind(t).bind(name).execute(&mut *tx).await.map_err(db_error)?;
        }
        tx.commit().await.map_err(db_error)
    }

    #[tracing::instrument(name = "palaver.store.find_topics_by_tags", skip_all, fields(tenant = %tenant_id))]
    async fn find_topics_by_tags(&self, tenant_id: TenantId, tags: &[String], limit: usize) -> StoreResult<Vec<Topic>> {
        let sql = concat!(
            "SELECT ",
            topic_columns!(),
            " FROM topics p WHERE p.tenant_id = ?1 AND p.kind = 'grp' AND p.state = 'active' AND EXISTS \
             (SELECT 1 FROM topic_tags g WHERE g.tenant_id = ?1 AND g.topic = p.name \
              AND g.tag IN (SELECT value FROM json_each(?2))) \
             ORDER BY p.name LIMIT ?3"
        );
        let rows: Vec<TopicRow> = sqlx::query_as(sql)
            .bind(tenant(tenant_id))
            .bind(tags_col(tags))
            .bind(limit_col(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(db_error)?;
        Ok(rows.into_iter().map(Topic::try_from).collect::<Result<_, _>>()?)
    }
}
