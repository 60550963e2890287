//! A key holder's own controls over their API key: its rate-limit overrides and its monthly
//! budget, as the console shows and sets them (docs/console.md, docs/traffic-control.md).
//!
//! Who may: the domain has no organization roles, so only the key's own holder sets them, for
//! their own keys; anyone else's key does not exist to them. A holder may tighten a key, never
//! loosen it past the plan: an override above the plan's per-key limit is refused, naming the
//! field. (An operator's `reelgate admin key limits set` is not bounded by the plan.)

use crate::domain::accounts::{Accounts, Caller};
use crate::domain::catalog::{Plan, RateLimits};
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::params::{RequestBody, ShapeFault};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use std::str::FromStr;

/// The largest override a holder can type: far above any plan, small enough for every store.
const MAX_LIMIT: u64 = 1_000_000_000_000;

pub const FIELDS: [&str; 3] = [
    "requests_per_minute",
    "tokens_per_minute",
    "video_creates_per_minute",
];

/// One limit as it applies to a key: the key's override, the plan's per-key limit, and which wins.
#[derive(Clone, Debug, Serialize, PartialEq, utoipa::ToSchema)]
pub struct LimitView {
    /// What applies; null is unlimited.
    pub effective: Option<u64>,
    /// `key` when the key's override applies, `plan` when the plan's does.
    #[schema(value_type = String)]
    pub source: &'static str,
    pub key: Option<u64>,
    pub plan: Option<u64>,
}

/// `GET|POST /console/api/keys/{key_id}/limits`: a key's limits and budget, as its holder sees
/// them.
#[derive(Clone, Debug, Serialize, PartialEq, utoipa::ToSchema)]
pub struct KeyControls {
    #[schema(value_type = String, pattern = "^api_key\\.limits$")]
    pub object: &'static str,
    pub id: String,
    pub plan: String,
    pub currency: String,
    pub requests_per_minute: LimitView,
    pub tokens_per_minute: LimitView,
    pub video_creates_per_minute: LimitView,
    /// The monthly cap (decimal string, the organization's currency), or None.
    #[serde(with = "rust_decimal::serde::str_option")]
    #[schema(value_type = Option<String>)]
    pub monthly_budget: Option<Decimal>,
    /// Spent plus reserved this month (UTC) against the budget; zero without a budget.
    #[serde(with = "rust_decimal::serde::str")]
    #[schema(value_type = String)]
    pub committed: Decimal,
    /// `YYYY_MM` of the month `committed` is for.
    pub month: String,
}

fn get(limits: &RateLimits, field: &str) -> Option<u64> {
    match field {
        "requests_per_minute" => limits.requests_per_minute,
        "tokens_per_minute" => limits.tokens_per_minute,
        _ => limits.video_creates_per_minute,
    }
}

/// The limits that apply to a caller: its key's overrides over its plan's per-key limits, and
/// its plan's per-organization limits.
pub fn limits_for(caller: &Caller, plan: Option<&Plan>) -> (RateLimits, RateLimits) {
    let plan_key = plan.map(|p| p.key_limits.clone()).unwrap_or_default();
    let key = RateLimits {
        requests_per_minute: caller
            .limits
            .requests_per_minute
            .or(plan_key.requests_per_minute),
        tokens_per_minute: caller
            .limits
            .tokens_per_minute
            .or(plan_key.tokens_per_minute),
        video_creates_per_minute: caller
            .limits
            .video_creates_per_minute
            .or(plan_key.video_creates_per_minute),
    };
    let org = plan.map(|p| p.org_limits.clone()).unwrap_or_default();
    (key, org)
}

/// The view of a key: its overrides over its plan's per-key limits (the same rule the limiter
/// applies, [`limits_for`]) and its budget.
pub fn view(holder: &Caller, plan_id: &str, plan: Option<&Plan>, currency: &str) -> KeyControls {
    let (effective, _) = limits_for(holder, plan);
    let plan_limits = plan.map(|p| p.key_limits.clone()).unwrap_or_default();
    let one = |field: &str| LimitView {
        effective: get(&effective, field),
        source: if get(&holder.limits, field).is_some() {
            "key"
        } else {
            "plan"
        },
        key: get(&holder.limits, field),
        plan: get(&plan_limits, field),
    };
    let now = crate::ports::store::now_secs();
    KeyControls {
        object: "api_key.limits",
        id: holder.key_id().to_owned(),
        plan: plan_id.to_owned(),
        currency: currency.to_owned(),
        requests_per_minute: one("requests_per_minute"),
        tokens_per_minute: one("tokens_per_minute"),
        video_creates_per_minute: one("video_creates_per_minute"),
        monthly_budget: holder.budget.as_ref().map(|b| b.monthly),
        committed: holder
            .budget
            .as_ref()
            .map(|b| b.committed)
            .unwrap_or_default(),
        month: holder
            .budget
            .as_ref()
            .map(|b| b.month.clone())
            .unwrap_or_else(|| super::key_budget::month_of(now)),
    }
}

