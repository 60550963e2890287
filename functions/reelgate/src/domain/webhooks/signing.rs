//! Signing per Standard Webhooks: the `whsec_` secrets and the `webhook-*` headers of a POST,
//! signed with the current secret and, during a rotation's grace, the previous one too.

use crate::ports::store::{Item, ItemExt};
use base64::Engine as _;

/// How long a rotated-out secret still signs deliveries beside the new one.
pub const ROTATION_GRACE_SECS: i64 = 24 * 3600;
pub const SECRET_PREFIX: &str = "whsec_";

/// A new secret: `whsec_` and the base64 of 32 random bytes (the Standard Webhooks form).
pub fn new_signing_secret() -> String {
    use rand::RngCore;
    let mut raw = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut raw);
    format!(
        "{SECRET_PREFIX}{}",
        base64::engine::general_purpose::STANDARD.encode(raw)
    )
}

/// The Standard Webhooks signature of one attempt: `v1,` and the base64 HMAC-SHA256, keyed by
/// the secret's decoded bytes, of `<webhook-id>.<webhook-timestamp>.<body>`. None for a
/// malformed secret.
pub fn sign(secret: &str, webhook_id: &str, timestamp: i64, body: &[u8]) -> Option<String> {
    use hmac::{Hmac, Mac};
    let key = base64::engine::general_purpose::STANDARD
        .decode(secret.strip_prefix(SECRET_PREFIX)?)
        .ok()?;
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(&key).ok()?;
    mac.update(format!("{webhook_id}.{timestamp}.").as_bytes());
    mac.update(body);
    Some(format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    ))
}

/// The headers of one POST of `payload` to `endpoint` at `now` (a delivery attempt or a test
/// event): Standard Webhooks' `webhook-id`, `webhook-timestamp` and `webhook-signature`, signed
/// with the current secret and, during a rotation's grace, the previous one too.
pub(super) fn signed_headers(
    endpoint: &Item,
    event_id: &str,
    now: i64,
    payload: &str,
) -> [(&'static str, String); 5] {
    let mut signatures = Vec::new();
    if let Some(s) = endpoint.str_attr("secret") {
        signatures.extend(sign(s, event_id, now, payload.as_bytes()));
    }
    if let (Some(s), Some(until)) = (
        endpoint.str_attr("previous_secret"),
        endpoint.i64_attr("previous_secret_until"),
    ) {
        if until > now {
            signatures.extend(sign(s, event_id, now, payload.as_bytes()));
        }
    }
    [
        ("content-type", "application/json".to_owned()),
        ("user-agent", "reelgate-webhooks/1".to_owned()),
        ("webhook-id", event_id.to_owned()),
        ("webhook-timestamp", now.to_string()),
        ("webhook-signature", signatures.join(" ")),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signs_like_the_standard_webhooks_reference() {
        // The example of the Standard Webhooks specification.
        let sig = sign(
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1614265330,
            br#"{"test": 2432232314}"#,
        );
        assert_eq!(
            sig.as_deref(),
            Some("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        );
        assert!(sign("not-a-secret", "m", 1, b"x").is_none());
    }

    #[test]
    fn a_new_secret_is_the_prefix_and_32_random_bytes() {
        let secret = new_signing_secret();
        assert!(secret.starts_with(SECRET_PREFIX));
        assert_eq!(
            base64::engine::general_purpose::STANDARD
                .decode(&secret[SECRET_PREFIX.len()..])
                .expect("base64")
                .len(),
            32
        );
    }
}
