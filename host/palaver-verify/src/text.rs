//! What a code message says. English only: the client's language (`CodeMessage::lang`) is passed on to the SMS
//! webhook, which may word its own text, but no translations are kept here.

use palaver_core::ports::CodePurpose;

/// The email's subject.
pub fn subject(purpose: CodePurpose) -> &'static str {
    match purpose {
        CodePurpose::Confirm => "Your confirmation code",
        CodePurpose::Reset => "Your password reset code",
    }
}

/// The plain-text body of the email: the code on a line of its own, how long it is valid, and what to do if
/// the reader did not ask for it.
pub(crate) fn email_body(purpose: CodePurpose, code: &str, valid_minutes: u64) -> String {
    let (what, ignore) = match purpose {
        CodePurpose::Confirm => {
            ("Your confirmation code is:", "If you did not ask for it, you can ignore this message.")
        }
        CodePurpose::Reset => (
            "Your password reset code is:",
            "If you did not ask to reset your password, you can ignore this message: your password stays as it is.",
        ),
    };
    format!("{what}\n\n{code}\n\nIt is valid for {}. Do not share it with anyone.\n{ignore}\n", minutes(valid_minutes))
}

/// The short text of an SMS, e.g. `Your confirmation code: 123456 (valid for 10 minutes).`
pub fn code_text(purpose: CodePurpose, code: &str, valid_minutes: u64) -> String {
    let what = match purpose {
        CodePurpose::Confirm => "Your confirmation code",
        CodePurpose::Reset => "Your password reset code",
    };
    format!("{what}: {code} (valid for {}).", minutes(valid_minutes))
}

fn minutes(n: u64) -> String {
    if n == 1 { "1 minute".to_owned() } else { format!("{n} minutes") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_hold_the_code_and_the_minutes() {
        let body = email_body(CodePurpose::Confirm, "123456", 10);
        assert!(body.contains("\n123456\n"), "{body}");
        assert!(body.contains("valid for 10 minutes"), "{body}");
        assert!(email_body(CodePurpose::Reset, "9", 1).contains("valid for 1 minute."));
        assert_eq!(code_text(CodePurpose::Reset, "42", 5), "Your password reset code: 42 (valid for 5 minutes).");
        assert_eq!(subject(CodePurpose::Confirm), "Your confirmation code");
    }
}
