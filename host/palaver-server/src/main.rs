//! The `palaver` binary: `serve` runs a node, `config print` shows the effective configuration, `config check`
//! validates it without starting, `apikey` makes a key for the configured salt, `tenant …` manages tenants,
//! `admin command` sends an admin command.

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use palaver_server::config::{CliOverrides, Config, LogFormat};
use palaver_server::otlp::Otlp;
use palaver_server::tenants::TenantCommand;
use palaver_server::wiring;
use std::path::PathBuf;

#[derive(Parser)]
#[command(name = "palaver", version, about = "A multi-tenant Tinode-protocol instant-messaging server")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Runs the server (embedded SQLite store unless configured otherwise).
    Serve {
        #[command(flatten)]
        common: CommonArgs,
        /// Development only: run a scale-out node with the Tinode demo API key salt or without a shared token
        /// key, which `serve` otherwise refuses.
        #[arg(long)]
        dev: bool,
    },
    /// Configuration commands.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Manages tenants (scale-out store only).
    Tenant {
        #[command(flatten)]
        common: CommonArgs,
        #[command(subcommand)]
        command: TenantCmd,
    },
    /// Admin commands, as an Admin Server sends them.
    Admin {
        #[command(flatten)]
        common: CommonArgs,
        #[command(subcommand)]
        command: AdminCmd,
    },
    /// Prints a new API key signed with the configured salt.
    Apikey {
        #[command(flatten)]
        common: CommonArgs,
        /// The application id to put in the key.
        #[arg(long, default_value_t = 1)]
        app_id: u32,
    },
}

#[derive(Subcommand)]
enum TenantCmd {
    /// Creates a tenant and its database, and prints it with a fresh API key.
    Create {
        /// A short code: 1–32 of a–z, 0–9 and _.
        code: String,
        /// A display name (defaults to the code).
        #[arg(long)]
        name: Option<String>,
    },
    /// Lists the tenants.
    List,
    /// Disables a tenant: its clients are refused with HTTP 403.
    Disable { code: String },
    /// Enables a disabled tenant.
    Enable { code: String },
    /// Manages a tenant's API keys.
    Key {
        #[command(subcommand)]
        command: KeyCmd,
    },
}

#[derive(Subcommand)]
enum KeyCmd {
    /// Adds a fresh API key to a tenant and prints it; the tenant's other keys keep working.
    Add { code: String },
    /// Adds a fresh API key, prints it, and revokes every other key of the tenant.
    Rotate { code: String },
    /// Revokes one API key of a tenant.
    Revoke { code: String, key: String },
}

#[derive(Subcommand)]
enum AdminCmd {
    /// Produces an admin command to the configured queue; with --wait, prints its result.
    Command {
        /// The command type, e.g. user.disable, group.member.mute.
        #[arg(long = "type")]
        kind: String,
        /// The tenant: its id or its code.
        #[arg(long)]
        tenant: String,
        /// The payload, a JSON object, e.g. '{"user":"usr…"}'.
        #[arg(long, default_value = "{}")]
        payload: String,
        /// The command id (reuse one to retry a command); a fresh one by default.
        #[arg(long)]
        command_id: Option<String>,
        /// Waits for the result and prints it (exit status 1 unless it succeeded).
        #[arg(long)]
        wait: bool,
        /// How long --wait waits, in milliseconds.
        #[arg(long, default_value_t = 30_000)]
        timeout_ms: u64,
    },
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Prints the effective configuration (defaults < file < environment < flags) as TOML.
    Print(CommonArgs),
    /// Validates the configuration (file, environment and flags) as `serve` would, without starting; exit 1
    /// with the reason when it is not usable.
    Check(CommonArgs),
}

#[derive(Args, Clone)]
struct CommonArgs {
    /// A TOML configuration file.
    #[arg(long, short = 'c')]
    config: Option<PathBuf>,
    /// Listen address, e.g. 127.0.0.1:6060.
    #[arg(long)]
    listen: Option<String>,
    /// Data directory for the embedded store.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// This node's id.
    #[arg(long)]
    node_id: Option<String>,
}

