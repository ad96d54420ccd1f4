//! The `palaver` binary: `serve` runs a node, `config print` shows the effective configuration, `apikey` makes
//! a key for the configured salt.

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use palaver_server::config::{CliOverrides, Config};
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
    Serve(CommonArgs),
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
    /// Adds a fresh API key to a tenant and prints it.
    Key { code: String },
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Prints the effective configuration (defaults < file < environment < flags) as TOML.
    Print(CommonArgs),
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
        Command::Serve(args) => {
            let cfg = args.load()?;
            init_tracing(&cfg.log.level);
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            runtime.block_on(wiring::serve(cfg))
        }
        Command::Config { command: ConfigCommand::Print(args) } => {
            print!("{}", args.load()?.to_redacted_toml());
            Ok(())
        }
        Command::Tenant { common, command } => {
            let cfg = common.load()?;
            init_tracing("warn");
            let command = match command {
                TenantCmd::Create { code, name } => TenantCommand::Create { code, name },
                TenantCmd::List => TenantCommand::List,
                TenantCmd::Disable { code } => TenantCommand::SetState { code, active: false },
                TenantCmd::Enable { code } => TenantCommand::SetState { code, active: true },
                TenantCmd::Key { code } => TenantCommand::NewKey { code },
            };
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            runtime.block_on(palaver_server::tenants::run(&cfg, command))
        }
        Command::Apikey { common, app_id } => {
            let cfg = common.load()?;
            let salt = palaver_gateway::apikey::decode_salt(&cfg.api.key_salt)?;
            println!("{}", palaver_gateway::apikey::make_key(app_id, &salt));
            Ok(())
        }
    }
}

fn init_tracing(level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("PALAVER_LOG")
        .or_else(|_| tracing_subscriber::EnvFilter::try_new(level))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();
}
