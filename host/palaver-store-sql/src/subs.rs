//! The subscription table's shared parts beyond its row ([`SubRow`](crate::rows::SubRow)): the changes a port call
//! writes to one active subscription, each one `UPDATE subscriptions SET … WHERE <the active subscription>`.

use palaver_core::{AccessMode, UnixMillis};
use serde_json::Value;

/// A change to one active subscription (one whose `deleted_at` is NULL).
#[derive(Debug, Clone, Copy)]
pub enum SubChange<'a> {
    /// New access modes.
    Mode { want: AccessMode, given: AccessMode, when: UnixMillis },
    /// New private data; `None` clears it.
    Private { private: Option<&'a Value>, when: UnixMillis },
    /// A soft deletion, setting `given` too when one is passed (a removal's mark).
    Delete { given: Option<AccessMode>, when: UnixMillis },
}

impl SubChange<'_> {
    /// The `SET` list of the change's `UPDATE`, whose values [`bind_sub_change!`](crate::bind_sub_change) binds.
    pub fn set_list(&self) -> &'static str {
        match self {
            SubChange::Mode { .. } => "want = ?, given = ?, updated_at = ?",
            SubChange::Private { .. } => "private = ?, updated_at = ?",
            SubChange::Delete { .. } => "deleted_at = ?, updated_at = ?, given = COALESCE(?, given)",
        }
    }
}

/// Binds the values of a [`SubChange::set_list`], in order (modes as `i64`).
#[macro_export]
macro_rules! bind_sub_change {
    ($query:expr, $change:expr) => {
        match $change {
            $crate::subs::SubChange::Mode { want, given, when } => {
                $query.bind(i64::from(want.0)).bind(i64::from(given.0)).bind(when)
            }
            $crate::subs::SubChange::Private { private, when } => {
                $query.bind($crate::columns::json_col(private)).bind(when)
            }
            $crate::subs::SubChange::Delete { given, when } => {
                $query.bind(when).bind(when).bind(given.map(|g| i64::from(g.0)))
            }
        }
    };
}
