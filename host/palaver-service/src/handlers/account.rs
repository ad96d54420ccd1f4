//! `{hi}`, `{acc}` and `{login}`: the handshake, sign-up, password changes and both login schemes.

use crate::auth;
use crate::error::{ServiceError, ServiceResult};
use crate::session::{Hello, Session, Transport};
use crate::throttle::LoginKey;
use crate::{now_millis, render};
use palaver_core::ports::{ControlScope, Identity, LoginContext};
use palaver_core::{DefaultAccess, PresenceMeta, RecordState, User, UserId, UserUpdate};
use palaver_proto::{Code, MsgAcc, MsgHi, MsgLogin, PROTOCOL_VERSION, Timestamp};
use serde_json::{Value, json};

/// Tinode's "clear this field" value: `{hi dev:"␡"}` deletes the device.
const DELETE_MARK: &str = "\u{2421}";

/// Parses `major.minor[.patch]` into a comparable pair.
fn version_pair(v: &str) -> Option<(u32, u32)> {
    let mut it = v.trim().split('.');
    Some((it.next()?.parse().ok()?, it.next()?.trim_end_matches(|c: char| !c.is_ascii_digit()).parse().ok()?))
}

impl Session {
    pub(crate) async fn on_hi(&mut self, m: MsgHi) -> ServiceResult<()> {
        let id = m.id.as_deref();
        if let Some(prev) = &self.hello {
            // A repeated hi may only change the device or language.
            if m.ver.as_deref().is_some_and(|v| v != prev.ver) {
                return Err(ServiceError::OutOfSequence);
            }
            if let Some(dev) = m.dev.filter(|d| !d.is_empty()) {
                self.change_device(dev, m.platf, m.lang).await?;
            }
            self.reply(id, None, Code::Ok, None).await;
            return Ok(());
        }
        let max_ua = self.svc.cfg.max_user_agent;
        if m.ua.as_ref().is_some_and(|ua| ua.len() > max_ua) {
            return Err(ServiceError::TooLarge(format!("hi.ua is at most {max_ua} bytes")));
        }
        let ver = m.ver.clone().unwrap_or_default();
        let min = version_pair(palaver_proto::MIN_CLIENT_VERSION).unwrap_or((0, 20));
        match version_pair(&ver) {
            Some(v) if v >= min => {}
            Some(_) => return Err(ServiceError::VersionNotSupported),
            None => return Err(ServiceError::Malformed("hi.ver is required".into())),
        }
        self.hello = Some(Hello { ver, ua: m.ua, dev: m.dev, platf: m.platf, lang: m.lang });
        let cfg = &self.svc.cfg;
        let mut params = json!({
            "ver": PROTOCOL_VERSION,
            "build": concat!("palaver:", env!("CARGO_PKG_VERSION")),
            "sid": self.sid(),
            "maxMessageSize": cfg.max_message_size,
            "maxSubscriberCount": cfg.max_subscriber_count,
            "minTagLength": cfg.min_tag_length,
            "maxTagLength": cfg.max_tag_length,
            "maxTagCount": cfg.max_tag_count,
            "maxFileUploadSize": if cfg.files.enabled { cfg.files.max_upload_size } else { 0 },
            "msgDelAge": 0,
        });
        // Tinode's shape: the methods each auth level requires, or null when none is.
        let required = self.svc.credentials(self.tenant()).required();
        params["reqCred"] = if required.is_empty() { Value::Null } else { json!({ "auth": required }) };
        if cfg.calls.enabled {
            let now = u64::try_from(crate::now_millis() / 1000).unwrap_or(0);
            params["iceServers"] = cfg.calls.ice_servers_for(&self.sid(), now);
            params["callTimeout"] = json!(cfg.calls.ring_timeout_ms / 1000);
        }
        let code = if self.transport == Transport::WebSocket { Code::Created } else { Code::Ok };
        self.reply(id, None, code, Some(params)).await;
        Ok(())
    }

    pub(crate) async fn on_acc(&mut self, m: MsgAcc) -> ServiceResult<()> {
        let creating = m.user.as_deref().is_some_and(|u| u.starts_with("new"));
        if creating { self.create_account(m).await } else { self.update_account(m).await }
    }

