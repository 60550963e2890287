//! The guarded fetcher: the one way the service GETs a URL a caller can influence, or POSTs
//! to one (webhook deliveries).
//!
//! Per hop: only `http`/`https`; the host is resolved once by us, every candidate address is
//! checked against the refused ranges (loopback, private, link-local, unique-local, CGNAT,
//! benchmarking, documentation, multicast, NAT64/6to4/Teredo-embedded private addresses, cloud
//! metadata), and the connection is pinned to the checked address (reqwest's `resolve`, so the
//! HTTP client never resolves the name a second time). Redirects are not followed by the client:
//! each `Location` is a new hop through the same check. The body is read as a stream and the
//! fetch stops as soon as it passes the byte limit; one deadline covers all hops. Proxy
//! variables are ignored (`no_proxy`). The operator's allow list (`REELGATE_FETCH_ALLOW`) names
//! hosts or address ranges that may be fetched although private.

use crate::ports::fetch::{FetchError, Fetched, Fetcher};
use async_trait::async_trait;
use futures::StreamExt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

/// Redirect hops followed at most.
pub const MAX_REDIRECTS: usize = 5;
/// Total time one fetch may take, all hops and the body included.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a GET may take to connect to its address.
const FETCH_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a POST (a webhook delivery) may take to connect to the endpoint.
pub const POST_CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// How long a POST may take from its start (name resolution, connection, TLS, the request)
/// to the answer's status line, its first byte; the answer's body is never read. An endpoint
/// that accepts and never answers holds a delivery this long, not the fetch's 30 s.
pub const POST_ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// One allow-list entry: a host name (exact, case-insensitive) or an address range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowEntry {
    Host(String),
    Range(IpAddr, u8),
}

impl AllowEntry {
    /// Parses `example.com`, `10.0.0.0/8`, `192.168.1.5` or `fd00::/8`.
    pub fn parse(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if s.is_empty() {
            return Err("an empty entry".into());
        }
        let (addr, len) = match s.split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (s, None),
        };
        let addr = addr.trim_start_matches('[').trim_end_matches(']');
        match addr.parse::<IpAddr>() {
            Ok(ip) => {
                let max = if ip.is_ipv4() { 32 } else { 128 };
                let len = match len {
                    Some(l) => l
                        .parse::<u8>()
                        .ok()
                        .filter(|l| *l <= max)
                        .ok_or_else(|| format!("{s}: the prefix length must be 0..={max}"))?,
                    None => max,
                };
                Ok(AllowEntry::Range(ip, len))
            }
            Err(_) if len.is_none() && !s.contains([':', '/', ' ', '@']) => Ok(AllowEntry::Host(
                s.to_ascii_lowercase().trim_end_matches('.').to_owned(),
            )),
            Err(_) => Err(format!("{s} is neither a host name nor an address range")),
        }
    }

    fn allows_host(&self, host: &str) -> bool {
        matches!(self, AllowEntry::Host(h) if h.eq_ignore_ascii_case(host.trim_end_matches('.')))
    }

    fn allows_ip(&self, ip: IpAddr) -> bool {
        let AllowEntry::Range(net, len) = self else {
            return false;
        };
        match (net, ip) {
            (IpAddr::V4(n), IpAddr::V4(a)) => prefix_eq(&n.octets(), &a.octets(), *len),
            (IpAddr::V6(n), IpAddr::V6(a)) => prefix_eq(&n.octets(), &a.octets(), *len),
            (IpAddr::V4(n), IpAddr::V6(a)) => a
                .to_ipv4_mapped()
                .is_some_and(|a| prefix_eq(&n.octets(), &a.octets(), *len)),
            _ => false,
        }
    }
}

fn prefix_eq(a: &[u8], b: &[u8], len: u8) -> bool {
    let full = (len / 8) as usize;
    let rest = len % 8;
    if a[..full] != b[..full] {
        return false;
    }
    if rest == 0 {
        return true;
    }
    let mask = 0xffu8 << (8 - rest);
    (a[full] & mask) == (b[full] & mask)
}

/// Parses a comma-separated allow list (`REELGATE_FETCH_ALLOW`).
pub fn parse_allow_list(s: &str) -> Result<Vec<AllowEntry>, String> {
    s.split(',')
        .filter(|e| !e.trim().is_empty())
        .map(AllowEntry::parse)
        .collect()
}

