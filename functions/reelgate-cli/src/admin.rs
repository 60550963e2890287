//! `reelgate admin`: account operations as JSON on stdout, against the local data directory or
//! (with `--backend aws`) the deployed DynamoDB table.

use anyhow::Context as _;
use reelgate::config::Config;
use reelgate::domain::accounts::Accounts;
use reelgate::domain::catalog::RateLimits;
use reelgate::domain::{erasure, Context};
use reelgate::ports::blobs::BlobStore;
use reelgate::ports::store::ItemStore;
use rust_decimal::Decimal;
use serde_json::{json, Value};
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
    /// What an organization spent, in daily UTC buckets: the report `GET /v1/usage` answers,
    /// every page of it.
    Usage {
        #[arg(long)]
        org: String,
        /// Unix seconds or a UTC date (YYYY-MM-DD).
        #[arg(long)]
        since: String,
        /// Unix seconds or a UTC date (YYYY-MM-DD), exclusive (default now).
        #[arg(long)]
        until: Option<String>,
        /// model, api_key, kind (repeat, or a comma-separated list).
        #[arg(long = "group-by")]
        group_by: Vec<String>,
    },
    /// Prints a one-time sign-in link to the console for a member of an organization (valid
    /// for REELGATE_CONSOLE_LINK_TTL_SECS, once).
    #[command(name = "console-link")]
    ConsoleLink {
        #[arg(long)]
        user: String,
        #[arg(long)]
        org: String,
        /// The URL people reach the service at (default REELGATE_PUBLIC_URL, else
        /// http://127.0.0.1:8080).
        #[arg(long)]
        public_url: Option<String>,
    },
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
    /// The organization, its members and the bytes it stores by kind.
    Show {
        #[arg(long)]
        org: String,
    },
    /// Erases the organization's data (docs/data.md): jobs, outputs, files, stored responses,
    /// agreements and memberships. Keeps the account with its balance, the ledger and the
    /// moderation records. Refused while renders are in flight unless --force.
    Delete {
        #[arg(long)]
        org: String,
        /// Cancel renders in flight (unbilled) first instead of refusing.
        #[arg(long)]
        force: bool,
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
    /// Removes a person from the organization with their own data (membership, agreements,
    /// stored responses); their keys and console sessions stop working. The organization's videos
    /// and files stay. Refused while renders they started are in flight unless --force.
    Remove {
        #[arg(long)]
        org: String,
        #[arg(long)]
        user: String,
        /// Cancel their renders in flight (unbilled) first instead of refusing.
        #[arg(long)]
        force: bool,
    },
    /// Writes the email index entries missing for an organization's members (people created
    /// before the index existed), so OpenID Connect sign-in finds them by verified email.
    /// Idempotent; run it once per organization.
    #[command(name = "backfill-email")]
    BackfillEmail {
        #[arg(long)]
        org: String,
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
    /// A key's own rate limits, over its plan's per-key limits (docs/traffic-control.md).
    #[command(subcommand)]
    Limits(KeyLimitsCommand),
    /// A key's monthly spending cap (UTC calendar month, the organization's currency): shows
    /// it, sets it with `--monthly`, removes it with `--clear`.
    Budget {
        #[arg(long = "key-id")]
        key_id: String,
        #[arg(long, conflicts_with = "clear")]
        monthly: Option<Decimal>,
        #[arg(long)]
        clear: bool,
    },
}

#[derive(clap::Subcommand)]
enum KeyLimitsCommand {
    /// Sets the key's overrides; a limit not given falls back to the plan's.
    Set {
        #[arg(long = "key-id")]
        key_id: String,
        #[arg(long)]
        requests_per_minute: Option<u64>,
        #[arg(long)]
        tokens_per_minute: Option<u64>,
        #[arg(long)]
        video_creates_per_minute: Option<u64>,
    },
    /// The key's overrides and the limits that apply to it with its plan's.
    Show {
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
    /// Every plan's rate limits, per key and per organization, from the catalog.
    Limits,
}

/// The stores the admin command works on: the local data directory's, or the deployed ones.
struct Stores {
    store: Arc<dyn ItemStore>,
    blobs: Arc<dyn BlobStore>,
}

async fn open_stores(args: &AdminArgs, config: &Config) -> anyhow::Result<Stores> {
    match args.backend.as_str() {
        "local" => {
            let dir = args
                .data_dir
                .clone()
                .unwrap_or_else(crate::default_data_dir);
            // The public URL only matters for signing blob URLs, which admin never does.
            let backend = reelgate_embedded::backend::LocalBackend::open(&dir, "http://127.0.0.1")
                .with_context(|| format!("opening {}", dir.display()))?;
            Ok(Stores {
                store: backend.store,
                blobs: backend.blobs,
            })
        }
        "aws" => Ok(Stores {
            store: crate::aws::open_store(config).await?,
            blobs: crate::aws::open_blobs(config).await?,
        }),
        other => anyhow::bail!("unknown backend {other}; use local or aws"),
    }
}

pub async fn run(args: AdminArgs, config: &Config) -> anyhow::Result<()> {
    let Stores { store, blobs } = open_stores(&args, config).await?;
    let catalog = reelgate::domain::catalog::Catalog::load(config.catalog_path.as_deref())?;
    let accounts = Accounts::new(store.as_ref());
    // Admin fetches no caller URL; the context wants a fetcher, and this one is guarded.
    let fetcher = reelgate::adapters::guarded_fetch::GuardedFetcher::default();
    let cx = Context {
        store: store.as_ref(),
        blobs: blobs.as_ref(),
        catalog: &catalog,
        settings: &config.settings,
        fetcher: &fetcher,
        webhooks: None,
    };
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
            v["stored_bytes"] = json!(erasure::stored_bytes(cx, &org).await?);
            v
        }
        AdminCommand::Org(OrgCommand::Delete { org, force }) => {
            json!(erasure::erase_org(cx, &org, force).await?)
        }
        AdminCommand::User(UserCommand::Remove { org, user, force }) => {
            json!(erasure::remove_person(cx, &org, &user, force).await?)
        }
        AdminCommand::User(UserCommand::BackfillEmail { org }) => {
            accounts.org(&org).await?;
            json!(
                reelgate::domain::accounts::identities::backfill_email(store.as_ref(), &org)
                    .await?
            )
        }
        AdminCommand::User(UserCommand::Create { org, email }) => {
            json!(accounts.create_person(&org, &email).await?)
        }
        AdminCommand::Key(KeyCommand::Create { user }) => {
            json!(accounts.create_api_key(&user).await?)
        }
        AdminCommand::Key(KeyCommand::Revoke { key_id }) => {
            accounts.revoke_api_key(&key_id).await?;
            json!({"id": key_id, "revoked": true})
        }
        AdminCommand::Key(KeyCommand::Limits(KeyLimitsCommand::Set {
            key_id,
            requests_per_minute,
            tokens_per_minute,
            video_creates_per_minute,
        })) => {
            let limits = RateLimits {
                requests_per_minute,
                tokens_per_minute,
                video_creates_per_minute,
            };
            json!({"id": key_id, "limits": accounts.set_key_limits(&key_id, &limits).await?})
        }
        AdminCommand::Key(KeyCommand::Limits(KeyLimitsCommand::Show { key_id })) => {
            let holder = accounts.api_key_holder(&key_id).await?;
            let plan = accounts.org(&holder.org).await?.plan;
            let (key, org_limits) =
                reelgate::domain::billing::rate_limits::limits_for(&holder, catalog.plan(&plan));
            json!({"id": key_id, "org": holder.org, "plan": plan, "own": holder.limits,
                   "effective": key, "organization": org_limits})
        }
        AdminCommand::Key(KeyCommand::Budget {
            key_id,
            monthly,
            clear,
        }) => {
            let holder = if clear || monthly.is_some() {
                accounts.set_key_budget(&key_id, monthly).await?
            } else {
                accounts.api_key_holder(&key_id).await?
            };
            match holder.budget {
                Some(b) => json!({"id": key_id, "monthly_budget": b.monthly.to_string(),
                                  "month": b.month, "committed": b.committed.to_string()}),
                None => json!({"id": key_id, "monthly_budget": null}),
            }
        }
        AdminCommand::Plan(PlanCommand::Limits) => {
            json!(catalog
                .plans
                .iter()
                .map(|p| json!({"plan": p.id, "per_key": p.key_limits, "per_organization": p.org_limits}))
                .collect::<Vec<_>>())
        }
        AdminCommand::Credits(CreditsCommand::Add { org, amount }) => {
            json!(accounts.add_credits(&org, amount).await?)
        }
        AdminCommand::Plan(PlanCommand::Set { org, plan }) => {
            check_plan(&plan)?;
            json!(accounts.set_plan(&org, &plan).await?)
        }
        AdminCommand::Usage {
            org,
            since,
            until,
            group_by,
        } => usage_report(cx, &org, &since, until.as_deref(), &group_by).await?,
        AdminCommand::ConsoleLink {
            user,
            org,
            public_url,
        } => {
            let base = public_url
                .or_else(|| config.public_url.clone())
                .unwrap_or_else(|| "http://127.0.0.1:8080".into());
            let ttl = config.settings.console_link_ttl.as_secs() as i64;
            let link = reelgate::domain::accounts::console::Console::new(store.as_ref())
                .create_link(&user, &org, ttl)
                .await?;
            let mut v = json!(link);
            v["url"] = json!(link.url(&base));
            v
        }
    };
    println!("{}", serde_json::to_string_pretty(&output)?);
    Ok(())
}