    async fn create_account(&mut self, m: MsgAcc) -> ServiceResult<()> {
        let scheme = m.scheme.as_deref().unwrap_or("basic");
        if scheme == "anonymous" {
            return self.create_anonymous(m).await;
        }
        if scheme != "basic" {
            return Err(ServiceError::UnknownScheme);
        }
        let secret = m.secret.as_deref().ok_or_else(|| ServiceError::Malformed("acc.secret is required".into()))?;
        let (login, password) = auth::parse_basic_secret(secret)
            .ok_or_else(|| ServiceError::Malformed("acc.secret must be base64 of login:password".into()))?;
        crate::usecases::accounts::validate_login(&login, &password)?;
        let user = self.new_user(&m).await?;
        let accounts = self.svc.accounts(self.tenant());
        accounts.ensure_login_free(&login, None).await?;
        let creds = self.signup_credentials(m.cred.as_deref()).await?;
        let user = accounts.create(user, &login, password).await?;
        self.add_signup_credentials(user.id, &creds).await?;
        let missing = self.svc.credentials(self.tenant()).required().to_vec();
        if m.login && self.user.is_none() && !missing.is_empty() {
            self.reply_validate(m.id.as_deref(), &user, missing, Some(account_desc(&user))).await;
            return Ok(());
        }
        self.reply_created(m, &user, false).await
    }

    /// The account a `{acc user:"new"}` describes (tags, default access, public), checked, not yet stored.
    async fn new_user(&self, m: &MsgAcc) -> ServiceResult<User> {
        let tags = self.validate_tags(m.tags.as_deref().unwrap_or_default())?;
        let tags = self.svc.credentials(self.tenant()).client_tags(None, tags).await?;
        let desc = m.desc.clone().unwrap_or_default();
        let defacs = self.parse_defacs(desc.defacs.as_ref(), DefaultAccess::USER)?;
        self.check_desc_size(&desc)?;
        Ok(User {
            public: desc.public.filter(|v| !v.is_null()),
            tags,
            user_agent: self.hello.as_ref().and_then(|h| h.ua.clone()),
            ..User::new_active(now_millis(), defacs)
        })
    }

    /// Answers a stored sign-up: with `login` (and no login yet on this session) the session logs in as it (200,
    /// Tinode's `authlvl` `anon` for an anonymous account); otherwise, or when a login gate refuses that login,
    /// 201: the account exists either way, and the client must learn so rather than sign up again.
    async fn reply_created(&mut self, m: MsgAcc, user: &User, anon: bool) -> ServiceResult<()> {
        let desc = account_desc(user);
        let mut logged_in = None;
        if m.login && self.user.is_none() {
            let scheme = if anon { "anonymous" } else { m.scheme.as_deref().unwrap_or("basic") };
            match self.complete_login(user, anon, scheme).await {
                Ok(params) => logged_in = Some(params),
                Err(ServiceError::Rejected { reason, .. }) => {
                    tracing::info!(user = %user.id, %reason, "signed up; the login a gate refused is left out");
                }
                Err(e) => return Err(e),
            }
        }
        if let Some(mut params) = logged_in {
            params["desc"] = desc;
            self.reply(m.id.as_deref(), None, Code::Ok, Some(params)).await;
        } else {
            let level = if anon { "anon" } else { "auth" };
            let params = json!({ "user": user.id.to_string(), "authlvl": level, "desc": desc });
            self.reply(m.id.as_deref(), None, Code::Created, Some(params)).await;
        }
        Ok(())
    }

    /// `{acc user:"new" scheme:"anonymous"}`, when the tenant allows it: an account with no login and no
    /// credentials, at Tinode's `anon` level. It logs in again only with the token it gets now.
    async fn create_anonymous(&mut self, m: MsgAcc) -> ServiceResult<()> {
        let accounts = self.svc.accounts(self.tenant());
        if !accounts.anonymous_allowed().await? {
            return Err(ServiceError::UnknownScheme);
        }
        let user = self.new_user(&m).await?;
        let user = accounts.create_with(user, None, None, false).await?;
        self.reply_created(m, &user, true).await
    }

