//! Credentials: argon2 password hashes (computed in a bounded pool), the basic-scheme secret, and HMAC-signed
//! login tokens that expire and carry the user's auth version, so that a password change revokes every older token.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString, rand_core::OsRng};
use argon2::{Algorithm, Argon2, Params, Version};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use palaver_core::{TenantId, UnixMillis, UserId};
use sha2::Sha256;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::{OnceCell, Semaphore};

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

/// Splits a basic-scheme secret, standard base64 of `login:password`. The login is normalised as every store
/// keys it ([`palaver_core::normalize_login`]: NFKC, then lower case), so look-alike spellings meet.
/// The UTF-8 text of a standard padded base64 secret (`reset` and `code` secrets carry `a:b:c`).
pub fn decode_secret(secret: &str) -> Option<String> {
    String::from_utf8(STANDARD.decode(secret.trim()).ok()?).ok()
}

pub fn parse_basic_secret(secret: &str) -> Option<(String, String)> {
    let raw = STANDARD.decode(secret.trim()).ok()?;
    let text = String::from_utf8(raw).ok()?;
    let (login, password) = text.split_once(':')?;
    Some((palaver_core::normalize_login(login), password.to_owned()))
}

/// Why the hash pool could not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HashError {
    #[error("password hashing failed: {0}")]
    Hash(String),
    #[error("password hashing task failed: {0}")]
    Task(String),
}

/// Argon2 work is memory-hard on purpose (19 MiB per hash by default), so it runs on blocking threads under a
/// semaphore sized to the cores: 48 parallel sign-ups take `permits × memory_kib` of memory, not 48 × that, and
/// the rest wait their turn. Cheap to clone.
#[derive(Clone)]
pub struct HashPool {
    permits: Arc<Semaphore>,
    size: usize,
    cost: HashCost,
    /// A hash of a random password with the configured cost: logins that do not exist are verified against it,
    /// so that they cost the same work as a wrong password and the response time does not tell them apart.
    dummy: Arc<OnceCell<String>>,
    verified: Arc<AtomicU64>,
}

impl std::fmt::Debug for HashPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HashPool").field("size", &self.size).field("cost", &self.cost).finish_non_exhaustive()
    }
}

impl HashPool {
    /// A pool running at most `concurrency` hashes at once; 0 means one per core.
    pub fn new(concurrency: usize, cost: HashCost) -> Self {
        let size = match concurrency {
            0 => std::thread::available_parallelism().map_or(1, usize::from),
            n => n,
        };
        HashPool {
            permits: Arc::new(Semaphore::new(size)),
            size,
            cost,
            dummy: Arc::new(OnceCell::new()),
            verified: Arc::new(AtomicU64::new(0)),
        }
    }

    /// How many hashes may run at once.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Password verifications done so far (real and dummy).
    pub fn verifications(&self) -> u64 {
        self.verified.load(Ordering::Relaxed)
    }

    /// Runs `work` on a blocking thread once a permit is free. The permit travels with the work, so a caller
    /// that goes away (a closed connection) does not free its slot while the hash still runs.
    pub async fn run<T: Send + 'static>(&self, work: impl FnOnce() -> T + Send + 'static) -> Result<T, HashError> {
        let permit = self.permits.clone().acquire_owned().await.map_err(|e| HashError::Task(e.to_string()))?;
        tokio::task::spawn_blocking(move || {
            let out = work();
            drop(permit);
            out
        })
        .await
        .map_err(|e| HashError::Task(e.to_string()))
    }

    /// Hashes a password with the pool's cost.
    pub async fn hash(&self, password: String) -> Result<String, HashError> {
        let cost = self.cost;
        self.run(move || hash_password(&password, cost)).await?.map_err(HashError::Hash)
    }

    /// Checks a password against a stored hash, or, for a login that does not exist (`None`), against the dummy
    /// hash, doing the same work and answering false.
    pub async fn verify(&self, password: String, stored: Option<String>) -> Result<bool, HashError> {
        let (phc, real) = match stored {
            Some(phc) => (phc, true),
            None => (self.dummy().await?.to_owned(), false),
        };
        let ok = self.run(move || verify_password(&password, &phc)).await?;
        self.verified.fetch_add(1, Ordering::Relaxed);
        Ok(ok && real)
    }

    /// Computes the dummy hash now, so that the first unknown login does not pay for it (and stand out).
    pub async fn warm(&self) {
        if let Err(e) = self.dummy().await {
            tracing::warn!(error = %e, "the dummy password hash could not be made");
        }
    }

    async fn dummy(&self) -> Result<&str, HashError> {
        self.dummy
            .get_or_try_init(|| async {
                let random: [u8; 16] = rand::random();
                self.hash(STANDARD.encode(random)).await
            })
            .await
            .map(String::as_str)
    }
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

    /// Sixteen hashes at once on a pool of two: never more than two run together (without the semaphore all
    /// sixteen would, spawn_blocking has hundreds of threads).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_pool_bounds_concurrent_hashing() {
        use std::sync::atomic::AtomicUsize;
        let pool = HashPool::new(2, CHEAP);
        assert_eq!(pool.size(), 2);
        let running = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let jobs: Vec<_> = (0..16)
            .map(|_| {
                let (pool, running, peak) = (pool.clone(), running.clone(), peak.clone());
                tokio::spawn(async move {
                    pool.run(move || {
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        peak.fetch_max(now, Ordering::SeqCst);
                        std::thread::sleep(std::time::Duration::from_millis(20));
                        running.fetch_sub(1, Ordering::SeqCst);
                    })
                    .await
                })
            })
            .collect();
        for j in jobs {
            j.await.unwrap().unwrap();
        }
        assert_eq!(peak.load(Ordering::SeqCst), 2, "exactly the pool's size ran at once");
        assert!(HashPool::new(0, CHEAP).size() >= 1, "0 means one per core");
    }

    #[tokio::test]
    async fn unknown_logins_cost_a_verification_and_never_match() {
        let pool = HashPool::new(1, CHEAP);
        let h = pool.hash("pw".into()).await.unwrap();
        assert!(pool.verify("pw".into(), Some(h)).await.unwrap());
        assert!(!pool.verify("pw".into(), None).await.unwrap());
        assert!(!pool.verify(String::new(), None).await.unwrap());
        assert_eq!(pool.verifications(), 3);
    }

    #[test]
    fn basic_secret_is_split_and_lowercased() {
        let s = STANDARD.encode("Alice:pa:ss");
        assert_eq!(parse_basic_secret(&s), Some(("alice".into(), "pa:ss".into())));
        // Fullwidth letters are the same login as their ASCII forms.
        let s = STANDARD.encode("\u{FF21}lice:pw");
        assert_eq!(parse_basic_secret(&s), Some(("alice".into(), "pw".into())));
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
