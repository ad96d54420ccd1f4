//! Running one call on one instance: check out an instance (a warm one or a fresh one from the `InstancePre`),
//! arm its fuel and epoch deadline, call the hook, check the output, and hand back the verdict with the buffered
//! effects. Any fault drops the instance: a trap poisons a wasmtime store, so it is never reused.

use crate::bindings::{
    self, after_publish, before_publish, before_push, before_subscribe, on_account, on_command, on_login, outcome_size,
    scan_file, verdict_from_wit, verdict_size,
};
use crate::config::Limits;
use crate::error::{Fault, FaultKind};
use crate::hooks::CommandOutcome;
use crate::manifest::{Hook, InstanceMode};
use crate::runtime::Runtime;
use crate::store::{CallScope, EffectBuffer, StoreData};
use crate::version::PluginVersion;
use palaver_core::AccessMode;
use palaver_core::ports::{GateVerdict, PublishVerdict};
use serde_json::Value;
use wasmtime::Store;
use wasmtime::component::Instance;

/// The most input bytes of a `scan-file` call its per-KiB allowances count, if the frame limit is lower: the
/// largest head the server passes (`files.scan.head_bytes`, at most 4 MiB), so a scanner can read all of it.
const MAX_SCAN_INPUT: usize = 4 << 20;

/// An instantiated component with its store.
pub(crate) struct Live {
    store: Store<StoreData>,
    instance: Instance,
    publish: Option<before_publish::Guest>,
    command: Option<on_command::Guest>,
    push: Option<before_push::Guest>,
    scan: Option<scan_file::Guest>,
    published: Option<after_publish::Guest>,
    account: Option<on_account::Guest>,
    login: Option<on_login::Guest>,
    join: Option<before_subscribe::Guest>,
    uses: u32,
}

/// A call that succeeded.
pub(crate) struct Done<T> {
    pub(crate) value: T,
    /// The side effects to apply now that the call succeeded.
    pub(crate) effects: EffectBuffer,
    /// Fuel the call burned.
    pub(crate) fuel: u64,
}

fn trap_or(kind: FaultKind, e: &wasmtime::Error, data: Option<&StoreData>) -> Fault {
    let hint = data.and_then(StoreData::fault_hint);
    if hint.is_some() || e.downcast_ref::<wasmtime::Trap>().is_some() {
        Fault::from_wasmtime(e, hint, data.and_then(|d| d.last_error_line.as_deref()))
    } else {
        Fault::new(kind, format!("{e:#}"))
    }
}

impl PluginVersion {
    async fn checkout(&self, rt: &Runtime, scope: CallScope, limits: Limits) -> Result<Live, Fault> {
        let reused = match self.manifest.instance.mode {
            InstanceMode::Warm => self.warm.lock().pop(),
            InstanceMode::Ephemeral => None,
        };
        let ticks = rt.config.deadline_ticks(limits.deadline);
        let arm = |store: &mut Store<StoreData>| {
            store.set_epoch_deadline(ticks);
            store.data_mut().wait_until = Some(crate::http::wait_until(limits.deadline));
            store.set_fuel(limits.fuel).map_err(|e| Fault::new(FaultKind::Instantiate, format!("{e:#}")))
        };
        if let Some(mut live) = reused {
            live.store.data_mut().reset(scope);
            arm(&mut live.store)?;
            return Ok(live);
        }
        let mut store = Store::new(&rt.engine, StoreData::new(scope, limits.memory_bytes));
        store.limiter(|d| &mut d.memory);
        store.epoch_deadline_trap();
        arm(&mut store)?;
        self.count_instantiation();
        // Instantiation runs guest code (data segments, start functions), so the same fuel and deadline apply.
        let instance = match self.pre.instantiate_async(&mut store).await {
            Ok(i) => i,
            Err(e) => return Err(trap_or(FaultKind::Instantiate, &e, Some(store.data()))),
        };
        Ok(Live {
            store,
            instance,
            publish: None,
            command: None,
            push: None,
            scan: None,
            published: None,
            account: None,
            login: None,
            join: None,
            uses: 0,
        })
    }