/// `POST /console/api/keys/{key_id}/limits`: what a holder asks for, every override and the
/// budget; an absent or null limit falls back to the plan's, an absent or null budget removes
/// it. A limit above the plan's per-key limit is refused (`above_plan_limit`, naming the field).
#[derive(Clone, Debug, PartialEq, serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"requests_per_minute": 60, "tokens_per_minute": null, "video_creates_per_minute": null, "monthly_budget": "25.00"}))]
pub struct KeyLimitsRequest {
    #[serde(default)]
    #[schema(schema_with = limit_schema)]
    pub requests_per_minute: Option<u64>,
    #[serde(default)]
    #[schema(schema_with = limit_schema)]
    pub tokens_per_minute: Option<u64>,
    #[serde(default)]
    #[schema(schema_with = limit_schema)]
    pub video_creates_per_minute: Option<u64>,
    /// A non-negative decimal string with at most 6 places.
    #[serde(default, deserialize_with = "decimal_string")]
    #[schema(value_type = Option<String>)]
    pub monthly_budget: Option<Decimal>,
}

/// A limit override: a whole number from 1 to `MAX_LIMIT`, or null for the plan's limit.
fn limit_schema() -> utoipa::openapi::schema::Schema {
    use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Integer, Type::Null]))
        .minimum(Some(1))
        .maximum(Some(MAX_LIMIT))
        .into()
}

/// Money is sent as a string (a JSON number would pass through a float); null is no budget.
fn decimal_string<'de, D: serde::Deserializer<'de>>(value: D) -> Result<Option<Decimal>, D::Error> {
    let Some(text) = Option::<String>::deserialize(value)? else {
        return Ok(None);
    };
    Decimal::from_str(text.trim())
        .map(Some)
        .map_err(serde::de::Error::custom)
}

fn limit_expected(field: &str) -> String {
    format!("{field} must be a whole number from 1 to {MAX_LIMIT}, or null for the plan's limit.")
}

impl RequestBody for KeyLimitsRequest {
    fn expected(param: &str, _path: &str) -> Option<String> {
        match param {
            "monthly_budget" => Some(
                "monthly_budget must be a decimal string such as \"25.00\", or null for no budget."
                    .to_owned(),
            ),
            field if FIELDS.contains(&field) => Some(limit_expected(field)),
            _ => None,
        }
    }

    fn refusal(fault: &ShapeFault) -> Option<ApiError> {
        fault.refuse_unknown(|unknown| {
            format!(
                "Unknown field {unknown}; send {}, monthly_budget.",
                FIELDS.join(", ")
            )
        })
    }

    /// Each limit from 1 to `MAX_LIMIT`; the budget as money.
    fn check(self) -> ApiResult<Self> {
        let limits = self.limits();
        if let Some(field) = FIELDS
            .into_iter()
            .find(|f| get(&limits, f).is_some_and(|n| !(1..=MAX_LIMIT).contains(&n)))
        {
            return Err(ApiError::invalid(field, limit_expected(field)));
        }
        if let Some(amount) = self.monthly_budget {
            crate::domain::accounts::validate_money(amount, "monthly_budget")?;
        }
        Ok(self)
    }
}

impl KeyLimitsRequest {
    pub fn limits(&self) -> RateLimits {
        RateLimits {
            requests_per_minute: self.requests_per_minute,
            tokens_per_minute: self.tokens_per_minute,
            video_creates_per_minute: self.video_creates_per_minute,
        }
    }

