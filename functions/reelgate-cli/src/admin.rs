//! `reelgate admin`: account operations as JSON on stdout, against the local data directory or
//! (with `--backend aws`) the deployed DynamoDB table.

use anyhow::Context;
use reelgate::config::Config;
use reelgate::domain::accounts::Accounts;
use reelgate::ports::store::ItemStore;
use rust_decimal::Decimal;
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(clap::Args)]
pub struct AdminArgs {
    /// Local data directory (as for `serve`).
    #[arg(long, global = true, env = "REELGATE_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// `local` (the data directory) or `aws` (DynamoDB named by REELGATE_TABLE).
    #[arg(long, global = true, default_value = "local", env = "REELGATE_BACKEND")]
    backend: String,
    #[command(subcommand)]
    command: AdminCommand,
}

#[derive(clap::Subcommand)]
enum AdminCommand {
    /// Organizations.
    #[command(subcommand)]
    Org(OrgCommand),
    /// People (users) in an organization.
    #[command(subcommand)]
    User(UserCommand),
    /// API keys.
    #[command(subcommand)]
    Key(KeyCommand),
    /// Credits.
    #[command(subcommand)]
    Credits(CreditsCommand),
    /// Plans.
    #[command(subcommand)]
    Plan(PlanCommand),
    /// Console sessions (the credential a console login yields).
    #[command(subcommand, name = "console-session")]
    ConsoleSession(ConsoleCommand),
}

#[derive(clap::Subcommand)]
enum OrgCommand {
    Create {
        #[arg(long)]
        name: String,
        #[arg(long, default_value = reelgate::domain::accounts::DEFAULT_PLAN)]
        plan: String,
        #[arg(long, default_value = "usd")]
        currency: String,
        #[arg(long, default_value = "0")]
        credits: Decimal,
    },
    Show {
        #[arg(long)]
        org: String,
    },
}

#[derive(clap::Subcommand)]
enum UserCommand {
    Create {
        #[arg(long)]
        org: String,
        #[arg(long)]
        email: String,
    },
    /// Takes a person out of an organization; their API keys and console sessions stop working.
    Remove {
        #[arg(long)]
        org: String,
        #[arg(long)]
        user: String,
    },
}

#[derive(clap::Subcommand)]
enum KeyCommand {
    Create {
        #[arg(long)]
        user: String,
    },
    Revoke {
        #[arg(long = "key-id")]
        key_id: String,
    },
}

#[derive(clap::Subcommand)]
enum CreditsCommand {
    Add {
        #[arg(long)]
        org: String,
        #[arg(long)]
        amount: Decimal,
    },
}

#[derive(clap::Subcommand)]
enum PlanCommand {
    Set {
        #[arg(long)]
        org: String,
        #[arg(long)]
        plan: String,
    },
}

#[derive(clap::Subcommand)]
enum ConsoleCommand {
    Create {
        #[arg(long)]
        user: String,
        #[arg(long)]
        org: String,
    },
}

async fn open_store(args: &AdminArgs, config: &Config) -> anyhow::Result<Arc<dyn ItemStore>> {
    match args.backend.as_str() {
        "local" => {
            let dir = args
                .data_dir
                .clone()
                .unwrap_or_else(crate::default_data_dir);
            let db = reelgate_embedded::db::Database::open(&dir.join("reelgate.sqlite3"))
                .with_context(|| format!("opening {}", dir.display()))?;
            Ok(Arc::new(reelgate_embedded::store::SqliteItemStore::new(db)))
        }
        "aws" => crate::aws::open_store(config).await,
        other => anyhow::bail!("unknown backend {other}; use local or aws"),
    }
}

pub async fn run(args: AdminArgs, config: &Config) -> anyhow::Result<()> {
    let store = open_store(&args, config).await?;
    let catalog = reelgate::domain::catalog::Catalog::load(config.catalog_path.as_deref())?;
    let accounts = Accounts::new(store.as_ref());
    let check_plan = |plan: &str| -> anyhow::Result<()> {
        if catalog.plan(plan).is_none() {
            let known: Vec<&str> = catalog.plans.iter().map(|p| p.id.as_str()).collect();
            anyhow::bail!("unknown plan {plan}; the catalog has {}", known.join(", "));
        }
        Ok(())
    };
    let output = match args.command {
        AdminCommand::Org(OrgCommand::Create {
            name,
            plan,
            currency,
            credits,
        }) => {
            check_plan(&plan)?;
            json!(
                accounts
                    .create_org(&name, &plan, &currency, credits)
                    .await?
            )
        }
        AdminCommand::Org(OrgCommand::Show { org }) => {
            let o = accounts.org(&org).await?;
            let members = accounts.members(&org).await?;
            let mut v = json!(o);
            v["members"] = json!(members);
            v
        }
        AdminCommand::User(UserCommand::Create { org, email }) => {
            json!(accounts.create_person(&org, &email).await?)
        }
        AdminCommand::User(UserCommand::Remove { org, user }) => {
            accounts.remove_member(&org, &user).await?;
            json!({"org": org, "user": user, "removed": true})
        }
        AdminCommand::Key(KeyCommand::Create { user }) => {
            json!(accounts.create_api_key(&user).await?)
        }
        AdminCommand::Key(KeyCommand::Revoke { key_id }) => {
            accounts.revoke_api_key(&key_id).await?;
            json!({"id": key_id, "revoked": true})
        }
        AdminCommand::Credits(CreditsCommand::Add { org, amount }) => {
            json!(accounts.add_credits(&org, amount).await?)
        }
        AdminCommand::Plan(PlanCommand::Set { org, plan }) => {
            check_plan(&plan)?;
            json!(accounts.set_plan(&org, &plan).await?)
        }
        AdminCommand::ConsoleSession(ConsoleCommand::Create { user, org }) => {
            json!(accounts.create_console_session(&user, &org).await?)
        }
    };
    println!("{}", serde_json::to_string_pretty(&output)?);
    Ok(())
}
