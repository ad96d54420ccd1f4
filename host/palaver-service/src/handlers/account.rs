//! `{hi}`, `{acc}` and `{login}`: the handshake, sign-up, password changes and both login schemes.

use crate::auth::{self, TokenClaims};
use crate::error::{ServiceError, ServiceResult};
use crate::session::{Hello, Session, Transport};
use crate::{now_millis, render};
use palaver_core::ports::ControlScope;
use palaver_core::{AuthRecord, DefaultAccess, PresenceMeta, RecordState, StoreError, User, UserId, UserUpdate};
use palaver_proto::{Code, MsgAcc, MsgHi, MsgLogin, PROTOCOL_VERSION, Timestamp};
use serde_json::{Value, json};

const MIN_LOGIN: usize = 2;
const MAX_LOGIN: usize = 32;
const MIN_PASSWORD: usize = 3;

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
            self.reply(id, None, Code::Ok, None).await;
            return Ok(());
        }
        let ver = m.ver.clone().unwrap_or_default();
        let min = version_pair(palaver_proto::MIN_CLIENT_VERSION).unwrap_or((0, 20));
        match version_pair(&ver) {
            Some(v) if v >= min => {}
            Some(_) => return Err(ServiceError::VersionNotSupported),
            None => return Err(ServiceError::Malformed("hi.ver is required".into())),
        }
        self.hello = Some(Hello { ver, ua: m.ua, dev: m.dev, platf: m.platf });
        let cfg = &self.svc.cfg;
        let params = json!({
            "ver": PROTOCOL_VERSION,
            "build": concat!("palaver:", env!("CARGO_PKG_VERSION")),
            "sid": self.sid(),
            "maxMessageSize": cfg.max_message_size,
            "maxSubscriberCount": cfg.max_subscriber_count,
            "minTagLength": cfg.min_tag_length,
            "maxTagLength": cfg.max_tag_length,
            "maxTagCount": cfg.max_tag_count,
            "maxFileUploadSize": 0,
            "msgDelAge": 0,
        });
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
        if scheme != "basic" {
            return Err(ServiceError::UnknownScheme);
        }
        let secret = m.secret.as_deref().ok_or_else(|| ServiceError::Malformed("acc.secret is required".into()))?;
        let (login, password) = auth::parse_basic_secret(secret)
            .ok_or_else(|| ServiceError::Malformed("acc.secret must be base64 of login:password".into()))?;
        validate_login(&login, &password)?;
        let tags = self.validate_tags(m.tags.as_deref().unwrap_or_default())?;
        let desc = m.desc.unwrap_or_default();
        let defacs = self.parse_defacs(desc.defacs.as_ref(), DefaultAccess::USER)?;
        let tenant = self.tenant();
        if self.svc.ports.users.find_auth(tenant, &login).await?.is_some() {
            return Err(ServiceError::DuplicateCredential);
        }
        let cost = self.svc.cfg.hash_cost;
        let hash = tokio::task::spawn_blocking(move || auth::hash_password(&password, cost))
            .await
            .map_err(|e| ServiceError::Internal(e.to_string()))?
            .map_err(ServiceError::Internal)?;
        let now = now_millis();
        let mut user = User {
            id: UserId(0),
            created: now,
            updated: now,
            state: RecordState::Active,
            auth_version: 1,
            defacs,
            public: desc.public.filter(|v| !v.is_null()),
            trusted: None,
            tags,
            last_seen: None,
            user_agent: self.hello.as_ref().and_then(|h| h.ua.clone()),
        };
        // Random ids avoid a central counter; a collision is astronomically rare but still handled.
        let mut stored = false;
        for _ in 0..4 {
            user.id = UserId(rand::random::<u64>().max(1));
            let record = AuthRecord { user: user.id, login: login.clone(), secret_hash: hash.clone() };
            match self.svc.ports.users.create_user(tenant, &user, Some(&record)).await {
                Ok(()) => {
                    stored = true;
                    break;
                }
                Err(StoreError::Conflict(_)) => {
                    if self.svc.ports.users.find_auth(tenant, &login).await?.is_some() {
                        return Err(ServiceError::DuplicateCredential);
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
        if !stored {
            return Err(ServiceError::Internal("could not allocate a user id".into()));
        }
        let desc = json!({
            "created": Timestamp(user.created),
            "updated": Timestamp(user.updated),
            "defacs": render::defacs(&user.defacs),
            "public": user.public,
        });
        if m.login && self.user.is_none() {
            let mut params = self.complete_login(&user).await;
            params["desc"] = desc;
            self.reply(m.id.as_deref(), None, Code::Ok, Some(params)).await;
        } else {
            let params = json!({ "user": user.id.to_string(), "authlvl": "auth", "desc": desc });
            self.reply(m.id.as_deref(), None, Code::Created, Some(params)).await;
        }
        Ok(())
    }

    async fn update_account(&mut self, m: MsgAcc) -> ServiceResult<()> {
        let me = self.me()?;
        if let Some(target) = m.user.as_deref().filter(|u| !u.is_empty())
            && UserId::parse(target).ok() != Some(me)
        {
            return Err(ServiceError::PermissionDenied);
        }
        let tenant = self.tenant();
        let mut changed = false;
        let mut params = None;
        if let Some(secret) = m.secret.as_deref() {
            if m.scheme.as_deref().unwrap_or("basic") != "basic" {
                return Err(ServiceError::UnknownScheme);
            }
            let (login, password) = auth::parse_basic_secret(secret)
                .ok_or_else(|| ServiceError::Malformed("acc.secret must be base64 of login:password".into()))?;
            let existing = self.svc.ports.users.find_auth(tenant, &login).await?;
            if existing.as_ref().is_some_and(|a| a.user != me) {
                return Err(ServiceError::DuplicateCredential);
            }
            validate_login(&login, &password)?;
            let cost = self.svc.cfg.hash_cost;
            let hash = tokio::task::spawn_blocking(move || auth::hash_password(&password, cost))
                .await
                .map_err(|e| ServiceError::Internal(e.to_string()))?
                .map_err(ServiceError::Internal)?;
            let version = self.svc.ports.users.set_secret(tenant, me, &hash).await?;
            // The new password revokes every older token and closes the user's other sessions on every node;
            // this session gets a fresh token and stays.
            let (token, expires) = self.mint_token(me, version);
            if let Err(e) =
                self.svc.control(tenant, me, ControlScope::User, "password changed", Some(self.handle.sid)).await
            {
                // The tokens are revoked regardless; sessions still open are closed by their next check.
                tracing::warn!(error = %e, "could not close the user's other sessions");
            }
            params = Some(json!({ "user": me.to_string(), "token": token, "expires": Timestamp(expires) }));
            changed = true;
        }
        let tags = match m.tags.as_deref() {
            Some(t) => Some(self.validate_tags(t)?),
            None => None,
        };
        let desc = m.desc.unwrap_or_default();
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
            self.svc.ports.users.update_user(tenant, me, &update).await?;
            changed = true;
        }
        let code = if changed { Code::Ok } else { Code::NotModified };
        self.reply(m.id.as_deref(), None, code, params).await;
        Ok(())
    }

    pub(crate) async fn on_login(&mut self, m: MsgLogin) -> ServiceResult<()> {
        if self.user.is_some() {
            return Err(ServiceError::AlreadyAuthenticated);
        }
        let tenant = self.tenant();
        let secret = m.secret.as_deref().ok_or_else(|| ServiceError::Malformed("login.secret is required".into()))?;
        let user = match m.scheme.as_deref().unwrap_or("basic") {
            "basic" => {
                let (login, password) = auth::parse_basic_secret(secret).ok_or(ServiceError::AuthFailed)?;
                let record = self.svc.ports.users.find_auth(tenant, &login).await?.ok_or(ServiceError::AuthFailed)?;
                let phc = record.secret_hash.clone();
                let ok = tokio::task::spawn_blocking(move || auth::verify_password(&password, &phc))
                    .await
                    .map_err(|e| ServiceError::Internal(e.to_string()))?;
                if !ok {
                    return Err(ServiceError::AuthFailed);
                }
                self.svc.ports.users.get_user(tenant, record.user).await?.ok_or(ServiceError::AuthFailed)?
            }
            "token" => {
                let claims = self.svc.signer.verify(secret, now_millis()).map_err(|_| ServiceError::AuthFailed)?;
                if claims.tenant != tenant {
                    return Err(ServiceError::AuthFailed);
                }
                let user = self.svc.ports.users.get_user(tenant, claims.user).await?.ok_or(ServiceError::AuthFailed)?;
                if user.auth_version != claims.auth_version {
                    return Err(ServiceError::AuthFailed);
                }
                user
            }
            _ => return Err(ServiceError::UnknownScheme),
        };
        if user.state != RecordState::Active {
            return Err(ServiceError::PermissionDenied);
        }
        let params = self.complete_login(&user).await;
        self.reply(m.id.as_deref(), None, Code::Ok, Some(params)).await;
        Ok(())
    }

    fn mint_token(&self, user: UserId, auth_version: i64) -> (String, i64) {
        let expires = now_millis() + self.svc.cfg.token_ttl.as_millis() as i64;
        let claims = TokenClaims { tenant: self.tenant(), user, expires, auth_version };
        (self.svc.signer.mint(&claims), expires)
    }

    /// Binds the session to the user and returns the login ctrl params.
    async fn complete_login(&mut self, user: &User) -> Value {
        self.user = Some(user.id);
        self.svc.hub.bind_user(&self.handle, user.id);
        self.start_control(user.id).await;
        self.svc.join_user_topics(self.tenant(), user.id).await;
        let meta = PresenceMeta {
            node_id: self.svc.cfg.node_id.clone(),
            device: self.hello.as_ref().and_then(|h| h.platf.clone().or(h.dev.clone())),
            user_agent: self.hello.as_ref().and_then(|h| h.ua.clone()),
            now: now_millis(),
        };
        let sid = self.sid();
        if let Err(e) = self.svc.ports.presence.mark_online(self.tenant(), user.id, &sid, &meta).await {
            tracing::debug!(error = %e, "presence online failed");
        }
        let (token, expires) = self.mint_token(user.id, user.auth_version);
        tracing::debug!(user = %user.id, remote = ?self.remote, "logged in");
        json!({ "user": user.id.to_string(), "authlvl": "auth", "token": token, "expires": Timestamp(expires) })
    }
}

impl Session {
    /// Reads the control versions the session will be judged by, and, if so configured, evicts the user's
    /// older sessions of the same platform.
    async fn start_control(&self, user: UserId) {
        let tenant = self.tenant();
        let dev = self.hello.as_ref().and_then(|h| h.dev.clone()).filter(|d| !d.is_empty());
        let platform = self.hello.as_ref().and_then(|h| h.platf.clone()).filter(|p| !p.is_empty());
        let platform_slot = platform.map(|p| format!("platform:{p}"));
        let slots: Vec<String> = dev.into_iter().chain(platform_slot.clone()).collect();
        self.handle.control.lock().set_slots(slots.clone());
        match self.svc.ports.control.versions(tenant, user, &slots).await {
            Ok(v) => self.handle.control.lock().set_versions(v),
            Err(e) => tracing::debug!(error = %e, "control versions unavailable at login"),
        }
        if let Some(slot) = platform_slot.filter(|_| self.svc.cfg.evict_same_platform) {
            let scope = ControlScope::Device(slot);
            if let Err(e) = self.svc.control(tenant, user, scope, "signed in elsewhere", Some(self.handle.sid)).await {
                tracing::debug!(error = %e, "older sessions of the platform not evicted");
            }
        }
    }
}

fn validate_login(login: &str, password: &str) -> ServiceResult<()> {
    let ok_chars = login.chars().all(|c| c.is_alphanumeric() || "_.@-+".contains(c));
    if login.chars().count() < MIN_LOGIN || login.chars().count() > MAX_LOGIN || !ok_chars {
        return Err(ServiceError::Policy(format!("login must be {MIN_LOGIN}–{MAX_LOGIN} letters, digits or _.@-+")));
    }
    if password.chars().count() < MIN_PASSWORD {
        return Err(ServiceError::Policy(format!("password must be at least {MIN_PASSWORD} characters")));
    }
    Ok(())
}

/// Maps Tinode's clear marker to JSON null, which the ports read as "clear this field".
pub(crate) fn clear_marker(v: Value) -> Value {
    match v {
        Value::String(s) if s == palaver_proto::NULL_VALUE => Value::Null,
        v => v,
    }
}