    /// The request, if no limit is above the plan's per-key limit; a holder may tighten a key,
    /// never loosen it past the plan.
    pub fn within_plan(self, plan_id: &str, plan: Option<&Plan>) -> ApiResult<Self> {
        let plan_limits = plan.map(|p| p.key_limits.clone()).unwrap_or_default();
        let asked = self.limits();
        for field in FIELDS {
            if let (Some(asked), Some(cap)) = (get(&asked, field), get(&plan_limits, field)) {
                if asked > cap {
                    let mut e = ApiError::invalid(
                        field,
                        format!(
                            "{field} {asked} is above the {plan_id} plan's per-key limit of {cap}."
                        ),
                    );
                    e.code = "above_plan_limit".into();
                    return Err(e);
                }
            }
        }
        Ok(self)
    }
}

/// One of the person's own keys, with its plan's limits.
pub async fn show_own(
    accounts: &Accounts<'_>,
    catalog: &crate::domain::catalog::Catalog,
    org: &str,
    person: &str,
    key_id: &str,
) -> ApiResult<KeyControls> {
    let holder = accounts.own_api_key_holder(org, person, key_id).await?;
    let organization = accounts.org(org).await?;
    Ok(view(
        &holder,
        &organization.plan,
        catalog.plan(&organization.plan),
        &organization.currency,
    ))
}