    /// Returns a healthy instance to the warm pool, unless it has served its quota or the pool is full.
    fn checkin(&self, mut live: Live) {
        let policy = self.manifest.instance;
        live.uses += 1;
        if policy.mode != InstanceMode::Warm
            || live.uses >= policy.max_invocations
            || self.retired.load(std::sync::atomic::Ordering::SeqCst)
        {
            return;
        }
        let mut pool = self.warm.lock();
        if pool.len() < usize::try_from(policy.max_idle).unwrap_or(0) {
            pool.push(live);
        }
    }

    /// Calls `before-publish`.
    pub(crate) async fn judge(
        &self,
        rt: &Runtime,
        scope: CallScope,
        ctx: &before_publish::PublishContext,
        content: &str,
        head: Option<&str>,
    ) -> Result<Done<PublishVerdict>, Fault> {
        let Some(indices) = &self.publish else {
            return Err(Fault::new(FaultKind::Instantiate, "the component does not export before-publish"));
        };
        let input = content.len() + head.map_or(0, str::len);
        let limits = self.limits(Hook::BeforePublish).for_input(input, rt.config.max_input_bytes);
        let mut live = self.checkout(rt, scope, limits).await?;
        let guest = match &live.publish {
            Some(g) => g.clone(),
            None => {
                let g = indices
                    .load(&mut live.store, &live.instance)
                    .map_err(|e| trap_or(FaultKind::Instantiate, &e, None))?;
                live.publish = Some(g.clone());
                g
            }
        };
        let result = guest.call_judge(&mut live.store, ctx, content, head).await;
        self.conclude(live, limits, result, "verdict", verdict_size, verdict_from_wit)
    }

    /// Calls `before-push`; the decision comes back checked against `original`, the push as built.
    pub(crate) async fn filter(
        &self,
        rt: &Runtime,
        scope: CallScope,
        push: &before_push::PushInfo,
        original: &palaver_core::ports::PushMessage,
    ) -> Result<Done<palaver_core::ports::PushDecision>, Fault> {
        let Some(indices) = &self.push else {
            return Err(Fault::new(FaultKind::Instantiate, "the component does not export before-push"));
        };
        let limits = self.limits(Hook::BeforePush).for_input(bindings::push_info_size(push), rt.config.max_input_bytes);
        let mut live = self.checkout(rt, scope, limits).await?;
        let guest = match &live.push {
            Some(g) => g.clone(),
            None => {
                let g = indices
                    .load(&mut live.store, &live.instance)
                    .map_err(|e| trap_or(FaultKind::Instantiate, &e, None))?;
                live.push = Some(g.clone());
                g
            }
        };
        let result = guest.call_filter(&mut live.store, push).await;
        self.conclude(live, limits, result, "decision", bindings::decision_size, |d| {
            bindings::decision_from_wit(d, original)
        })
    }

    /// Calls `scan-file`. The head is the host's choice, not the uploader's, so its per-KiB allowances count up to
    /// [`MAX_SCAN_INPUT`] bytes whatever the message frame limit is.
    pub(crate) async fn scan_file(
        &self,
        rt: &Runtime,
        scope: CallScope,
        file: &scan_file::FileInfo,
    ) -> Result<Done<palaver_core::ports::ScanVerdict>, Fault> {
        let Some(indices) = &self.scan else {
            return Err(Fault::new(FaultKind::Instantiate, "the component does not export scan-file"));
        };
        let counted = rt.config.max_input_bytes.max(MAX_SCAN_INPUT);
        let limits = self.limits(Hook::ScanFile).for_input(bindings::file_info_size(file), counted);
        let mut live = self.checkout(rt, scope, limits).await?;
        let guest = match &live.scan {
            Some(g) => g.clone(),
            None => {
                let g = indices
                    .load(&mut live.store, &live.instance)
                    .map_err(|e| trap_or(FaultKind::Instantiate, &e, None))?;
                live.scan = Some(g.clone());
                g
            }
        };
        let result = guest.call_scan(&mut live.store, file).await;
        self.conclude(live, limits, result, "verdict", bindings::scan_verdict_size, |v| {
            Ok(bindings::scan_verdict_from_wit(v))
        })
    }

