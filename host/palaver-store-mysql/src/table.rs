//! The two history tables (`im_group_messages` for groups, `im_messages` for P2P) and every statement that reads
//! or writes them, as static strings with the table name spliced in at compile time.

use crate::codec::{datetime_to_millis, millis_to_datetime};

/// Which history table a topic's messages live in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Table {
    /// `im_group_messages`: group topics and anything else that is not P2P.
    Group,
    /// `im_messages`: P2P topics.
    P2p,
}

/// Splices the table name between two SQL literals at compile time, so every statement stays a static string
/// and no runtime formatting can ever reach the SQL text.
macro_rules! per_table {
    ($table:expr, $before:expr, $after:expr) => {
        match $table {
            Table::Group => concat!($before, "im_group_messages", $after),
            Table::P2p => concat!($before, "im_messages", $after),
        }
    };
}

/// The columns an insert writes, in bind order; `status` is always `normal` for a new message.
macro_rules! insert_columns {
    () => {
        " (topic, group_id, seqid, from_user, client_msg_id, msg_type, status, content, head, mentioned_user_ids, \
         mention_all, reply_seqid, root_seqid, file_count, content_size, has_risk, audit_status, risk_flags, \
         created_at, updated_at) VALUES "
    };
}

/// The columns a read selects, decoded by `messages::MessageRow`.
macro_rules! message_columns {
    () => {
        concat!(
            "SELECT m.seqid, ",
            datetime_to_millis!("m.created_at"),
            " AS created_at, m.from_user, m.head, m.content, m.client_msg_id, m.audit_status, m.risk_flags FROM "
        )
    };
}

impl Table {
    /// The table of the stored topic `name`.
    pub(crate) fn of(name: &str) -> Table {
        if name.starts_with("p2p") { Table::P2p } else { Table::Group }
    }

    /// The start of a multi-row insert, up to `VALUES `; the batch writer appends one tuple per row.
    pub(crate) fn insert_prefix(self) -> &'static str {
        per_table!(self, "INSERT INTO ", insert_columns!())
    }

    /// A one-row insert with the same binds as a tuple of the multi-row form.
    pub(crate) fn insert_one_sql(self) -> &'static str {
        per_table!(
            self,
            "INSERT INTO ",
            concat!(
                insert_columns!(),
                "(?, ?, ?, ?, ?, ?, 'normal', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ",
                millis_to_datetime!(),
                ", ",
                millis_to_datetime!(),
                ")"
            )
        )
    }

    pub(crate) fn find_mid_sql(self) -> &'static str {
        per_table!(self, "SELECT seqid FROM ", " WHERE topic = ? AND from_user = ? AND client_msg_id = ?")
    }

    /// As [`Table::find_mid_sql`], as a locking read: inside a transaction it sees the latest committed row (a
    /// plain read would see the transaction's snapshot, which may predate the row that just collided).
    pub(crate) fn find_mid_locking_sql(self) -> &'static str {
        per_table!(
            self,
            "SELECT seqid FROM ",
            " WHERE topic = ? AND from_user = ? AND client_msg_id = ? LOCK IN SHARE MODE"
        )
    }

    /// Hard-deleted stubs keep their rows, so their seqs count: they must never be handed out again.
    pub(crate) fn max_seq_sql(self) -> &'static str {
        per_table!(self, "SELECT MAX(seqid) FROM ", " WHERE topic = ?")
    }

    pub(crate) fn delete_topic_sql(self) -> &'static str {
        per_table!(self, "DELETE FROM ", " WHERE topic = ?")
    }

    /// Drops the content (and what was derived from it) of a range, keeping the row as a stub so its seq and
    /// idempotency key stay taken. Binds: when, when, topic, low, hi.
    pub(crate) fn hard_delete_sql(self) -> &'static str {
        per_table!(
            self,
            "UPDATE ",
            concat!(
                " SET deleted_at = ",
                millis_to_datetime!(),
                ", updated_at = ",
                millis_to_datetime!(),
                ", content = NULL, head = NULL, mentioned_user_ids = NULL, version = version + 1, \
                 status = IF(? IS NULL, 'deleted', 'recalled'), recalled_by = ?, recalled_at = IF(? IS NULL, NULL, ",
                millis_to_datetime!(),
                ") WHERE topic = ? AND seqid >= ? AND seqid < ? AND deleted_at IS NULL"
            )
        )
    }

    /// Messages moderation has not passed are left out unless the reader sent them; so are hard-deleted stubs
    /// and the ranges the reader soft-deleted. Binds: topic, since, before, reader, topic, reader, limit.
    pub(crate) fn list_sql(self) -> &'static str {
        per_table!(
            self,
            message_columns!(),
            " m WHERE m.topic = ? AND m.deleted_at IS NULL AND m.seqid >= ? AND m.seqid < ? \
             AND (m.audit_status = 'pass' OR m.from_user = ?) \
             AND NOT EXISTS (SELECT 1 FROM dellog d WHERE d.topic = ? AND d.deleted_for = ? \
             AND d.low <= m.seqid AND m.seqid < d.hi) \
             ORDER BY m.seqid DESC LIMIT ?"
        )
    }

    /// One live message. Binds: topic, seq.
    pub(crate) fn get_sql(self) -> &'static str {
        per_table!(self, message_columns!(), " m WHERE m.topic = ? AND m.seqid = ? AND m.deleted_at IS NULL")
    }

    /// Hard-deleted stubs are skipped: with their content gone there is nothing left to review. `updated_at`
    /// never moves backwards. Binds: status, now, topic, seq.
    pub(crate) fn set_audit_sql(self) -> &'static str {
        per_table!(
            self,
            "UPDATE ",
            concat!(
                " SET audit_status = ?, updated_at = GREATEST(updated_at, ",
                millis_to_datetime!(),
                ") WHERE topic = ? AND seqid = ? AND deleted_at IS NULL"
            )
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topics_route_to_their_table() {
        assert_eq!(Table::of("p2pAAAAAAAAAAAAAAAAAAAAAA"), Table::P2p);
        assert_eq!(Table::of("grpX"), Table::Group);
        assert!(Table::P2p.insert_prefix().starts_with("INSERT INTO im_messages ("));
        let one = Table::Group.insert_one_sql();
        assert_eq!(one.matches('?').count(), 19, "17 plain binds and two times");
        assert!(Table::Group.list_sql().contains("FROM im_group_messages m WHERE"));
    }
}
