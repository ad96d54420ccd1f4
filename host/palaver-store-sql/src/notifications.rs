//! The notification table's shared parts beyond its row ([`NotificationColumns`]): the binds of a page of a
//! user's notices, how the page's rows become notices, and what a mark that changed no row means. Each adapter
//! writes its own statements, since a notice's liveness compares times in each backend's own column type.

use crate::columns::{NotificationColumns, notification_of};
use palaver_core::ports::Notification;
use palaver_core::{StoreError, StoreResult};

/// Binds a page of a user's notices after the adapter's own values (SQLite's `tenant_id`), in order: `user_id`,
/// whether only unread notices count, the time the notices must be alive at, the cursor (only ids below it; none
/// for the newest) and the limit.
#[macro_export]
macro_rules! bind_notification_page {
    ($query:expr, $user:expr, $unread_only:expr, $now:expr, $cursor:expr, $limit:expr) => {
        $query
            .bind($crate::columns::user_col($user))
            .bind($unread_only)
            .bind($now)
            .bind($cursor.unwrap_or(i64::MAX))
            .bind($crate::columns::limit_col($limit))
    };
}

/// The notices a page's rows hold; one corrupt row fails the page.
pub fn notifications_of(rows: Vec<NotificationColumns>) -> StoreResult<Vec<Notification>> {
    Ok(rows.into_iter().map(notification_of).collect::<Result<_, _>>()?)
}

/// What marking a notice read means when the guarded update changed no row, from whether the notice is still
/// one of the user's live notices (looked up afterwards): read already (`false`) if it is, `NotFound` if not.
pub fn already_read(live: bool) -> StoreResult<bool> {
    if live { Ok(false) } else { Err(StoreError::NotFound) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_that_changed_nothing_is_read_already_or_not_found() {
        assert!(!already_read(true).unwrap());
        assert!(matches!(already_read(false), Err(StoreError::NotFound)));
    }

    #[test]
    fn a_page_of_rows_becomes_notices_or_fails_whole() {
        let row = |id, content: &str| (id, 7, "k".to_owned(), content.to_owned(), None, None, None, None, 5);
        let page = notifications_of(vec![row(2, "{\"a\":1}"), row(1, "null")]).unwrap();
        assert_eq!(page.iter().map(|n| n.id).collect::<Vec<_>>(), [2, 1]);
        assert!(notifications_of(vec![row(3, "{")]).is_err());
    }
}