/// True when the service may connect to `ip` on a caller's behalf.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(v4: Ipv4Addr) -> bool {
    let o = v4.octets();
    !(v4.is_loopback()
        || v4.is_private()
        || v4.is_link_local() // 169.254/16, the metadata address included
        || v4.is_unspecified()
        || v4.is_broadcast()
        || v4.is_documentation()
        || v4.is_multicast()
        || o[0] == 0
        || o[0] >= 240 // reserved
        || (o[0] == 100 && (o[1] & 0xc0) == 64) // 100.64/10 CGNAT (100.100.100.200 metadata)
        || (o[0] == 192 && o[1] == 0 && o[2] == 0) // 192.0.0/24 IETF protocol assignments
        || (o[0] == 192 && o[1] == 88 && o[2] == 99) // 6to4 relay anycast
        || (o[0] == 198 && (o[1] & 0xfe) == 18)) // 198.18/15 benchmarking
}

fn embedded_v4(bytes: &[u8]) -> Ipv4Addr {
    Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3])
}

fn is_public_v6(v6: Ipv6Addr) -> bool {
    if let Some(v4) = v6.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    let s = v6.segments();
    let b = v6.octets();
    if v6.is_loopback() || v6.is_unspecified() || v6.is_multicast() {
        return false;
    }
    // ::/96 (IPv4-compatible, deprecated), 100::/64 discard, 2001:db8::/32 documentation,
    // 2001:2::/48 benchmarking, 2001::/32 Teredo, fc00::/7 unique-local (fd00:ec2::254, the EC2
    // metadata address, among them), fe80::/10 link-local, fec0::/10 site-local.
    if s[..6] == [0; 6]
        || (s[0] == 0x100 && s[1..4] == [0; 3])
        || (s[0] == 0x2001 && s[1] == 0xdb8)
        || (s[0] == 0x2001 && s[1] == 2 && s[2] == 0)
        || (s[0] == 0x2001 && s[1] == 0)
        || (s[0] & 0xfe00) == 0xfc00
        || (s[0] & 0xffc0) == 0xfe80
        || (s[0] & 0xffc0) == 0xfec0
    {
        return false;
    }
    // NAT64 (64:ff9b::/96 well-known, 64:ff9b:1::/48 local-use): the embedded IPv4 decides;
    // the local-use prefix is refused outright.
    if s[0] == 0x64 && s[1] == 0xff9b {
        if s[2..6] == [0; 4] {
            return is_public_v4(embedded_v4(&b[12..16]));
        }
        return false;
    }
    // 6to4 (2002::/16): the IPv4 address sits in bits 16..48.
    if s[0] == 0x2002 {
        return is_public_v4(embedded_v4(&b[2..6]));
    }
    true
}

/// What the guarded fetcher lets through besides public addresses.
#[derive(Debug, Clone, Default)]
pub struct FetchPolicy {
    /// Hosts and ranges fetched although private (`REELGATE_FETCH_ALLOW`).
    pub allow: Vec<AllowEntry>,
    /// Every address allowed (`REELGATE_ALLOW_PRIVATE_FILE_URLS`, local development only).
    pub allow_all: bool,
    /// Total time per fetch; `None` is [`DEFAULT_TIMEOUT`].
    pub timeout: Option<Duration>,
}

/// The guarded [`Fetcher`].
#[derive(Debug, Clone, Default)]
pub struct GuardedFetcher {
    policy: FetchPolicy,
}

impl GuardedFetcher {
    pub fn new(policy: FetchPolicy) -> Self {
        GuardedFetcher { policy }
    }

