//! The Palaver plugin SDK: write a plugin as a plain Rust type, test it natively, ship it as a component.
//!
//! A plugin implements [`PublishFilter`] (judges messages before they take a seq) and/or [`CommandHandler`]
//! (runs business commands), or [`PushFilter`] (keeps, drops, delays or rewrites offline pushes), or
//! [`FileScanner`] (judges uploaded files: clean, blocked or review), or [`Listener`] (learns of stored messages
//! and account changes, off the request path), or [`Gate`] (admits logins and joins), and exports itself with one
//! macro:
//!
//! ```ignore
//! use palaver_plugin_sdk::{Context, Host, Message, PublishFilter, Verdict};
//!
//! #[derive(Default)]
//! struct NoShouting;
//!
//! impl PublishFilter for NoShouting {
//!     fn before_publish<H: Host>(&mut self, _cx: &mut Context<'_, H>, msg: &Message) -> Verdict {
//!         match msg.text() {
//!             Some(t) if t.len() > 3 && t == t.to_uppercase() => Verdict::reject(422, "no shouting"),
//!             _ => Verdict::Allow,
//!         }
//!     }
//! }
//!
//! palaver_plugin_sdk::publish_filter!(NoShouting);
//! ```
//!
//! Build it with `cargo xtask plugins` (wasm32-unknown-unknown, turned into a component), test it with
//! [`testing::Harness`] in plain `cargo test`. The plugin value lives as long as its instance: use it as a cache
//! (compiled rules, say), never as the truth, since the host may drop an instance at any call. Durable state goes
//! into [`Context::kv`].
//!
//! A panic traps the call (plugins are built with `panic = "abort"`). When the plugin's `plugin.toml` grants
//! `log`, the export macros install a panic hook that reports the panic's message to the host first, so that it
//! shows in the host's log and in the fault it records; without the grant the component does not import `log`
//! and the host sees the trap alone (see `panic.rs` for why).

extern crate self as palaver_plugin_sdk;

mod gate;
mod host;
pub mod http;
mod listener;
mod panic;
mod push;
mod scan;
#[cfg(not(target_arch = "wasm32"))]
pub mod testing;
mod types;

pub use gate::{Join, JoinVerdict, Login, Rejection};
pub use host::{Context, Host, Kv, WasmHost};
pub use listener::{AccountChange, AccountEvent, Published};
/// The contracts shared with the host: the reasons table, the commands table and the typed facts.
pub use palaver_api::{self as api, CommandName, Facts, Family, Reason, facts};
pub use push::{Push, PushDecision};
pub use scan::{File, ScanVerdict};
pub use serde_json::{Map, Value, json};
pub use types::{
    CallInfo, Command, CommandOutcome, FactsError, HostError, Level, Member, Message, Notification, Topic, TopicKind,
    User, Verdict,
};

/// A plugin that judges messages.
pub trait PublishFilter: Default + 'static {
    /// The verdict on one message. Runs before the message takes a seq: keep it fast.
    fn before_publish<H: Host>(&mut self, cx: &mut Context<'_, H>, msg: &Message) -> Verdict;
}

/// A plugin that filters offline pushes (world `push-filter`): called once per pushed user, after the host chose
/// the recipient and before it sends. A panic or a breached limit sends the push unchanged.
pub trait PushFilter: Default + 'static {
    /// The decision on one push to one user.
    fn before_push<H: Host>(&mut self, cx: &mut Context<'_, H>, push: &Push) -> PushDecision;
}

/// A plugin that judges uploaded files (world `file-scanner`): called once per pending upload by the host's
/// file-security worker, before the file is served to anyone but its uploader. A panic or a breached limit sends the
/// file to review (`scan-file` fails closed).
pub trait FileScanner: Default + 'static {
    /// The verdict on one file.
    fn scan_file<H: Host>(&mut self, cx: &mut Context<'_, H>, file: &File) -> ScanVerdict;
}