    async fn update_account(&mut self, m: MsgAcc) -> ServiceResult<()> {
        if m.tmpscheme.as_deref() == Some("code") || (m.tmpscheme.as_deref() == Some("token") && self.user.is_none()) {
            // A reset code (or the grant one bought) stands in for a login: a logged-in user changes the
            // password the usual way.
            if self.user.is_some() {
                return Err(ServiceError::AlreadyAuthenticated);
            }
            return self.reset_password(&m).await;
        }
        let me = self.me()?;
        if let Some(target) = m.user.as_deref().filter(|u| !u.is_empty())
            && UserId::parse(target).ok() != Some(me)
        {
            return Err(ServiceError::PermissionDenied);
        }
        let accounts = self.svc.accounts(self.tenant());
        let mut changed = false;
        let mut params = None;
        if let Some(secret) = m.secret.as_deref() {
            if m.scheme.as_deref().unwrap_or("basic") != "basic" {
                return Err(ServiceError::UnknownScheme);
            }
            let (login, password) = auth::parse_basic_secret(secret)
                .ok_or_else(|| ServiceError::Malformed("acc.secret must be base64 of login:password".into()))?;
            accounts.ensure_login_free(&login, Some(me)).await?;
            crate::usecases::accounts::validate_login(&login, &password)?;
            if self.svc.cfg.password_change_requires_current {
                self.check_current_password(me, &m).await?;
            }
            let audit = crate::backbone::audit_event(
                self.tenant(),
                "user.password.change",
                ("user", Some(me.0 as i64)),
                ("user", me.to_string()),
            )
            .with_detail(json!({ "login": login }))
            .with_client_ip(self.client_ip());
            // Every older token is revoked and the user's other sessions close; this one gets a fresh token.
            let version = accounts.set_password(me, password, Some(self.handle.sid), &audit).await?;
            let (token, expires) = self.mint_token(me, version);
            params = Some(json!({ "user": me.to_string(), "token": token, "expires": Timestamp(expires) }));
            changed = true;
        }
        let tags = match m.tags.as_deref() {
            Some(t) => Some(self.svc.credentials(self.tenant()).client_tags(Some(me), self.validate_tags(t)?).await?),
            None => None,
        };
        let desc = m.desc.unwrap_or_default();
        self.check_desc_size(&desc)?;
        let defacs = match desc.defacs.as_ref() {
            Some(d) => Some(self.parse_defacs(Some(d), DefaultAccess::USER)?),
            None => None,
        };
        if tags.is_some() || defacs.is_some() || desc.public.is_some() {
            let update = UserUpdate {
                updated: now_millis(),
                public: desc.public.map(clear_marker),
                trusted: None,
                tags,
                defacs,
            };
            accounts.update_profile(me, &update).await?;
            self.svc.files(self.tenant()).adopt_avatar(me, update.public.as_ref()).await?;
            changed = true;
        }
        let code = if changed { Code::Ok } else { Code::NotModified };
        self.reply(m.id.as_deref(), None, code, params).await;
        Ok(())
    }