    /// The end of every call that returned: fuel burned, the output cap (`what` names the output in the fault),
    /// the output checked by `convert` (a refusal is an `invalid-output` fault), and the effects to commit; the
    /// instance goes back to the pool.
    fn conclude<R, T>(
        &self,
        mut live: Live,
        limits: Limits,
        result: wasmtime::Result<R>,
        what: &str,
        size: fn(&R) -> usize,
        convert: impl FnOnce(R) -> Result<T, String>,
    ) -> Result<Done<T>, Fault> {
        let fuel = limits.fuel.saturating_sub(live.store.get_fuel().unwrap_or(0));
        let raw = result.map_err(|e| live.store.data().fault(&e))?;
        let n = size(&raw);
        if n > limits.max_output_bytes {
            let cap = limits.max_output_bytes;
            return Err(Fault::new(FaultKind::OutputSize, format!("{what} of {n} bytes exceeds the cap of {cap}")));
        }
        let value = convert(raw).map_err(|m| Fault::new(FaultKind::InvalidOutput, m))?;
        let effects = live.store.data_mut().take_effects();
        self.checkin(live);
        Ok(Done { value, effects, fuel })
    }

    /// Calls `on-login`: `Allow`, or `Reject` with a checked code and a bounded reason.
    pub(crate) async fn login(
        &self,
        rt: &Runtime,
        scope: CallScope,
        info: &on_login::LoginInfo,
    ) -> Result<Done<GateVerdict>, Fault> {
        let Some(indices) = &self.login else {
            return Err(Fault::new(FaultKind::Instantiate, "the component does not export on-login"));
        };
        let limits = self.limits(Hook::OnLogin).for_input(bindings::login_info_size(info), rt.config.max_input_bytes);
        let mut live = self.checkout(rt, scope, limits).await?;
        let guest = match &live.login {
            Some(g) => g.clone(),
            None => {
                let g = indices
                    .load(&mut live.store, &live.instance)
                    .map_err(|e| trap_or(FaultKind::Instantiate, &e, None))?;
                live.login = Some(g.clone());
                g
            }
        };
        let result = guest.call_check(&mut live.store, info).await;
        self.conclude(live, limits, result, "answer", bindings::login_verdict_size, bindings::login_verdict_from_wit)
    }

    /// Calls `before-subscribe`; a restriction comes back checked against `given` (the mode the join's `given`
    /// says), so a mode with a right `given` lacks is an `invalid-output` fault.
    pub(crate) async fn join(
        &self,
        rt: &Runtime,
        scope: CallScope,
        info: &before_subscribe::JoinInfo,
        given: AccessMode,
    ) -> Result<Done<GateVerdict>, Fault> {
        let Some(indices) = &self.join else {
            return Err(Fault::new(FaultKind::Instantiate, "the component does not export before-subscribe"));
        };
        let limits =
            self.limits(Hook::BeforeSubscribe).for_input(bindings::join_info_size(info), rt.config.max_input_bytes);
        let mut live = self.checkout(rt, scope, limits).await?;
        let guest = match &live.join {
            Some(g) => g.clone(),
            None => {
                let g = indices
                    .load(&mut live.store, &live.instance)
                    .map_err(|e| trap_or(FaultKind::Instantiate, &e, None))?;
                live.join = Some(g.clone());
                g
            }
        };
        let result = guest.call_check(&mut live.store, info).await;
        self.conclude(live, limits, result, "answer", bindings::join_verdict_size, |v| {
            bindings::join_verdict_from_wit(v, given)
        })
    }

