//! Fetching an `input_file.file_url` for the model. The service fetches the URL itself (so a PDF
//! can be rasterized like an uploaded one), which makes it a server-side request on the caller's
//! behalf: only http(s), no redirects, a size cap and a timeout, and only public addresses — the
//! host is resolved once, checked, and the connection pinned to the checked address so DNS cannot
//! change between the check and the request. `REELGATE_ALLOW_PRIVATE_FILE_URLS=1` lifts the
//! address check for local development and tests.

use crate::domain::error::{ApiError, ApiResult};
use futures::StreamExt;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// Largest fetched file.
pub const MAX_FETCH_BYTES: usize = 50 * 1024 * 1024;
const TIMEOUT: Duration = Duration::from_secs(30);

fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_documentation()
                || v4.is_multicast()
                || o[0] == 0
                // 100.64.0.0/10, carrier-grade NAT.
                || (o[0] == 100 && (o[1] & 0xc0) == 64))
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let s = v6.segments();
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80)
        }
    }
}

/// Downloads `url` for the model; failures are 400s naming `param`. Private and loopback
/// addresses are refused unless `allow_private` (`REELGATE_ALLOW_PRIVATE_FILE_URLS`, tests only).
pub async fn fetch(url: &str, param: &str, allow_private: bool) -> ApiResult<Vec<u8>> {
    let bad = |msg: String| ApiError::invalid(param, msg);
    let parsed = url::Url::parse(url)
        .map_err(|_| bad("file_url must be an absolute http(s) URL.".into()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(bad("file_url must be an http or https URL.".into()));
    }
    let host = parsed
        .host_str()
        .ok_or_else(|| bad("file_url has no host.".into()))?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let port = parsed.port_or_known_default().unwrap_or(443);
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), port))
        .await
        .map_err(|_| bad(format!("The host of file_url ({host}) cannot be resolved.")))?
        .collect();
    let addr = addrs
        .into_iter()
        .find(|a| allow_private || is_public(a.ip()))
        .ok_or_else(|| bad("file_url must point to a public address.".into()))?;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(TIMEOUT)
        .resolve(&host, addr)
        .build()
        .map_err(|e| ApiError::internal("building an HTTP client", e))?;
    let response = client
        .get(parsed)
        .send()
        .await
        .map_err(|e| bad(format!("file_url could not be fetched: {e}")))?;
    if !response.status().is_success() {
        return Err(bad(format!(
            "file_url answered {} (redirects are not followed).",
            response.status()
        )));
    }
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| bad(format!("file_url broke off: {e}")))?;
        if body.len() + chunk.len() > MAX_FETCH_BYTES {
            return Err(bad(format!(
                "The file at file_url is larger than {MAX_FETCH_BYTES} bytes."
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_addresses_are_not_public() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "192.168.0.1",
            "169.254.169.254",
            "100.64.0.1",
            "::1",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(!is_public(ip.parse().expect("ip")), "{ip}");
        }
        for ip in ["8.8.8.8", "2606:4700::1111"] {
            assert!(is_public(ip.parse().expect("ip")), "{ip}");
        }
    }
}