/// A plugin that learns of stored messages and account changes (world `listener`). The host calls it off the
/// request path, from its task queue, **at least once**: a node that dies mid-delivery, or an `Err`, makes the
/// host deliver again (`attempt` counts), up to its attempt limit, after which the event is a dead letter. So act
/// idempotently (by `(topic, seq)` for a message, by [`AccountEvent::id`] for an account change). A panic or a
/// breached limit counts as an `Err`, and an `Err` counts towards the plugin's circuit breaker for the tenant like a
/// fault; the call's key-value writes, events and notifications apply when it returns, `Ok` or `Err`, and are
/// dropped on a panic. Held messages are not delivered. Implement the hook you need, and name it in the manifest
/// (`[hooks.after-publish]`, `[hooks.on-account]`; an empty table is enough): the host runs only the hooks named.
/// The other answers `Ok(())`.
pub trait Listener: Default + 'static {
    /// One stored message. `Err(reason)`: not done, deliver it again later.
    fn after_publish<H: Host>(&mut self, cx: &mut Context<'_, H>, msg: &Published) -> Result<(), String> {
        let _ = (cx, msg);
        Ok(())
    }

    /// One account change. `Err(reason)`: not done, deliver it again later.
    fn on_account<H: Host>(&mut self, cx: &mut Context<'_, H>, event: &AccountEvent) -> Result<(), String> {
        let _ = (cx, event);
        Ok(())
    }
}

/// A plugin that admits logins and joins (world `gate`), on the request path: keep it fast. A panic or a breached
/// limit answers with the hook's failure policy for the tenant (closed by default: the login or join is refused
/// with a retryable 503). Implement the hook you need, and name it in the manifest (`[hooks.on-login]`,
/// `[hooks.before-subscribe]`; an empty table is enough): the host runs only the hooks named. The other allows
/// everything.
pub trait Gate: Default + 'static {
    /// A login whose credentials matched, before the session is authenticated. `Err`: refused with its code.
    fn on_login<H: Host>(&mut self, cx: &mut Context<'_, H>, login: &Login) -> Result<(), Rejection> {
        let _ = (cx, login);
        Ok(())
    }

    /// A join (`{sub}` to a topic the user is not yet a member of), after the host's access checks and before the
    /// subscription is stored.
    fn before_subscribe<H: Host>(&mut self, cx: &mut Context<'_, H>, join: &Join) -> JoinVerdict {
        let _ = (cx, join);
        JoinVerdict::Allow
    }
}

/// A plugin that runs business commands.
pub trait CommandHandler: Default + 'static {
    /// Runs one command.
    fn on_command<H: Host>(&mut self, cx: &mut Context<'_, H>, cmd: &Command) -> CommandOutcome;
}

/// What the export macros expand to; not for plugin code.
#[doc(hidden)]
pub mod __private {
    use crate::bindings::file_scanner::exports::palaver::plugin::scan_file as wit_scan;
    use crate::bindings::gate::exports::palaver::plugin::{before_subscribe as wit_join, on_login as wit_login};
    use crate::bindings::listener::exports::palaver::plugin::{after_publish as wit_ap, on_account as wit_acc};
    use crate::bindings::push_filter::exports::palaver::plugin::before_push as wit_push;
    use crate::bindings::wit;
    use crate::{
        AccountEvent, Command, CommandHandler, Context, File, FileScanner, Gate, Join, Listener, Login, Message,
        PublishFilter, Published, Push, PushFilter, Verdict, WasmHost,
    };
    use serde_json::Value;

    pub use crate::panic::grants_log;
    pub use wit_bindgen;

    /// The plugin value of this instance, created on first use. Creating it first installs the panic hook that
    /// reports a panic's message to the host, when `REPORT_PANICS` (the manifest grants `log`; see `panic.rs`).
    pub fn instance<P: Default, const REPORT_PANICS: bool>(slot: &mut Option<P>) -> &mut P {
        slot.get_or_insert_with(|| {
            crate::panic::install::<REPORT_PANICS>();
            P::default()
        })
    }

    /// `before-publish`, from the wire types to the plugin and back.
    pub fn judge<P: PublishFilter>(
        plugin: &mut P,
        ctx: wit::PublishContext,
        content: String,
        head: Option<String>,
    ) -> wit::Verdict {
        let Ok(content) = serde_json::from_str::<Value>(&content) else {
            return Verdict::reject(400, "content is not JSON").into_wit();
        };
        let head = head.and_then(|h| match serde_json::from_str(&h) {
            Ok(Value::Object(m)) => Some(m),
            _ => None,
        });
        let msg = Message { topic: ctx.topic, topic_kind: ctx.topic_kind.into(), content, head };
        let mut host = WasmHost;
        let mut cx = Context::new(ctx.call.into(), &mut host);
        plugin.before_publish(&mut cx, &msg).into_wit()
    }