/// Every page of the organization's usage report, as one report.
async fn usage_report(
    cx: Context<'_>,
    org: &str,
    since: &str,
    until: Option<&str>,
    group_by: &[String],
) -> anyhow::Result<serde_json::Value> {
    use reelgate::domain::billing::usage_report::{self, parse_time, GroupBy, ReportRequest};
    let time = |s: &str| {
        parse_time(s).with_context(|| format!("{s} is neither Unix seconds nor YYYY-MM-DD"))
    };
    let mut groups = Vec::new();
    for g in group_by.iter().flat_map(|g| g.split(',')).map(str::trim) {
        let parsed = GroupBy::parse(g)
            .with_context(|| format!("unknown group {g}; use model, api_key or kind"))?;
        if !groups.contains(&parsed) {
            groups.push(parsed);
        }
    }
    // The organization must exist (a typo would otherwise print an empty report).
    Accounts::new(cx.store).org(org).await?;
    let start = time(since)?;
    let end = match until {
        Some(u) => time(u)?,
        None => reelgate::ports::store::now_secs().max(start + 1),
    };
    let mut req = ReportRequest {
        start,
        end,
        group_by: groups,
        limit: usage_report::MAX_DAYS,
        page: None,
    };
    let mut whole = usage_report::report(cx.store, org, &req).await?;
    while let Some(next) = whole.next_page.take() {
        req.page = Some(next);
        let page = usage_report::report(cx.store, org, &req).await?;
        whole.data.extend(page.data);
        whole.next_page = page.next_page;
    }
    whole.has_more = false;
    let totals: Vec<Value> = usage_report::total(&whole)
        .into_iter()
        .map(|(currency, amount)| json!({"currency": currency, "amount": amount.normalize().to_string()}))
        .collect();
    let mut report = json!(whole);
    report["totals"] = json!(totals);
    Ok(report)
}