    pub(crate) async fn on_login(&mut self, m: MsgLogin) -> ServiceResult<()> {
        if m.scheme.as_deref() == Some("reset") {
            // Asking for a reset code needs no login, and a logged-in session may ask too (Tinode's order).
            let secret =
                m.secret.as_deref().ok_or_else(|| ServiceError::Malformed("login.secret is required".into()))?;
            return self.request_reset(m.id.as_deref(), secret).await;
        }
        if self.user.is_some() {
            return Err(ServiceError::AlreadyAuthenticated);
        }
        let scheme = m.scheme.clone().unwrap_or_else(|| "basic".to_owned());
        let login = (scheme == "basic")
            .then(|| m.secret.as_deref().and_then(auth::parse_basic_secret).map(|(l, _)| l))
            .flatten();
        let result = self.login(m).await;
        // Who logged in, or which login failed and why: the audit trail of every attempt but malformed ones.
        let (action, actor, target, reason) = match &result {
            Ok(()) => {
                let me = self.user.map(|u| u.0 as i64);
                // Logged out after an Ok: the password was right, but credentials await their codes (300).
                let action = if me.is_some() { "login.success" } else { "login.validate" };
                (action, me, ("user", self.user.map(|u| u.to_string()).unwrap_or_default()), None)
            }
            Err(
                e @ (ServiceError::AuthFailed | ServiceError::LoginThrottled { .. } | ServiceError::PermissionDenied),
            ) => ("login.failure", None, ("login", login.clone().unwrap_or_default()), Some(e.text())),
            Err(_) => return result,
        };
        let ip = self.client_ip();
        let detail = json!({ "scheme": scheme, "login": login, "reason": reason });
        self.svc
            .audit_action(self.tenant(), action, ("user", actor), (target.0, target.1), |e| {
                e.with_detail(detail).with_client_ip(ip)
            })
            .await;
        result
    }

    /// The client's address without its port, for the audit trail.
    pub(crate) fn client_ip(&self) -> Option<String> {
        let remote = self.remote.as_deref()?;
        let ip = remote.parse::<std::net::SocketAddr>().map(|a| a.ip()).or_else(|_| remote.parse());
        Some(ip.map_or_else(|_| remote.to_owned(), |ip| ip.to_string()))
    }

    async fn login(&mut self, m: MsgLogin) -> ServiceResult<()> {
        if m.scheme.as_deref() == Some("anonymous") {
            // Tinode's answer: an anonymous account has no secret to log in with, only its token.
            return Err(ServiceError::NotImplemented);
        }
        let accounts = self.svc.accounts(self.tenant());
        let secret = m.secret.as_deref().ok_or_else(|| ServiceError::Malformed("login.secret is required".into()))?;
        let scheme = m.scheme.as_deref().unwrap_or("basic");
        if scheme == "code" {
            return self.login_with_code(m.id.as_deref(), secret).await;
        }
        let mut basic_login = None;
        let user = match scheme {
            "basic" => {
                let (login, password) = auth::parse_basic_secret(secret).ok_or(ServiceError::AuthFailed)?;
                let user = self.verify_basic(&login, password, None).await?;
                basic_login = Some(login);
                accounts.user(user).await?.ok_or(ServiceError::AuthFailed)?
            }
            "token" => accounts.user_of_token(secret).await?,
            "jwt" => accounts.user_of_jwt(secret, self.hello.as_ref().and_then(|h| h.ua.clone())).await?,
            _ => return Err(ServiceError::UnknownScheme),
        };
        match user.state {
            RecordState::Active => {}
            // A deleted account is no account at all.
            RecordState::Deleted => return Err(ServiceError::AuthFailed),
            RecordState::Suspended => return Err(ServiceError::PermissionDenied),
        }
        let missing = self.pending_credentials(&user, m.cred.as_deref()).await?;
        if !missing.is_empty() {
            self.reply_validate(m.id.as_deref(), &user, missing, None).await;
            return Ok(());
        }
        // An account with neither a login nor an external id is an anonymous one: its token is all it has.
        let anon = scheme == "token" && accounts.identity(user.id).await? == Identity::default();
        let params = match self.complete_login(&user, anon, scheme).await {
            // A login gate refused a password that matched. Answered and counted as a wrong password, so that
            // from a refused network the gate cannot tell a guesser which password was right; the gate's reason
            // is in the log (a token, unguessable, gets the gate's own answer).
            Err(ServiceError::Rejected { .. }) if basic_login.is_some() => {
                let keys = self.login_keys(basic_login.as_deref().unwrap_or_default());
                self.svc.accounts(self.tenant()).count_failed_login(&keys).await;
                return Err(ServiceError::AuthFailed);
            }
            r => r?,
        };
        self.reply(m.id.as_deref(), None, Code::Ok, Some(params)).await;
        Ok(())
    }