    /// `before-push`, from the wire types to the plugin and back.
    pub fn filter<P: PushFilter>(plugin: &mut P, push: wit_push::PushInfo) -> wit_push::PushDecision {
        let call = push.call.clone().into();
        let push = Push::from_wit(push);
        let mut host = WasmHost;
        let mut cx = Context::new(call, &mut host);
        plugin.before_push(&mut cx, &push).into_wit()
    }

    /// `scan-file`, from the wire types to the plugin and back.
    pub fn scan<P: FileScanner>(plugin: &mut P, file: wit_scan::FileInfo) -> wit_scan::ScanVerdict {
        let call = file.call.clone().into();
        let file = File::from_wit(file);
        let mut host = WasmHost;
        let mut cx = Context::new(call, &mut host);
        plugin.scan_file(&mut cx, &file).into_wit()
    }

    /// `after-publish`, from the wire types to the listener and back.
    pub fn published<P: Listener>(plugin: &mut P, msg: wit_ap::PublishedMessage) -> Result<(), String> {
        let call = msg.ctx.call.clone().into();
        let msg = Published::from_wit(msg);
        let mut host = WasmHost;
        let mut cx = Context::new(call, &mut host);
        plugin.after_publish(&mut cx, &msg)
    }

    /// `on-account`, from the wire types to the listener and back.
    pub fn account<P: Listener>(plugin: &mut P, event: wit_acc::AccountEvent) -> Result<(), String> {
        let call = event.call.clone().into();
        let event = AccountEvent::from_wit(event);
        let mut host = WasmHost;
        let mut cx = Context::new(call, &mut host);
        plugin.on_account(&mut cx, &event)
    }

    /// `on-login`, from the wire types to the gate and back.
    pub fn login<P: Gate>(plugin: &mut P, login: wit_login::LoginInfo) -> Result<(), wit::Rejection> {
        let call = login.call.clone().into();
        let login = Login::from_wit(login);
        let mut host = WasmHost;
        let mut cx = Context::new(call, &mut host);
        plugin.on_login(&mut cx, &login).map_err(crate::Rejection::into_wit)
    }

    /// `before-subscribe`, from the wire types to the gate and back.
    pub fn join<P: Gate>(plugin: &mut P, join: wit_join::JoinInfo) -> wit_join::JoinVerdict {
        let call = join.ctx.call.clone().into();
        let join = Join::from_wit(join);
        let mut host = WasmHost;
        let mut cx = Context::new(call, &mut host);
        plugin.before_subscribe(&mut cx, &join).into_wit()
    }

    /// `on-command`, from the wire types to the plugin and back.
    pub fn handle<P: CommandHandler>(
        plugin: &mut P,
        ctx: wit::CallContext,
        name: String,
        args: String,
    ) -> wit::CommandOutcome {
        let args = serde_json::from_str(&args).unwrap_or(Value::Null);
        let mut host = WasmHost;
        let mut cx = Context::new(ctx.into(), &mut host);
        plugin.on_command(&mut cx, &Command { name, args }).into_wit()
    }
}

/// `const __REPORT_PANICS: bool`: whether the manifest beside the crate being built (`plugin.toml`, read at
/// compile time) grants `log`, which decides whether the SDK reports panics through it (see `panic.rs`).
#[doc(hidden)]
#[macro_export]
macro_rules! __report_panics {
    () => {
        const __REPORT_PANICS: bool = ::palaver_plugin_sdk::__private::grants_log(::core::include_str!(
            ::core::concat!(::core::env!("CARGO_MANIFEST_DIR"), "/plugin.toml")
        ));
    };
}

/// What every export macro declares: the export type `__Export`, `__REPORT_PANICS`, and the instance's one plugin
/// value `__PLUGIN`, made on first use (`__private::instance`).
#[doc(hidden)]
#[macro_export]
macro_rules! __instance_cell {
    ($plugin:ty) => {
        struct __Export;
        $crate::__report_panics!();
        ::std::thread_local! {
            static __PLUGIN: ::core::cell::RefCell<Option<$plugin>> = const { ::core::cell::RefCell::new(None) };
        }
    };
}

