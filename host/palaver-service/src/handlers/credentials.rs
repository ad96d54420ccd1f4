//! `cred` on the wire, as Tinode clients speak it: credentials named at sign-up, confirmed at login (`{login
//! cred:[{meth, resp}]}`) or on `me` (`{set cred}`), listed (`{get what:"cred"}`) and removed (`{del
//! what:"cred"}`) there; the 300 "validate credentials" that a login gets while a required method is unconfirmed;
//! and the password reset by code (`{login scheme:"reset"}`, then `{acc tmpscheme:"code"}`).

use crate::auth;
use crate::error::{ServiceError, ServiceResult};
use crate::now_millis;
use crate::session::Session;
use palaver_core::{User, UserId};
use palaver_proto::{Code, Credential, CredentialView, MsgAcc, MsgDel, MsgMeta, MsgPres, Timestamp};
use serde_json::{Value, json};

impl Session {
    /// The client's language from `{hi lang}`, for the code's message.
    fn lang(&self) -> Option<&str> {
        self.hello.as_ref().and_then(|h| h.lang.as_deref())
    }

    /// The credentials a sign-up names, parsed and normalised. As Tinode does, entries of methods this node does
    /// not check, and entries without a value, are dropped, and only the first of each method counts.
    /// `CredentialsRequired` names the required methods left out; `DuplicateCredential` an address another
    /// account confirmed.
    pub(crate) async fn signup_credentials(
        &self,
        creds: Option<&[Credential]>,
    ) -> ServiceResult<Vec<(String, String)>> {
        let credentials = self.svc.credentials(self.tenant());
        let mut wanted: Vec<(String, String)> = Vec::new();
        for c in creds.unwrap_or_default() {
            let (Some(method), Some(value)) = (c.meth.as_deref(), c.val.as_deref()) else { continue };
            if !credentials.enabled(method) || value.trim().is_empty() || wanted.iter().any(|(m, _)| m == method) {
                continue;
            }
            wanted.push(credentials.parse(method, value)?);
        }
        let missing: Vec<String> =
            credentials.required().iter().filter(|r| !wanted.iter().any(|(m, _)| m == *r)).cloned().collect();
        if !missing.is_empty() {
            return Err(ServiceError::CredentialsRequired(missing));
        }
        for (method, value) in &wanted {
            credentials.ensure_free(method, value, None).await?;
        }
        Ok(wanted)
    }

    /// Gives a new account its credentials and sends their codes. If one fails, the account is deleted again, as
    /// Tinode does: a sign-up whose address cannot be confirmed would leave a login nobody can finish.
    pub(crate) async fn add_signup_credentials(&self, user: UserId, wanted: &[(String, String)]) -> ServiceResult<()> {
        let credentials = self.svc.credentials(self.tenant());
        for (method, value) in wanted {
            if let Err(e) = credentials.add(user, method, value, self.lang()).await {
                let actor = ("system", None);
                if let Err(undo) =
                    self.svc.delete_account(self.tenant(), user, true, actor, Some(self.handle.sid)).await
                {
                    tracing::warn!(error = %undo, user = %user, "a sign-up whose credential failed was not undone");
                }
                return Err(e);
            }
        }
        Ok(())
    }

    /// Applies a login's `cred` responses and returns the required methods still unconfirmed (empty: the login
    /// goes ahead). As in Tinode, a wrong code is no error here: the login is answered 300 again. Accounts
    /// without a password (an app backend's, signing in by JWT) are vouched for by their backend and need none.
    pub(crate) async fn pending_credentials(
        &self,
        user: &User,
        creds: Option<&[Credential]>,
    ) -> ServiceResult<Vec<String>> {
        let credentials = self.svc.credentials(self.tenant());
        if credentials.required().is_empty() {
            return Ok(Vec::new());
        }
        let missing = credentials.missing(user.id).await?;
        if missing.is_empty() || self.svc.accounts(self.tenant()).identity(user.id).await?.login.is_none() {
            return Ok(Vec::new());
        }
        let mut confirmed = false;
        for c in creds.unwrap_or_default() {
            let (Some(method), Some(resp)) = (c.meth.as_deref(), c.resp.as_deref()) else { continue };
            if !missing.iter().any(|m| m == method) || resp.trim().is_empty() {
                continue;
            }
            match credentials.confirm(user.id, method, resp, self.lang()).await {
                Ok(value) => {
                    credentials.retag(user.id, method, &value, true).await?;
                    confirmed = true;
                }
                Err(ServiceError::InvalidResponse | ServiceError::NotFound) => {}
                Err(e) => return Err(e),
            }
        }
        if !confirmed {
            return Ok(missing);
        }
        credentials.missing(user.id).await
    }