    /// The throttle keys of a basic login from this session: the login, and the client's address if known.
    fn login_keys(&self, login: &str) -> Vec<LoginKey> {
        let mut keys = vec![LoginKey::Login(self.tenant(), login.to_owned())];
        keys.extend(self.remote.as_deref().and_then(|r| LoginKey::addr(self.tenant(), r)));
        keys
    }

    /// Checks a basic credential from this session under the failed-login throttle (see
    /// [`Accounts::verify_basic`](crate::usecases::accounts::Accounts::verify_basic)).
    async fn verify_basic(&self, login: &str, password: String, owner: Option<UserId>) -> ServiceResult<UserId> {
        let keys = self.login_keys(login);
        let remote = self.remote.as_deref();
        self.svc.accounts(self.tenant()).verify_basic(&keys, login, password, owner, remote).await
    }

    /// A password change must prove the current password, so that a stolen session cannot lock the owner out:
    /// Tinode's one-off credential `tmpscheme:"basic"`, `tmpsecret: base64("login:current")`.
    async fn check_current_password(&self, me: UserId, m: &MsgAcc) -> ServiceResult<()> {
        let (Some(scheme), Some(tmp)) = (m.tmpscheme.as_deref(), m.tmpsecret.as_deref()) else {
            return Err(ServiceError::Denied(
                "a password change needs the current password: send tmpscheme \"basic\" and tmpsecret, \
                 base64 of login:current-password"
                    .into(),
            ));
        };
        if scheme != "basic" {
            return Err(ServiceError::UnknownScheme);
        }
        let (login, current) = auth::parse_basic_secret(tmp)
            .ok_or_else(|| ServiceError::Malformed("acc.tmpsecret must be base64 of login:password".into()))?;
        self.verify_basic(&login, current, Some(me)).await.map(|_| ())
    }

    /// `public` and `private` are opaque JSON the server keeps and sends to others: bounded in bytes.
    pub(crate) fn check_desc_size(&self, desc: &palaver_proto::SetDesc) -> ServiceResult<()> {
        let max = self.svc.cfg.max_desc_bytes;
        for (name, v) in [("public", &desc.public), ("private", &desc.private), ("trusted", &desc.trusted)] {
            if let Some(v) = v
                && serde_json::to_string(v).map_or(usize::MAX, |s| s.len()) > max
            {
                return Err(ServiceError::TooLarge(format!("desc.{name} is at most {max} bytes of JSON")));
            }
        }
        Ok(())
    }

    fn mint_token(&self, user: UserId, auth_version: i64) -> (String, i64) {
        let ttl = self.svc.cfg.token_ttl.as_secs();
        self.svc.accounts(self.tenant()).mint_token(user, auth_version, ttl)
    }

    /// Binds the session to the user and returns the login ctrl params. Refused beyond
    /// `max_sessions_per_user` sessions of the user on this node.
    async fn complete_login(&mut self, user: &User, anon: bool, scheme: &str) -> ServiceResult<Value> {
        let max = self.svc.cfg.max_sessions_per_user;
        if max > 0 && self.svc.hub.user_session_count(self.tenant(), user.id) >= max {
            return Err(ServiceError::Policy(format!("too many sessions: a user may have {max} on this node")));
        }
        let login = LoginContext {
            tenant: self.tenant(),
            user: user.id,
            session: self.internal_sid(),
            node: self.svc.cfg.node_id.clone(),
            scheme: scheme.to_owned(),
            remote_addr: self.client_ip().unwrap_or_default(),
            user_agent: self.hello.as_ref().and_then(|h| h.ua.clone()).unwrap_or_default(),
        };
        self.svc.accounts(self.tenant()).admit_login(&login).await?;
        self.user = Some(user.id);
        self.anon = anon;
        self.svc.hub.bind_user(&self.handle, user.id);
        self.start_control(user.id).await;
        self.svc.join_user_topics(self.tenant(), user.id).await;
        let meta = PresenceMeta {
            node_id: self.svc.cfg.node_id.clone(),
            device: self.hello.as_ref().and_then(|h| h.platf.clone().or(h.dev.clone())),
            user_agent: self.hello.as_ref().and_then(|h| h.ua.clone()),
            now: now_millis(),
        };
        self.svc.presence(self.tenant()).mark_online(user.id, &self.internal_sid(), &meta).await;
        if let Err(e) = self.register_device(user.id).await {
            // The login stands: a device that cannot be registered only means no push for it.
            tracing::debug!(error = %e, "push device not registered at login");
        }
        let (token, expires) = self.mint_token(user.id, user.auth_version);
        tracing::debug!(user = %user.id, remote = ?self.remote, "logged in");
        let level = if anon { "anon" } else { "auth" };
        Ok(json!({ "user": user.id.to_string(), "authlvl": level, "token": token, "expires": Timestamp(expires) }))
    }
}