/// Exports a [`PublishFilter`] as a component of world `publish-filter`.
#[macro_export]
macro_rules! publish_filter {
    ($plugin:ty) => {
        // Natively (tests) there is nothing to export to, and the wasm export names would not even link.
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            use ::palaver_plugin_sdk::bindings::publish_filter::exports::palaver::plugin::before_publish as __bp;
            use ::palaver_plugin_sdk::bindings::wit as __wit;
            $crate::__instance_cell!($plugin);
            impl __bp::Guest for __Export {
                fn judge(ctx: __wit::PublishContext, content: String, head: Option<String>) -> __wit::Verdict {
                    __PLUGIN.with_borrow_mut(|p| {
                        ::palaver_plugin_sdk::__private::judge(
                            ::palaver_plugin_sdk::__private::instance::<_, __REPORT_PANICS>(p),
                            ctx,
                            content,
                            head,
                        )
                    })
                }
            }
            ::palaver_plugin_sdk::bindings::publish_filter::__export_publish_filter!(__Export);
        };
    };
}

/// Exports a [`PushFilter`] as a component of world `push-filter`.
#[macro_export]
macro_rules! push_filter {
    ($plugin:ty) => {
        $crate::__export_one!(
            $plugin, push_filter, before_push, __export_push_filter, filter(push: PushInfo) -> PushDecision
        );
    };
}

/// Exports a [`FileScanner`] as a component of world `file-scanner`.
#[macro_export]
macro_rules! file_scanner {
    ($plugin:ty) => {
        $crate::__export_one!(
            $plugin, file_scanner, scan_file, __export_file_scanner, scan(file: FileInfo) -> ScanVerdict
        );
    };
}

/// Exports a [`Listener`] as a component of world `listener`: one plugin value serves both hooks (the one it does
/// not implement answers `ok`).
#[macro_export]
macro_rules! listener {
    ($plugin:ty) => {
        $crate::__export_two!(
            $plugin, listener, __export_listener,
            after_publish: handle(msg: PublishedMessage) -> Result<(), String> => published,
            on_account: handle(event: AccountEvent) -> Result<(), String> => account
        );
    };
}

/// Exports a [`Gate`] as a component of world `gate`: one plugin value serves both hooks (the one it does not
/// implement allows).
#[macro_export]
macro_rules! gate {
    ($plugin:ty) => {
        $crate::__export_two!(
            $plugin, gate, __export_gate,
            on_login: check(login: LoginInfo) -> Result<(), __i1::Rejection> => login,
            before_subscribe: check(join: JoinInfo) -> __i2::JoinVerdict => join
        );
    };
}

/// The export of a world with two interfaces of one single-argument function each, both served by the plugin's one
/// instance: `$f1` of `$i1` hands its argument to `__private::$p1`, `$f2` of `$i2` to `__private::$p2`. In the
/// result types, `__i1` and `__i2` name the two interfaces' modules.
#[doc(hidden)]
#[macro_export]
macro_rules! __export_two {
    (
        $plugin:ty, $world:ident, $export:ident,
        $i1:ident: $f1:ident($a1:ident: $in1:ident) -> $out1:ty => $p1:ident,
        $i2:ident: $f2:ident($a2:ident: $in2:ident) -> $out2:ty => $p2:ident
    ) => {
        // Natively (tests) there is nothing to export to, and the wasm export names would not even link.
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            use ::palaver_plugin_sdk::bindings::$world::exports::palaver::plugin::$i1 as __i1;
            use ::palaver_plugin_sdk::bindings::$world::exports::palaver::plugin::$i2 as __i2;
            $crate::__instance_cell!($plugin);
            impl __i1::Guest for __Export {
                fn $f1($a1: __i1::$in1) -> $out1 {
                    __PLUGIN.with_borrow_mut(|p| {
                        ::palaver_plugin_sdk::__private::$p1(
                            ::palaver_plugin_sdk::__private::instance::<_, __REPORT_PANICS>(p),
                            $a1,
                        )
                    })
                }
            }
            impl __i2::Guest for __Export {
                fn $f2($a2: __i2::$in2) -> $out2 {
                    __PLUGIN.with_borrow_mut(|p| {
                        ::palaver_plugin_sdk::__private::$p2(
                            ::palaver_plugin_sdk::__private::instance::<_, __REPORT_PANICS>(p),
                            $a2,
                        )
                    })
                }
            }
            ::palaver_plugin_sdk::bindings::$world::$export!(__Export);
        };
    };
}

