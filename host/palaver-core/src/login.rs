//! The one form of a login that every store keys credentials by, so that sign-up, login and password changes
//! meet on the same row whatever spelling the client sent.

use unicode_normalization::UnicodeNormalization;

/// NFKC, then lower case: `Ａｌｉｃｅ` (fullwidth), `ALICE` and `alice` are one login, and so are the composed and
/// decomposed forms of `é`. Compatibility normalisation folds the look-alikes that are the same letter in
/// another width or presentation form; look-alikes from other scripts (Cyrillic `а`) stay distinct logins.
/// The result is normalised again after lower-casing, since case mapping can leave a non-NFKC string.
pub fn normalize_login(login: &str) -> String {
    let folded: String = login.trim().nfkc().collect::<String>().to_lowercase();
    folded.nfkc().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_cases_and_compositions_meet() {
        assert_eq!(normalize_login("\u{FF21}\u{FF4C}ice"), "alice");
        assert_eq!(normalize_login(" ALICE "), "alice");
        assert_eq!(normalize_login("Jose\u{301}"), normalize_login("jos\u{e9}"));
        assert_eq!(normalize_login("\u{2160}"), "i", "roman numeral one is NFKC 'I'");
        assert_ne!(normalize_login("\u{430}lice"), "alice", "Cyrillic а is another letter");
    }
}