impl Session {
    /// A repeated `{hi dev}`: `␡` removes the session's registered device; another token replaces it. Before
    /// login the token is only remembered, and registered at login.
    async fn change_device(&mut self, dev: String, platf: Option<String>, lang: Option<String>) -> ServiceResult<()> {
        let (tenant, user) = (self.tenant(), self.user);
        let Some(hello) = self.hello.as_mut() else { return Ok(()) };
        let old = hello.dev.take().filter(|d| d != DELETE_MARK && !d.is_empty());
        if platf.is_some() {
            hello.platf = platf;
        }
        if lang.is_some() {
            hello.lang = lang;
        }
        let Some(user) = user else {
            hello.dev = (dev != DELETE_MARK).then_some(dev);
            return Ok(());
        };
        if dev == DELETE_MARK {
            if let Some(old) = old {
                self.svc.devices(tenant).remove(user, &old).await?;
            }
            return Ok(());
        }
        let replaced = old.filter(|o| *o != dev);
        hello.dev = Some(dev);
        self.register_device(user).await?;
        if let Some(old) = replaced {
            // A refreshed token: the old one is dead, so its device goes.
            self.svc.devices(tenant).remove(user, &old).await?;
        }
        Ok(())
    }

    /// Registers the session's `{hi dev}` token for `user`, if it gave one and push is on.
    async fn register_device(&self, user: UserId) -> ServiceResult<()> {
        let Some(hello) = &self.hello else { return Ok(()) };
        let Some(token) = hello.dev.as_deref().filter(|d| *d != DELETE_MARK && !d.is_empty()) else { return Ok(()) };
        let info = crate::usecases::devices::DeviceInfo {
            token,
            platform: hello.platf.as_deref(),
            app: hello.ua.as_deref(),
            language: hello.lang.as_deref(),
        };
        self.svc.devices(self.tenant()).register(user, info).await.map(|_| ())
    }

    /// Reads the control versions the session will be judged by, and, if so configured, evicts the user's
    /// older sessions of the same platform.
    async fn start_control(&self, user: UserId) {
        let tenant = self.tenant();
        let dev = self.hello.as_ref().and_then(|h| h.dev.clone()).filter(|d| !d.is_empty());
        let platform = self.hello.as_ref().and_then(|h| h.platf.clone()).filter(|p| !p.is_empty());
        let platform_slot = platform.map(|p| format!("platform:{p}"));
        let slots: Vec<String> = dev.into_iter().chain(platform_slot.clone()).collect();
        self.svc.start_control(&self.handle, user, slots).await;
        if let Some(slot) = platform_slot.filter(|_| self.svc.cfg.evict_same_platform) {
            let scope = ControlScope::Device(slot);
            if let Err(e) = self.svc.control(tenant, user, scope, "signed in elsewhere", Some(self.handle.sid)).await {
                tracing::debug!(error = %e, "older sessions of the platform not evicted");
            }
        }
    }
}

/// A new account's `desc` as the sign-up reply carries it.
fn account_desc(user: &User) -> Value {
    json!({
        "created": Timestamp(user.created),
        "updated": Timestamp(user.updated),
        "defacs": render::defacs(&user.defacs),
        "public": user.public,
    })
}

/// Maps Tinode's clear marker to JSON null, which the ports read as "clear this field".
pub(crate) fn clear_marker(v: Value) -> Value {
    match v {
        Value::String(s) if s == palaver_proto::NULL_VALUE => Value::Null,
        v => v,
    }
}