/// The export of a world with one single-argument function: `$f` of interface `$iface` in world `$world`, which
/// hands its argument to `__private::$f` with the plugin's one instance.
#[doc(hidden)]
#[macro_export]
macro_rules! __export_one {
    ($plugin:ty, $world:ident, $iface:ident, $export:ident, $f:ident($arg:ident: $in:ident) -> $out:ident) => {
        // Natively (tests) there is nothing to export to, and the wasm export names would not even link.
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            use ::palaver_plugin_sdk::bindings::$world::exports::palaver::plugin::$iface as __i;
            $crate::__instance_cell!($plugin);
            impl __i::Guest for __Export {
                fn $f($arg: __i::$in) -> __i::$out {
                    __PLUGIN.with_borrow_mut(|p| {
                        ::palaver_plugin_sdk::__private::$f(
                            ::palaver_plugin_sdk::__private::instance::<_, __REPORT_PANICS>(p),
                            $arg,
                        )
                    })
                }
            }
            ::palaver_plugin_sdk::bindings::$world::$export!(__Export);
        };
    };
}

/// Exports a [`CommandHandler`] as a component of world `command-handler`.
#[macro_export]
macro_rules! command_handler {
    ($plugin:ty) => {
        // Natively (tests) there is nothing to export to, and the wasm export names would not even link.
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            use ::palaver_plugin_sdk::bindings::command_handler::exports::palaver::plugin::on_command as __oc;
            use ::palaver_plugin_sdk::bindings::wit as __wit;
            $crate::__instance_cell!($plugin);
            impl __oc::Guest for __Export {
                fn handle(ctx: __wit::CallContext, name: String, args: String) -> __wit::CommandOutcome {
                    __PLUGIN.with_borrow_mut(|p| {
                        ::palaver_plugin_sdk::__private::handle(
                            ::palaver_plugin_sdk::__private::instance::<_, __REPORT_PANICS>(p),
                            ctx,
                            name,
                            args,
                        )
                    })
                }
            }
            ::palaver_plugin_sdk::bindings::command_handler::__export_command_handler!(__Export);
        };
    };
}

/// Exports a type that is both a [`PublishFilter`] and a [`CommandHandler`] as a component of world `full`: one
/// plugin value serves both hooks.
#[macro_export]
macro_rules! full_plugin {
    ($plugin:ty) => {
        // Natively (tests) there is nothing to export to, and the wasm export names would not even link.
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            use ::palaver_plugin_sdk::bindings::command_handler::exports::palaver::plugin::on_command as __oc;
            use ::palaver_plugin_sdk::bindings::publish_filter::exports::palaver::plugin::before_publish as __bp;
            use ::palaver_plugin_sdk::bindings::wit as __wit;
            $crate::__instance_cell!($plugin);
            impl __bp::Guest for __Export {
                fn judge(ctx: __wit::PublishContext, content: String, head: Option<String>) -> __wit::Verdict {
                    __PLUGIN.with_borrow_mut(|p| {
                        ::palaver_plugin_sdk::__private::judge(
                            ::palaver_plugin_sdk::__private::instance::<_, __REPORT_PANICS>(p),
                            ctx,
                            content,
                            head,
                        )
                    })
                }
            }
            impl __oc::Guest for __Export {
                fn handle(ctx: __wit::CallContext, name: String, args: String) -> __wit::CommandOutcome {
                    __PLUGIN.with_borrow_mut(|p| {
                        ::palaver_plugin_sdk::__private::handle(
                            ::palaver_plugin_sdk::__private::instance::<_, __REPORT_PANICS>(p),
                            ctx,
                            name,
                            args,
                        )
                    })
                }
            }
            // Both worlds' metadata land in the module; wit-component merges them into one world with both hooks.
            ::palaver_plugin_sdk::bindings::publish_filter::__export_publish_filter!(__Export);
            ::palaver_plugin_sdk::bindings::command_handler::__export_command_handler!(__Export);
        };
    };
}