impl CommonArgs {
    fn load(&self) -> anyhow::Result<Config> {
        let cli = CliOverrides {
            listen: self.listen.clone(),
            data_dir: self.data_dir.clone(),
            node_id: self.node_id.clone(),
        };
        Config::load(self.config.as_deref(), std::env::vars(), &cli).context("loading the configuration")
    }
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve { common, dev } => {
            let cfg = common.load()?;
            let unsafe_settings = cfg.scale_out_hazards();
            if !dev && !unsafe_settings.is_empty() {
                anyhow::bail!(
                    "refusing to serve a scale-out node with development settings:\n  - {}\n\
                     set them, or pass --dev to run anyway (development only)",
                    unsafe_settings.join("\n  - ")
                );
            }
            // Built before the runtime, and shut down after it, since its client blocks on a thread of its own.
            let otlp = match cfg.log.otlp.endpoint.is_empty() {
                true => None,
                false => Some(Otlp::start(&cfg.log.otlp, &cfg.server.node_id)?),
            };
            init_tracing(&cfg.log.level, cfg.log.format, otlp.as_ref());
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            let served = runtime.block_on(wiring::serve(cfg));
            drop(runtime);
            if let Some(otlp) = otlp {
                otlp.shutdown();
            }
            served
        }
        Command::Config { command: ConfigCommand::Print(args) } => {
            print!("{}", args.load()?.to_redacted_toml());
            Ok(())
        }
        Command::Config { command: ConfigCommand::Check(args) } => {
            // Loading validates: the same checks `serve` makes before it opens anything.
            let cfg = args.load()?;
            let hazards = cfg.scale_out_hazards();
            if !hazards.is_empty() {
                anyhow::bail!("`serve` refuses this scale-out node without --dev:\n  - {}", hazards.join("\n  - "));
            }
            println!("configuration is valid");
            Ok(())
        }
        Command::Tenant { common, command } => {
            let cfg = common.load()?;
            init_tracing("warn", cfg.log.format, None);
            let command = match command {
                TenantCmd::Create { code, name } => TenantCommand::Create { code, name },
                TenantCmd::List => TenantCommand::List,
                TenantCmd::Disable { code } => TenantCommand::SetState { code, active: false },
                TenantCmd::Enable { code } => TenantCommand::SetState { code, active: true },
                TenantCmd::Key { command: KeyCmd::Add { code } } => TenantCommand::NewKey { code },
                TenantCmd::Key { command: KeyCmd::Rotate { code } } => TenantCommand::RotateKeys { code },
                TenantCmd::Key { command: KeyCmd::Revoke { code, key } } => TenantCommand::RevokeKey { code, key },
            };
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            runtime.block_on(palaver_server::tenants::run(&cfg, command))
        }
        Command::Admin {
            common,
            command: AdminCmd::Command { kind, tenant, payload, command_id, wait, timeout_ms },
        } => {
            let cfg = common.load()?;
            init_tracing("warn", cfg.log.format, None);
            let wait = wait.then(|| std::time::Duration::from_millis(timeout_ms));
            let request = palaver_server::admin_cli::CommandRequest { kind, tenant, payload, command_id, wait };
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            if let Some(result) = runtime.block_on(palaver_server::admin_cli::run(&cfg, request))? {
                println!("{}", serde_json::to_string_pretty(&result)?);
                if result.status != "succeeded" {
                    std::process::exit(1);
                }
            }
            Ok(())
        }
        Command::Apikey { common, app_id } => {
            let cfg = common.load()?;
            let salt = palaver_gateway::apikey::decode_salt(&cfg.api.key_salt)?;
            println!("{}", palaver_gateway::apikey::make_key(app_id, &salt));
            Ok(())
        }
    }
}

/// Installs the log output for `level` and `format`, and with `otlp` the span export that feeds it too.
fn init_tracing(level: &str, format: LogFormat, otlp: Option<&Otlp>) {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let filter = tracing_subscriber::EnvFilter::try_from_env("PALAVER_LOG")
        .or_else(|_| tracing_subscriber::EnvFilter::try_new(level))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let logs = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let logs = match format {
        LogFormat::Text => logs.boxed(),
        // One object per line with the span fields (tenant, user, topic where a span carries them) flattened in.
        LogFormat::Json => logs.json().flatten_event(true).with_current_span(true).with_span_list(false).boxed(),
    };
    // The filter applies to both: a span the log level leaves out is not exported either.
    tracing_subscriber::registry().with(filter).with(logs).with(otlp.map(Otlp::layer)).init();
}