/// Replaces one of the person's own keys' overrides and budget, within the plan.
pub async fn set_own(
    accounts: &Accounts<'_>,
    catalog: &crate::domain::catalog::Catalog,
    org: &str,
    person: &str,
    key_id: &str,
    asked: KeyLimitsRequest,
) -> ApiResult<KeyControls> {
    // The key is checked before the plan, so another person's key is "not found" whatever the
    // body asks for (a body of the wrong shape was refused at the edge, alike for every key).
    accounts.own_api_key_holder(org, person, key_id).await?;
    let organization = accounts.org(org).await?;
    let plan = catalog.plan(&organization.plan);
    let asked = asked.within_plan(&organization.plan, plan)?;
    let holder = accounts
        .set_own_key_controls(org, person, key_id, &asked.limits(), asked.monthly_budget)
        .await?;
    Ok(view(
        &holder,
        &organization.plan,
        plan,
        &organization.currency,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// The body as the edge reads it, then the plan's bound.
    fn parse(body: &Value, plan_id: &str, plan: Option<&Plan>) -> ApiResult<KeyLimitsRequest> {
        crate::domain::params::read_body::<KeyLimitsRequest>(body.to_string().as_bytes())?
            .within_plan(plan_id, plan)
    }

    fn plan() -> Plan {
        toml::from_str(
            r#"id = "starter"
max_concurrent_renders = 1
key_limits = { requests_per_minute = 600, tokens_per_minute = 2000 }"#,
        )
        .unwrap()
    }

    fn param(r: ApiResult<KeyLimitsRequest>) -> Option<String> {
        r.err().and_then(|e| {
            crate::api::envelope::error_body(&e)["error"]["param"]
                .as_str()
                .map(str::to_owned)
        })
    }

    #[test]
    fn reads_limits_and_budget() {
        let p = plan();
        let r = parse(
            &json!({"requests_per_minute": 2, "tokens_per_minute": null, "video_creates_per_minute": 5000, "monthly_budget": "12.50"}),
            "starter",
            Some(&p),
        )
        .unwrap();
        assert_eq!(r.requests_per_minute, Some(2));
        assert_eq!(r.tokens_per_minute, None);
        // The plan sets no per-key video limit: any override is within it.
        assert_eq!(r.video_creates_per_minute, Some(5000));
        assert_eq!(r.monthly_budget, Some(Decimal::new(1250, 2)));
    }

    /// Every refusal's param, code and message, as the console's page shows them.
    fn refusal(body: Value) -> (String, String, String) {
        let e = parse(&body, "starter", Some(&plan())).unwrap_err();
        let wire = crate::api::envelope::error_body(&e);
        let text = |k: &str| wire["error"][k].as_str().unwrap_or_default().to_owned();
        (text("param"), text("code"), text("message"))
    }

    #[test]
    fn each_refusal_is_worded_as_the_console_shows_it() {
        let limit = |f: &str| {
            format!(
                "{f} must be a whole number from 1 to 1000000000000, or null for the plan's limit."
            )
        };
        let budget =
            "monthly_budget must be a decimal string such as \"25.00\", or null for no budget.";
        let money = "monthly_budget must be a non-negative decimal with at most 6 places";
        let unknown = |f: &str| {
            format!("Unknown field {f}; send requests_per_minute, tokens_per_minute, video_creates_per_minute, monthly_budget.")
        };
        let cases: Vec<(Value, &str, &str, String)> = vec![
            (
                json!({"requests_per_minute": 0}),
                "requests_per_minute",
                "invalid_request_error",
                limit("requests_per_minute"),
            ),
            (
                json!({"requests_per_minute": -5}),
                "requests_per_minute",
                "invalid_request_error",
                limit("requests_per_minute"),
            ),
            (
                json!({"tokens_per_minute": 1.5}),
                "tokens_per_minute",
                "invalid_request_error",
                limit("tokens_per_minute"),
            ),
            (
                json!({"tokens_per_minute": "100"}),
                "tokens_per_minute",
                "invalid_request_error",
                limit("tokens_per_minute"),
            ),
            (
                json!({"video_creates_per_minute": true}),
                "video_creates_per_minute",
                "invalid_request_error",
                limit("video_creates_per_minute"),
            ),
            (
                json!({"requests_per_minute": 1_000_000_000_001u64}),
                "requests_per_minute",
                "invalid_request_error",
                limit("requests_per_minute"),
            ),
            (
                json!({"requests_per_minute": 1e30}),
                "requests_per_minute",
                "invalid_request_error",
                limit("requests_per_minute"),
            ),
            (
                json!({"tokens_per_minute": [1]}),
                "tokens_per_minute",
                "invalid_request_error",
                limit("tokens_per_minute"),
            ),
            (
                json!({"monthly_budget": 12.5}),
                "monthly_budget",
                "invalid_request_error",
                budget.into(),
            ),
            (
                json!({"monthly_budget": {"amount": "1"}}),
                "monthly_budget",
                "invalid_request_error",
                budget.into(),
            ),
            (
                json!({"monthly_budget": "ten"}),
                "monthly_budget",
                "invalid_request_error",
                budget.into(),
            ),
            (
                json!({"monthly_budget": "-1"}),
                "monthly_budget",
                "invalid_request_error",
                money.into(),
            ),
            (
                json!({"monthly_budget": "0.1234567"}),
                "monthly_budget",
                "invalid_request_error",
                money.into(),
            ),
            (
                json!({"burst": 3}),
                "burst",
                "invalid_request_error",
                unknown("burst"),
            ),
            (
                json!({"requests_per_minute": 1, "rpm": 3}),
                "rpm",
                "invalid_request_error",
                unknown("rpm"),
            ),
            (
                json!({"tokens_per_minute": 2001}),
                "tokens_per_minute",
                "above_plan_limit",
                "tokens_per_minute 2001 is above the starter plan's per-key limit of 2000.".into(),
            ),
            (
                json!({"requests_per_minute": 601, "monthly_budget": "5"}),
                "requests_per_minute",
                "above_plan_limit",
                "requests_per_minute 601 is above the starter plan's per-key limit of 600.".into(),
            ),
        ];
        for (body, param, code, message) in cases {
            let shown = body.to_string();
            assert_eq!(
                refusal(body),
                (param.to_owned(), code.to_owned(), message),
                "{shown}"
            );
        }
    }

    #[test]
    fn refuses_above_the_plan_naming_the_field() {
        let p = plan();
        let e = parse(&json!({"tokens_per_minute": 2001}), "starter", Some(&p)).unwrap_err();
        let body = crate::api::envelope::error_body(&e);
        assert_eq!(body["error"]["param"], "tokens_per_minute");
        assert_eq!(body["error"]["code"], "above_plan_limit");
        assert!(parse(&json!({"tokens_per_minute": 2000}), "starter", Some(&p)).is_ok());
    }

    #[test]
    fn refuses_malformed_numbers() {
        let p = plan();
        for bad in [json!(0), json!(-1), json!(1.5), json!("2"), json!(true)] {
            assert_eq!(
                param(parse(
                    &json!({"requests_per_minute": bad}),
                    "starter",
                    Some(&p)
                )),
                Some("requests_per_minute".into())
            );
        }
        for bad in [json!(12.5), json!("-1"), json!("1e3x"), json!("0.0000001")] {
            assert_eq!(
                param(parse(&json!({"monthly_budget": bad}), "starter", Some(&p))),
                Some("monthly_budget".into())
            );
        }
        assert_eq!(
            param(parse(&json!({"rpm": 1}), "starter", Some(&p))),
            Some("rpm".into())
        );
    }
}
