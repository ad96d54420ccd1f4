//! The rows of the Admin side's two ledgers, as both SQL adapters select them, and how each becomes its domain
//! value: an `admin_commands` row (one per command id) and an `abuse_reports` row. Times are Unix milliseconds
//! whatever the backend stores; integers are read as `i64` from any signed integer column width.

use crate::columns::{CorruptRow, user_of};
use palaver_core::UnixMillis;
use palaver_core::ports::{CommandRecord, CommandStatus, Report, ReportTarget, Resolution};

/// An `admin_commands` row: `command_id, type, status, result, attempts, node, created_at, updated_at`.
pub type CommandColumns = (String, String, String, Option<String>, i64, String, UnixMillis, UnixMillis);

/// The command record an `admin_commands` row holds.
pub fn command_of(row: CommandColumns) -> Result<CommandRecord, CorruptRow> {
    let (command_id, kind, status, result, attempts, node, created, updated) = row;
    let status = CommandStatus::parse(&status)
        .ok_or_else(|| CorruptRow::Value { column: "admin_commands.status", value: status.clone() })?;
    let result = result
        .map(|text| serde_json::from_str(&text).map_err(|source| CorruptRow::Json { column: "result", source }))
        .transpose()?;
    // A negative count is no count a claim ever wrote; read as none rather than failing the ledger.
    let attempts = u32::try_from(attempts).unwrap_or(0);
    Ok(CommandRecord { command_id, kind, status, result, attempts, node, created, updated })
}

/// An `abuse_reports` row: `id, reporter_id, target_type, target, reason, note, resolution, resolve_note,
/// resolved_by, resolved_at, created_at`.
pub type ReportColumns = (
    i64,
    i64,
    String,
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<UnixMillis>,
    UnixMillis,
);

/// The report an `abuse_reports` row holds; a row with a resolution is resolved.
pub fn report_of(row: ReportColumns) -> Result<Report, CorruptRow> {
    let (id, reporter, target_type, target, reason, note, resolution, resolve_note, by, at, created) = row;
    let target_type = ReportTarget::parse(&target_type)
        .ok_or_else(|| CorruptRow::Value { column: "abuse_reports.target_type", value: target_type.clone() })?;
    let resolved = resolution.map(|resolution| Resolution {
        resolution,
        note: resolve_note,
        by: by.unwrap_or_default(),
        at: at.unwrap_or_default(),
    });
    Ok(Report { id, reporter: user_of(reporter), target_type, target, reason, note, resolved, created })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(status: &str, result: Option<&str>, attempts: i64) -> CommandColumns {
        ("c1".into(), "user.ban".into(), status.into(), result.map(str::to_owned), attempts, "n1".into(), 5, 6)
    }

    #[test]
    fn a_command_row_decodes_with_its_result() {
        let r = command_of(command("succeeded", Some(r#"{"ok":true}"#), 2)).unwrap();
        assert_eq!((r.status, r.attempts, r.created, r.updated), (CommandStatus::Succeeded, 2, 5, 6));
        assert_eq!(r.result, Some(serde_json::json!({ "ok": true })));
    }

    #[test]
    fn a_command_row_with_an_unknown_status_or_bad_result_is_corrupt() {
        assert!(matches!(command_of(command("maybe", None, 0)), Err(CorruptRow::Value { .. })));
        assert!(matches!(command_of(command("failed", Some("{"), 0)), Err(CorruptRow::Json { .. })));
    }

    fn report(target_type: &str, resolution: Option<&str>) -> ReportColumns {
        let resolved = resolution.map(|_| ("spam".to_owned(), "admin".to_owned(), 9));
        (
            7,
            42,
            target_type.into(),
            "usr1".into(),
            "abuse".into(),
            None,
            resolution.map(str::to_owned),
            resolved.as_ref().map(|r| r.0.clone()),
            resolved.as_ref().map(|r| r.1.clone()),
            resolved.map(|r| r.2),
            3,
        )
    }

    #[test]
    fn a_report_row_decodes_open_or_resolved() {
        let open = report_of(report("user", None)).unwrap();
        assert_eq!((open.id, open.reporter, open.target_type), (7, user_of(42), ReportTarget::User));
        assert!(open.resolved.is_none());
        let done = report_of(report("message", Some("removed"))).unwrap().resolved.unwrap();
        assert_eq!((done.resolution.as_str(), done.by.as_str(), done.at), ("removed", "admin", 9));
    }

    #[test]
    fn a_report_row_with_an_unknown_target_type_is_corrupt() {
        assert!(matches!(report_of(report("planet", None)), Err(CorruptRow::Value { .. })));
    }
}
