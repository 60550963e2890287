//! Agreement to the Video Service Terms: per person, per organization, per terms version. Only a
//! console session may record it; creating a job never does.

use crate::domain::accounts::Caller;
use crate::domain::error::ApiResult;
use crate::domain::Context;
use crate::ports::store::{item, now_secs, ItemExt, Key};
use serde::Serialize;

fn agreement_key(org: &str, person: &str, version: &str) -> Key {
    crate::domain::table_keys::agreement(org, person, version)
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct AgreementStatus {
    #[schema(value_type = String)]
    pub object: &'static str,
    pub terms_version: String,
    pub accepted: bool,
    pub accepted_at: Option<i64>,
    pub user: String,
    pub organization: String,
}

pub async fn status(cx: Context<'_>, org: &str, person: &str) -> ApiResult<AgreementStatus> {
    let version = cx.catalog.terms_version.clone();
    let found = cx.store.get(&agreement_key(org, person, &version)).await?;
    Ok(AgreementStatus {
        object: "video.terms_acceptance",
        accepted: found.is_some(),
        accepted_at: found.as_ref().and_then(|i| i.i64_attr("accepted_at")),
        terms_version: version,
        user: person.to_owned(),
        organization: org.to_owned(),
    })
}

pub async fn has_agreed(cx: Context<'_>, org: &str, person: &str) -> ApiResult<bool> {
    Ok(status(cx, org, person).await?.accepted)
}

/// Records agreement to the current version. Repeating it keeps the first acceptance time.
/// Only a console session records agreement: an API key is refused (`console_login_required`).
pub async fn accept(cx: Context<'_>, caller: &Caller) -> ApiResult<AgreementStatus> {
    if !matches!(
        caller.credential,
        crate::domain::accounts::Credential::ConsoleSession { .. }
    ) {
        return Err(crate::domain::error::ApiError::forbidden(
            "console_login_required",
            "Agreement to the Video Service Terms is recorded only in the console playground \
             (/console); an API key cannot record it.",
        ));
    }
    let version = cx.catalog.terms_version.clone();
    let key = agreement_key(&caller.org, &caller.person, &version);
    let mut it = item(&key);
    it.insert("kind".into(), "agreement".into());
    it.insert("person".into(), caller.person.clone().into());
    it.insert("terms_version".into(), version.into());
    it.insert("accepted_at".into(), now_secs().into());
    if let crate::domain::accounts::Credential::ConsoleSession { session_id } = &caller.credential {
        it.insert("console_session".into(), session_id.clone().into());
    }
    match cx
        .store
        .put(it, Some(crate::ports::store::Condition::NotExists))
        .await
    {
        Ok(()) | Err(crate::ports::store::StoreError::ConditionFailed) => {}
        Err(e) => return Err(e.into()),
    }
    status(cx, &caller.org, &caller.person).await
}