    /// Sets the total time one fetch may take (all hops and the body).
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.policy.timeout = Some(timeout);
    }

    fn permitted(&self, host: &str, ip: IpAddr) -> bool {
        self.policy.allow_all
            || is_public(ip)
            || self
                .policy
                .allow
                .iter()
                .any(|e| e.allows_host(host) || e.allows_ip(ip))
    }

    /// Resolves `host` once and returns the first address the policy permits.
    async fn checked_address(&self, host: &str, port: u16) -> Result<SocketAddr, FetchError> {
        let addrs: Vec<SocketAddr> = match host.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) => tokio::net::lookup_host((host, port))
                .await
                .map_err(|_| FetchError::Unreachable)?
                .collect(),
        };
        if addrs.is_empty() {
            return Err(FetchError::Unreachable);
        }
        // Every address must pass: a name that resolves to one public and one private address
        // is refused rather than fetched from whichever the client would pick.
        if addrs.iter().all(|a| self.permitted(host, a.ip())) {
            Ok(addrs[0])
        } else {
            Err(FetchError::Refused)
        }
    }

    /// The URL's host and the checked address to connect to.
    async fn checked_url(&self, url: &url::Url) -> Result<(String, SocketAddr), FetchError> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(FetchError::BadUrl);
        }
        let host = match url.host() {
            Some(url::Host::Domain(d)) => d.to_owned(),
            Some(url::Host::Ipv4(ip)) => ip.to_string(),
            Some(url::Host::Ipv6(ip)) => ip.to_string(),
            None => return Err(FetchError::BadUrl),
        };
        let port = url.port_or_known_default().ok_or(FetchError::BadUrl)?;
        let addr = self.checked_address(&host, port).await?;
        Ok((host, addr))
    }

    /// A client that connects only to `addr` for `host` and follows no redirect.
    fn pinned_client(
        host: &str,
        addr: SocketAddr,
        connect_timeout: Duration,
    ) -> Result<reqwest::Client, FetchError> {
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .connect_timeout(connect_timeout);
        if host.parse::<IpAddr>().is_err() {
            builder = builder.resolve(host, addr);
        }
        builder.build().map_err(|_| FetchError::Unreachable)
    }

    async fn post_once(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: Vec<u8>,
    ) -> Result<u16, FetchError> {
        let url = url::Url::parse(url).map_err(|_| FetchError::BadUrl)?;
        let (host, addr) = self.checked_url(&url).await?;
        let client = Self::pinned_client(&host, addr, POST_CONNECT_TIMEOUT)?;
        let mut request = client.post(url).body(body);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let response = request.send().await.map_err(|e| {
            if e.is_timeout() {
                FetchError::Timeout
            } else {
                FetchError::Unreachable
            }
        })?;
        Ok(response.status().as_u16())
    }

    /// Follows `url`'s redirects through the address checks to the answer whose body is the
    /// file: a success, with no more than `max_bytes` declared.
    async fn open_hops(&self, url: &str, max_bytes: u64) -> Result<reqwest::Response, FetchError> {
        let mut current = url::Url::parse(url).map_err(|_| FetchError::BadUrl)?;
        for _ in 0..=MAX_REDIRECTS {
            let (host, addr) = self.checked_url(&current).await?;
            let client = Self::pinned_client(&host, addr, FETCH_CONNECT_TIMEOUT)?;
            let response = client.get(current.clone()).send().await.map_err(|e| {
                if e.is_timeout() {
                    FetchError::Timeout
                } else {
                    FetchError::Unreachable
                }
            })?;
            let status = response.status();
            if status.is_redirection() {
                let location = response
                    .headers()
                    .get(reqwest::header::LOCATION)
                    .and_then(|v| v.to_str().ok())
                    .ok_or(FetchError::Status(status.as_u16()))?;
                current = current.join(location).map_err(|_| FetchError::BadUrl)?;
                continue;
            }
            if !status.is_success() {
                return Err(FetchError::Status(status.as_u16()));
            }
            if response.content_length().is_some_and(|n| n > max_bytes) {
                return Err(FetchError::TooLarge(max_bytes));
            }
            return Ok(response);
        }
        Err(FetchError::TooManyRedirects)
    }

    async fn fetch_hops(&self, url: &str, max_bytes: u64) -> Result<Fetched, FetchError> {
        let response = self.open_hops(url, max_bytes).await?;
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let mut bytes = Vec::new();
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|_| FetchError::Unreachable)?;
            if (bytes.len() + chunk.len()) as u64 > max_bytes {
                return Err(FetchError::TooLarge(max_bytes));
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(Fetched {
            bytes,
            content_type,
        })
    }
}

#[async_trait]
impl Fetcher for GuardedFetcher {
    async fn fetch(&self, url: &str, max_bytes: u64) -> Result<Fetched, FetchError> {
        let timeout = self.policy.timeout.unwrap_or(DEFAULT_TIMEOUT);
        match tokio::time::timeout(timeout, self.fetch_hops(url, max_bytes)).await {
            Ok(result) => result,
            Err(_) => Err(FetchError::Timeout),
        }
    }