    /// Tinode's 300 "validate credentials": the password was right but `missing` methods are unconfirmed. The
    /// session stays logged out; the token it gets logs in once a later `{login}` carries the codes.
    pub(crate) async fn reply_validate(
        &self,
        id: Option<&str>,
        user: &User,
        missing: Vec<String>,
        desc: Option<Value>,
    ) {
        let ttl = self.svc.cfg.token_ttl.as_secs();
        let (token, expires) = self.svc.accounts(self.tenant()).mint_token(user.id, user.auth_version, ttl);
        let mut params = json!({
            "user": user.id.to_string(),
            "authlvl": "auth",
            "cred": missing,
            "token": token,
            "expires": Timestamp(expires),
        });
        if let Some(desc) = desc {
            params["desc"] = desc;
        }
        self.reply(id, None, Code::ValidateCredentials, Some(params)).await;
    }

    /// `{login scheme:"reset" secret: base64("basic:<method>:<address>")}`: sends a reset code to the address if
    /// an account confirmed it, and answers 301 "auth reset" either way.
    pub(crate) async fn request_reset(&self, id: Option<&str>, secret: &str) -> ServiceResult<()> {
        let (scheme, method, value) = three_parts(secret)
            .ok_or_else(|| ServiceError::Malformed("login.secret must be base64 of scheme:method:value".into()))?;
        if scheme != "basic" {
            return Err(ServiceError::NotImplemented);
        }
        let credentials = self.svc.credentials(self.tenant());
        let (method, value) = credentials.parse(&method, &value)?;
        credentials.request_reset(&method, &value, self.lang()).await?;
        let detail = json!({ "method": method });
        let ip = self.client_ip();
        self.svc
            .audit_action(self.tenant(), "user.password.reset_requested", ("user", None), ("credential", method), |e| {
                e.with_detail(detail).with_client_ip(ip)
            })
            .await;
        self.reply(id, None, Code::AuthReset, None).await;
        Ok(())
    }

    /// `{login scheme:"code" secret: base64("<code>:<method>:<address>")}` (Tinode's second way): the reset code
    /// buys a one-time grant, answered 200 with `authlvl:""` and the grant as `token`. The session stays logged
    /// out; `{acc tmpscheme:"token" tmpsecret:<grant>}` then sets the password.
    pub(crate) async fn login_with_code(&self, id: Option<&str>, secret: &str) -> ServiceResult<()> {
        let (code, method, value) = code_secret(secret)?;
        let credentials = self.svc.credentials(self.tenant());
        let (method, value) = credentials.parse(&method, &value).map_err(|_| ServiceError::AuthFailed)?;
        let user = credentials.redeem_reset(&method, &value, &code).await?;
        let (grant, expires) = credentials.grant_reset(user).await?;
        let params = json!({ "user": user.to_string(), "authlvl": "", "token": grant, "expires": Timestamp(expires) });
        self.reply(id, None, Code::Ok, Some(params)).await;
        Ok(())
    }

    /// `{acc scheme:"basic" secret: base64(":<new password>") tmpscheme:"code" tmpsecret: base64("<code>:<method>:
    /// <address>")}` from a logged-out session: the reset code proves the address, and the password changes. With
    /// `tmpscheme:"token"`, `tmpsecret` is the grant `{login scheme:"code"}` gave.
    /// Every token of the account is revoked and its sessions close; this session stays logged out and logs in
    /// with the new password.
    pub(crate) async fn reset_password(&self, m: &MsgAcc) -> ServiceResult<()> {
        if m.scheme.as_deref().unwrap_or("basic") != "basic" {
            return Err(ServiceError::UnknownScheme);
        }
        let secret = m.secret.as_deref().ok_or_else(|| ServiceError::Malformed("acc.secret is required".into()))?;
        let (_, password) = auth::parse_basic_secret(secret)
            .ok_or_else(|| ServiceError::Malformed("acc.secret must be base64 of login:password".into()))?;
        crate::usecases::accounts::validate_password(&password)?;
        let credentials = self.svc.credentials(self.tenant());
        let tmp = m.tmpsecret.as_deref().ok_or(ServiceError::AuthFailed)?;
        let (user, method) = if m.tmpscheme.as_deref() == Some("token") {
            (credentials.redeem_grant(tmp).await?, "grant".to_owned())
        } else {
            let (code, method, value) = code_secret(tmp)?;
            let (method, value) = credentials.parse(&method, &value).map_err(|_| ServiceError::AuthFailed)?;
            (credentials.redeem_reset(&method, &value, &code).await?, method)
        };
        let audit = crate::backbone::audit_event(
            self.tenant(),
            "user.password.reset",
            ("user", Some(user.0 as i64)),
            ("user", user.to_string()),
        )
        .with_detail(json!({ "method": method }))
        .with_client_ip(self.client_ip());
        // A reset is what a user does when someone else may know the old password: nothing signed in before
        // it stays signed in.
        match self.svc.accounts(self.tenant()).set_password(user, password, None, &audit).await {
            Ok(_) => {}
            Err(ServiceError::NotFound) => return Err(ServiceError::AuthFailed),
            Err(e) => return Err(e),
        }
        self.reply(m.id.as_deref(), None, Code::Ok, None).await;
        Ok(())
    }