/// The guest side of the `palaver:plugin` WIT package, generated by wit-bindgen: the host imports once (world
/// `platform`), and each hook world (`publish-filter`, `command-handler`, `push-filter`, `file-scanner`, and the
/// two-hook `listener` and `gate`) on top of them with its own export macro. Only the export macros a plugin
/// invokes put hook exports into its component, and only the imports its code calls become component imports, so a
/// plugin asks for nothing it does not use. A plugin of world `full` invokes both export macros: wit-component
/// merges the two worlds' metadata into one component with both hooks.
///
/// Plugin code never touches these modules directly: the crate's types, [`crate::Context`] and the export macros
/// wrap them.
pub mod bindings {
    /// The host imports, shared by every world.
    pub mod platform {
        wit_bindgen::generate!({
            path: "wit",
            world: "palaver:plugin/platform",
            runtime_path: "::palaver_plugin_sdk::__private::wit_bindgen::rt",
            generate_all,
        });
    }

    /// A hook world on top of `platform`'s imports, with its own export macro.
    macro_rules! hook_world {
        ($(#[$doc:meta])* $module:ident, $world:literal, $export:literal, $path:literal) => {
            $(#[$doc])*
            pub mod $module {
                wit_bindgen::generate!({
                    path: "wit",
                    world: $world,
                    with: {
                        "palaver:plugin/types@0.1.3": crate::bindings::platform::palaver::plugin::types,
                        "palaver:plugin/kv@0.1.3": crate::bindings::platform::palaver::plugin::kv,
                        "palaver:plugin/directory@0.1.3": crate::bindings::platform::palaver::plugin::directory,
                        "palaver:plugin/events@0.1.3": crate::bindings::platform::palaver::plugin::events,
                        "palaver:plugin/notifications@0.1.3": crate::bindings::platform::palaver::plugin::notifications,
                        "palaver:plugin/log@0.1.3": crate::bindings::platform::palaver::plugin::log,
                        "palaver:plugin/clock@0.1.3": crate::bindings::platform::palaver::plugin::clock,
                        "palaver:plugin/settings@0.1.3": crate::bindings::platform::palaver::plugin::settings,
                        "palaver:plugin/http@0.1.3": crate::bindings::platform::palaver::plugin::http,
                    },
                    pub_export_macro: true,
                    export_macro_name: $export,
                    default_bindings_module: $path,
                    runtime_path: "::palaver_plugin_sdk::__private::wit_bindgen::rt",
                });
            }
        };
    }

    hook_world!(
        /// A plugin that judges messages.
        publish_filter,
        "palaver:plugin/publish-filter",
        "__export_publish_filter",
        "::palaver_plugin_sdk::bindings::publish_filter"
    );
    hook_world!(
        /// A plugin that runs business commands.
        command_handler,
        "palaver:plugin/command-handler",
        "__export_command_handler",
        "::palaver_plugin_sdk::bindings::command_handler"
    );
    hook_world!(
        /// A plugin that filters offline pushes (since 0.1.1).
        push_filter,
        "palaver:plugin/push-filter",
        "__export_push_filter",
        "::palaver_plugin_sdk::bindings::push_filter"
    );
    hook_world!(
        /// A plugin that judges uploaded files (since 0.1.2).
        file_scanner,
        "palaver:plugin/file-scanner",
        "__export_file_scanner",
        "::palaver_plugin_sdk::bindings::file_scanner"
    );
    hook_world!(
        /// A plugin that learns of stored messages and account changes (since 0.1.3).
        listener,
        "palaver:plugin/listener",
        "__export_listener",
        "::palaver_plugin_sdk::bindings::listener"
    );
    hook_world!(
        /// A plugin that admits logins and joins (since 0.1.3).
        gate,
        "palaver:plugin/gate",
        "__export_gate",
        "::palaver_plugin_sdk::bindings::gate"
    );

    /// The shared WIT types, under a short name.
    pub use platform::palaver::plugin::types as wit;
}

#[cfg(test)]
mod tests {
    /// The WIT package travels with the crate: every `generate!` reads `wit` inside it, never a path out of it, so
    /// the SDK builds wherever its crate is (a path dependency of a plugin in another repository, or a package).
    #[test]
    fn the_wit_files_are_inside_the_crate() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        assert!(dir.join("wit/worlds.wit").is_file());
        let paths: Vec<&str> = include_str!("lib.rs")
            .lines()
            .filter_map(|l| l.trim().strip_prefix("path: \""))
            .map(|rest| rest.split('"').next().unwrap_or(rest))
            .collect();
        assert_eq!(paths, ["wit", "wit"], "the paths given to wit_bindgen::generate!");
    }
}