    /// Calls `after-publish`: `Ok(())`, or the listener's `err` with its reason bounded.
    pub(crate) async fn after_publish(
        &self,
        rt: &Runtime,
        scope: CallScope,
        msg: &after_publish::PublishedMessage,
    ) -> Result<Done<Result<(), String>>, Fault> {
        let Some(indices) = &self.published else {
            return Err(Fault::new(FaultKind::Instantiate, "the component does not export after-publish"));
        };
        let input = bindings::published_message_size(msg);
        let limits = self.limits(Hook::AfterPublish).for_input(input, rt.config.max_input_bytes);
        let mut live = self.checkout(rt, scope, limits).await?;
        let guest = match &live.published {
            Some(g) => g.clone(),
            None => {
                let g = indices
                    .load(&mut live.store, &live.instance)
                    .map_err(|e| trap_or(FaultKind::Instantiate, &e, None))?;
                live.published = Some(g.clone());
                g
            }
        };
        let result = guest.call_handle(&mut live.store, msg).await;
        self.conclude(live, limits, result, "answer", listener_answer_size, |r| {
            Ok(bindings::listener_result_from_wit(r))
        })
    }

    /// Calls `on-account`: `Ok(())`, or the listener's `err` with its reason bounded.
    pub(crate) async fn on_account(
        &self,
        rt: &Runtime,
        scope: CallScope,
        event: &on_account::AccountEvent,
    ) -> Result<Done<Result<(), String>>, Fault> {
        let Some(indices) = &self.account else {
            return Err(Fault::new(FaultKind::Instantiate, "the component does not export on-account"));
        };
        let input = bindings::account_event_size(event);
        let limits = self.limits(Hook::OnAccount).for_input(input, rt.config.max_input_bytes);
        let mut live = self.checkout(rt, scope, limits).await?;
        let guest = match &live.account {
            Some(g) => g.clone(),
            None => {
                let g = indices
                    .load(&mut live.store, &live.instance)
                    .map_err(|e| trap_or(FaultKind::Instantiate, &e, None))?;
                live.account = Some(g.clone());
                g
            }
        };
        let result = guest.call_handle(&mut live.store, event).await;
        self.conclude(live, limits, result, "answer", listener_answer_size, |r| {
            Ok(bindings::listener_result_from_wit(r))
        })
    }

    /// Calls `on-command`.
    pub(crate) async fn handle(
        &self,
        rt: &Runtime,
        scope: CallScope,
        ctx: &on_command::CallContext,
        name: &str,
        args: &str,
    ) -> Result<Done<CommandOutcome>, Fault> {
        let Some(indices) = &self.command else {
            return Err(Fault::new(FaultKind::Instantiate, "the component does not export on-command"));
        };
        let limits = self.limits(Hook::OnCommand).for_input(name.len() + args.len(), rt.config.max_input_bytes);
        let mut live = self.checkout(rt, scope, limits).await?;
        let guest = match &live.command {
            Some(g) => g.clone(),
            None => {
                let g = indices
                    .load(&mut live.store, &live.instance)
                    .map_err(|e| trap_or(FaultKind::Instantiate, &e, None))?;
                live.command = Some(g.clone());
                g
            }
        };
        let result = guest.call_handle(&mut live.store, ctx, name, args).await;
        self.conclude(live, limits, result, "outcome", outcome_size, outcome_from_wit)
    }
}

/// The bytes a listener's answer returns, for the output cap.
fn listener_answer_size(r: &Result<(), String>) -> usize {
    r.as_ref().err().map_or(0, String::len)
}

/// A guest command outcome, checked and turned into the runtime's.
fn outcome_from_wit(o: on_command::CommandOutcome) -> Result<CommandOutcome, String> {
    use crate::bindings::palaver::plugin::types::CommandOutcome as Wit;
    match o {
        Wit::Ok(json) => {
            let v: Value = serde_json::from_str(&json).map_err(|e| format!("command result is not JSON: {e}"))?;
            Ok(CommandOutcome::Ok(v))
        }
        Wit::Rejected(r) => {
            bindings::check_code(r.code)?;
            if r.reason_code.is_empty() || r.reason_code.len() > 64 {
                return Err("reason codes are 1 to 64 bytes".to_owned());
            }
            Ok(CommandOutcome::Rejected { code: r.code, reason_code: r.reason_code, message: r.message })
        }
    }
}