    async fn fetch_stream(
        &self,
        url: &str,
        max_bytes: u64,
    ) -> Result<crate::ports::blobs::ByteStream, FetchError> {
        // One deadline for the whole fetch, as `fetch` has: the answer must start and the last
        // byte arrive within it.
        let deadline = tokio::time::Instant::now() + self.policy.timeout.unwrap_or(DEFAULT_TIMEOUT);
        let response = tokio::time::timeout_at(deadline, self.open_hops(url, max_bytes))
            .await
            .map_err(|_| FetchError::Timeout)??;
        let body = Box::pin(response.bytes_stream());
        let fail = |e: FetchError| std::io::Error::other(e.to_string());
        Ok(Box::pin(futures::stream::unfold(
            Some((body, 0u64)),
            move |state| async move {
                let (mut body, seen) = state?;
                let item = match tokio::time::timeout_at(deadline, body.next()).await {
                    Err(_) => Err(fail(FetchError::Timeout)),
                    Ok(None) => return None,
                    Ok(Some(Err(_))) => Err(fail(FetchError::Unreachable)),
                    Ok(Some(Ok(chunk))) if seen + chunk.len() as u64 > max_bytes => {
                        Err(fail(FetchError::TooLarge(max_bytes)))
                    }
                    Ok(Some(Ok(chunk))) => {
                        let seen = seen + chunk.len() as u64;
                        return Some((Ok(chunk), Some((body, seen))));
                    }
                };
                Some((item, None))
            },
        )))
    }

    async fn post(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: Vec<u8>,
    ) -> Result<u16, FetchError> {
        let timeout = self
            .policy
            .timeout
            .unwrap_or(DEFAULT_TIMEOUT)
            .min(POST_ANSWER_TIMEOUT);
        match tokio::time::timeout(timeout, self.post_once(url, headers, body)).await {
            Ok(result) => result,
            Err(_) => Err(FetchError::Timeout),
        }
    }

    async fn check(&self, url: &str) -> Result<(), FetchError> {
        let url = url::Url::parse(url).map_err(|_| FetchError::BadUrl)?;
        self.checked_url(&url).await.map(|_| ())
    }
}

/// The bytes and MIME type of media an upstream adapter inlines for a provider that wants bytes:
/// a data URL decoded, anything else fetched through `fetcher` (public addresses only, the size
/// cap enforced while streaming). A caller's URL that cannot be used is a 400 naming `param`,
/// as the service's own fetches answer, never an upstream failure.
pub async fn inline_media(
    fetcher: &dyn Fetcher,
    url: &str,
    param: &str,
    max_bytes: u64,
) -> Result<(Vec<u8>, String), crate::ports::upstream::UpstreamError> {
    use crate::ports::upstream::UpstreamError;
    use base64::Engine;
    let bad = |message: String| UpstreamError::Rejected {
        status: 400,
        code: Some("invalid_request_error".into()),
        message,
        retry_after: None,
    };
    if let Some(rest) = url.strip_prefix("data:") {
        let (meta, data) = rest
            .split_once(',')
            .ok_or_else(|| bad("a malformed data URL".into()))?;
        let mime = meta.trim_end_matches(";base64").to_owned();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map_err(|e| bad(format!("a data URL is not base64: {e}")))?;
        return Ok((bytes, mime));
    }
    let fetched = fetcher.fetch(url, max_bytes).await.map_err(|e| {
        let refusal = crate::domain::responses::fetch::fetch_refusal(param, &e);
        UpstreamError::InvalidRequest {
            param: param.to_owned(),
            code: refusal.code,
            message: refusal.message,
        }
    })?;
    let mime = fetched
        .content_type
        .as_deref()
        .unwrap_or("application/octet-stream")
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_owned();
    Ok((fetched.bytes, mime))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_ranges() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.0.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.100.100.200",
            "198.18.0.1",
            "0.0.0.0",
            "240.0.0.1",
            "::1",
            "::",
            "fe80::1",
            "fd00::1",
            "fd00:ec2::254",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::7f00:1",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::1",
            "2002:a00:1::1",
            "2001:db8::1",
            "2001:0:4136:e378::1",
        ] {
            assert!(!is_public(ip.parse().expect("ip")), "{ip}");
        }
        for ip in [
            "8.8.8.8",
            "2606:4700::1111",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            assert!(is_public(ip.parse().expect("ip")), "{ip}");
        }
    }

    #[test]
    fn allow_list_entries() {
        let list = parse_allow_list("files.internal, 10.0.0.0/8,127.0.0.2").expect("list");
        let f = GuardedFetcher::new(FetchPolicy {
            allow: list,
            ..Default::default()
        });
        assert!(f.permitted("files.internal", "192.168.1.1".parse().unwrap()));
        assert!(f.permitted("x", "10.9.9.9".parse().unwrap()));
        assert!(f.permitted("x", "127.0.0.2".parse().unwrap()));
        assert!(!f.permitted("x", "127.0.0.1".parse().unwrap()));
        assert!(!f.permitted("other.internal", "192.168.1.1".parse().unwrap()));
        assert!(parse_allow_list("10.0.0.0/33").is_err());
        assert!(parse_allow_list("http://x").is_err());
    }
}