    /// `{set topic:"me" cred:{meth, val}}` adds a credential and sends its code; `{set cred:{meth, resp}}`
    /// confirms the pending one of the method.
    pub(crate) async fn set_credential(&self, me: UserId, cred: &Credential) -> ServiceResult<()> {
        let credentials = self.svc.credentials(self.tenant());
        let method = cred.meth.as_deref().filter(|m| !m.is_empty());
        let method = method.ok_or_else(|| ServiceError::Malformed("set.cred.meth is required".into()))?;
        if let Some(resp) = cred.resp.as_deref().filter(|r| !r.trim().is_empty()) {
            if !credentials.enabled(method) {
                return Err(ServiceError::BadCredential { method: method.to_owned() });
            }
            let value = credentials.confirm(me, method, resp, self.lang()).await?;
            if credentials.retag(me, method, &value, true).await? {
                self.tags_changed(me).await;
            }
            return Ok(());
        }
        let value = cred.val.as_deref().ok_or_else(|| ServiceError::Malformed("set.cred needs val or resp".into()))?;
        let (method, value) = credentials.parse(method, value)?;
        credentials.add(me, &method, &value, self.lang()).await
    }

    /// `{get topic:"me" what:"cred"}`: the user's credentials, unconfirmed ones too, or 204 `{what:"creds"}`.
    pub(crate) async fn get_credentials(&self, id: Option<&str>, wire: &str) -> ServiceResult<()> {
        let me = self.me()?;
        let creds = self.svc.credentials(self.tenant()).list(me).await?;
        if creds.is_empty() {
            self.reply(id, Some(wire), Code::NoContent, Some(json!({ "what": "creds" }))).await;
            return Ok(());
        }
        let mut meta = MsgMeta::new(id, wire, Timestamp(now_millis()));
        meta.cred =
            Some(creds.into_iter().map(|c| CredentialView { meth: c.method, val: c.value, done: c.done }).collect());
        self.send(crate::render::frame(&palaver_proto::ServerMsg::Meta(meta))).await;
        Ok(())
    }

    /// `{del topic:"me" what:"cred" cred:{meth, val}}` (tinode-sdk may send no topic): removes one credential.
    /// Removing one the user does not have succeeds, as in Tinode.
    pub(crate) async fn del_credential(&self, id: Option<&str>, m: &MsgDel) -> ServiceResult<()> {
        let me = self.me()?;
        if !matches!(m.topic.as_str(), "" | "me") {
            return Err(ServiceError::PermissionDenied);
        }
        let cred = m.cred.as_ref().ok_or_else(|| ServiceError::Malformed("del.cred is required".into()))?;
        let (Some(method), Some(value)) = (cred.meth.as_deref(), cred.val.as_deref()) else {
            return Err(ServiceError::Malformed("del.cred needs meth and val".into()));
        };
        let credentials = self.svc.credentials(self.tenant());
        let value = crate::usecases::credentials::normalise(method, value)?;
        if credentials.delete(me, method, &value).await? == Some(true)
            && credentials.retag(me, method, &value, false).await?
        {
            self.tags_changed(me).await;
        }
        self.reply(id, Some("me"), Code::Ok, None).await;
        Ok(())
    }

    /// `{pres topic:"me" what:"tags"}` to the user's sessions, which then fetch their tags again.
    async fn tags_changed(&self, me: UserId) {
        let pres = MsgPres { topic: "me".into(), what: "tags".into(), ..MsgPres::default() };
        self.svc.pres_to_many(self.tenant(), vec![me], pres, None, None).await;
    }
}

/// `<code>:<method>:<address>` from a base64 secret; anything else is `AuthFailed`.
fn code_secret(secret: &str) -> ServiceResult<(String, String, String)> {
    three_parts(secret).ok_or(ServiceError::AuthFailed)
}

/// `a:b:c` from a base64 secret (the last part may hold more colons).
fn three_parts(secret: &str) -> Option<(String, String, String)> {
    let text = auth::decode_secret(secret)?;
    let mut parts = text.splitn(3, ':');
    Some((parts.next()?.to_owned(), parts.next()?.to_owned(), parts.next()?.to_owned()))
}
