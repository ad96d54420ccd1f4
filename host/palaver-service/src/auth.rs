//! Credentials: argon2 password hashes, the basic-scheme secret, and HMAC-signed login tokens that expire and
//! carry the user's auth version, so that a password change revokes every older token.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString, rand_core::OsRng};
use argon2::{Algorithm, Argon2, Params, Version};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use palaver_core::{TenantId, UnixMillis, UserId};
use sha2::Sha256;

/// Argon2id cost settings. The defaults are OWASP's minimum (19 MiB, 2 passes), which costs tens of
/// milliseconds per hash here; tests lower them.
#[derive(Debug, Clone, Copy)]
pub struct HashCost {
    pub memory_kib: u32,
    pub iterations: u32,
}

impl Default for HashCost {
    fn default() -> Self {
        HashCost { memory_kib: 19_456, iterations: 2 }
    }
}

/// Hashes a password into a PHC string (`$argon2id$…`).
pub fn hash_password(password: &str, cost: HashCost) -> Result<String, String> {
    let params = Params::new(cost.memory_kib, cost.iterations, 1, None).map_err(|e| e.to_string())?;
    let salt = SaltString::generate(&mut OsRng);
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| e.to_string())
}

/// Checks a password against a stored hash: argon2 PHC strings, or bcrypt (`$2a$`, `$2b$`, `$2y$`) as Tinode
/// stores them, so accounts imported from Tinode keep their passwords. Any malformed hash is a mismatch.
pub fn verify_password(password: &str, phc: &str) -> bool {
    if phc.starts_with("$2") {
        return bcrypt::verify(password, phc).unwrap_or(false);
    }
    match PasswordHash::new(phc) {
        Ok(hash) => Argon2::default().verify_password(password.as_bytes(), &hash).is_ok(),
        Err(_) => false,
    }
}

/// Splits a basic-scheme secret, standard base64 of `login:password`. The login is lower-cased.
pub fn parse_basic_secret(secret: &str) -> Option<(String, String)> {
    let raw = STANDARD.decode(secret.trim()).ok()?;
    let text = String::from_utf8(raw).ok()?;
    let (login, password) = text.split_once(':')?;
    Some((login.to_lowercase(), password.to_owned()))
}

/// What a valid token proves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenClaims {
    pub tenant: TenantId,
    pub user: UserId,
    pub expires: UnixMillis,
    pub auth_version: i64,
}

/// Why a token was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("token is malformed")]
    Malformed,
    #[error("token signature is invalid")]
    BadSignature,
    #[error("token has expired")]
    Expired,
}

const TOKEN_VERSION: u8 = 1;
const TOKEN_BODY: usize = 1 + 8 + 8 + 8 + 8;
const TOKEN_LEN: usize = TOKEN_BODY + 32;

/// Mints and checks login tokens: `version | tenant | user | expires | auth_version | HMAC-SHA256`, base64.
#[derive(Clone)]
pub struct TokenSigner {
    key: Vec<u8>,
}

impl std::fmt::Debug for TokenSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenSigner(<key>)")
    }
}

impl TokenSigner {
    /// A signer with the given secret key (at least 32 bytes is advisable).
    pub fn new(key: impl Into<Vec<u8>>) -> Self {
        TokenSigner { key: key.into() }
    }

    fn mac(&self) -> Hmac<Sha256> {
        // HMAC accepts keys of any length, so this cannot fail.
        Hmac::<Sha256>::new_from_slice(&self.key).expect("HMAC takes any key length")
    }

    /// A token for these claims.
    pub fn mint(&self, claims: &TokenClaims) -> String {
        let mut buf = Vec::with_capacity(TOKEN_LEN);
        buf.push(TOKEN_VERSION);
        buf.extend_from_slice(&claims.tenant.0.to_le_bytes());
        buf.extend_from_slice(&claims.user.0.to_le_bytes());
        buf.extend_from_slice(&claims.expires.to_le_bytes());
        buf.extend_from_slice(&claims.auth_version.to_le_bytes());
        let mut mac = self.mac();
        mac.update(&buf);
        buf.extend_from_slice(&mac.finalize().into_bytes());
        STANDARD.encode(buf)
    }

    /// The claims of a genuine, unexpired token. The caller still checks tenant, user state and auth version.
    pub fn verify(&self, token: &str, now: UnixMillis) -> Result<TokenClaims, TokenError> {
        let raw = STANDARD.decode(token.trim()).map_err(|_| TokenError::Malformed)?;
        if raw.len() != TOKEN_LEN || raw[0] != TOKEN_VERSION {
            return Err(TokenError::Malformed);
        }
        let (body, sig) = raw.split_at(TOKEN_BODY);
        let mut mac = self.mac();
        mac.update(body);
        mac.verify_slice(sig).map_err(|_| TokenError::BadSignature)?;
        let word = |i: usize| -> [u8; 8] { body[1 + i * 8..9 + i * 8].try_into().expect("slice of 8") };
        let claims = TokenClaims {
            tenant: TenantId(u64::from_le_bytes(word(0))),
            user: UserId(u64::from_le_bytes(word(1))),
            expires: i64::from_le_bytes(word(2)),
            auth_version: i64::from_le_bytes(word(3)),
        };
        if claims.expires <= now {
            return Err(TokenError::Expired);
        }
        Ok(claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHEAP: HashCost = HashCost { memory_kib: 64, iterations: 1 };

    #[test]
    fn passwords_verify_only_with_the_right_secret() {
        let h = hash_password("s3cret", CHEAP).unwrap();
        assert!(h.starts_with("$argon2id$"));
        assert!(verify_password("s3cret", &h));
        assert!(!verify_password("s3cret!", &h));
        assert!(!verify_password("s3cret", "not a hash"));
    }

    #[test]
    fn bcrypt_hashes_imported_from_tinode_verify() {
        let h = bcrypt::hash("tinode-pass", 4).unwrap();
        assert!(h.starts_with("$2"));
        assert!(verify_password("tinode-pass", &h));
        assert!(!verify_password("other", &h));
        assert!(!verify_password("x", "$2b$04$garbage"));
    }

    #[test]
    fn basic_secret_is_split_and_lowercased() {
        let s = STANDARD.encode("Alice:pa:ss");
        assert_eq!(parse_basic_secret(&s), Some(("alice".into(), "pa:ss".into())));
        assert_eq!(parse_basic_secret("%%%"), None);
        assert_eq!(parse_basic_secret(&STANDARD.encode("nocolon")), None);
    }

    #[test]
    fn tokens_round_trip_and_fail_when_tampered_or_expired() {
        let signer = TokenSigner::new(b"0123456789abcdef0123456789abcdef".to_vec());
        let claims = TokenClaims { tenant: TenantId(1), user: UserId(77), expires: 10_000, auth_version: 3 };
        let tok = signer.mint(&claims);
        assert_eq!(signer.verify(&tok, 5_000), Ok(claims));
        assert_eq!(signer.verify(&tok, 10_000), Err(TokenError::Expired));
        let other = TokenSigner::new(b"another key".to_vec());
        assert_eq!(other.verify(&tok, 5_000), Err(TokenError::BadSignature));
        let mut raw = STANDARD.decode(&tok).unwrap();
        raw[10] ^= 1;
        assert_eq!(signer.verify(&STANDARD.encode(raw), 5_000), Err(TokenError::BadSignature));
        assert_eq!(signer.verify("abc", 5_000), Err(TokenError::Malformed));
    }
}
