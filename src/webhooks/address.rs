//! Which URLs an endpoint may have, and which addresses a delivery may connect to.
//!
//! A receiver is somewhere on the internet: its URL is `https://` and every address its
//! name resolves to is public. A delivery resolves the name itself, once, checks every
//! address, and connects to a checked one, so a DNS answer that changes after the
//! endpoint was registered (or between the check and the connection) cannot point it
//! at the server's own network. `serve --webhooks-allow-insecure` lifts both rules, for
//! receivers on loopback in tests.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Longest a name's resolution may take.
pub const RESOLVE_WITHIN: std::time::Duration = std::time::Duration::from_secs(5);

/// The longest URL an endpoint may have.
pub const MAX_URL_LEN: usize = 2048;

/// What the server admits as a receiver.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    /// `http://` too, and private, loopback and link-local addresses.
    pub allow_insecure: bool,
}

/// Why a URL, or the address it resolved to, is refused: each names its rule, as the
/// 400 answer and a delivery's error say it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("url must be an absolute URL of at most {MAX_URL_LEN} characters")]
    NotAUrl,
    #[error("url must be https://")]
    NotHttps,
    #[error("url must not carry a user name or password")]
    Credentials,
    #[error("url must not have a fragment")]
    Fragment,
    #[error("url's host does not resolve")]
    DoesNotResolve,
    #[error("url must resolve to public addresses only; it resolves to {0}")]
    NotPublic(IpAddr),
}

/// A URL as an endpoint may have it: absolute, `https://` (or `http://` under
/// `allow_insecure`), with a host, and no credentials or fragment. A host written as an
/// address is checked here; a name, when it is resolved ([`resolve`]).
pub fn check(raw: &str, policy: Policy) -> Result<url::Url, Refusal> {
    if raw.len() > MAX_URL_LEN {
        return Err(Refusal::NotAUrl);
    }
    let url = url::Url::parse(raw).map_err(|_| Refusal::NotAUrl)?;
    match url.scheme() {
        "https" => {}
        "http" if policy.allow_insecure => {}
        _ => return Err(Refusal::NotHttps),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Refusal::Credentials);
    }
    if url.fragment().is_some() {
        return Err(Refusal::Fragment);
    }
    match url.host() {
        None => Err(Refusal::NotAUrl),
        Some(url::Host::Ipv4(ip)) => admit(IpAddr::V4(ip), policy).map(|()| url),
        Some(url::Host::Ipv6(ip)) => admit(IpAddr::V6(ip), policy).map(|()| url),
        Some(url::Host::Domain(_)) => Ok(url),
    }
}

/// The addresses a delivery to `url` (already [`check`]ed) may connect to: its host
/// resolved now, every address admitted, or the first one refused.
pub async fn resolve(url: &url::Url, policy: Policy) -> Result<Vec<SocketAddr>, Refusal> {
    let port = url.port_or_known_default().ok_or(Refusal::NotAUrl)?;
    let addrs: Vec<SocketAddr> = match url.host() {
        None => return Err(Refusal::NotAUrl),
        Some(url::Host::Ipv4(ip)) => vec![SocketAddr::new(IpAddr::V4(ip), port)],
        Some(url::Host::Ipv6(ip)) => vec![SocketAddr::new(IpAddr::V6(ip), port)],
        // A resolver that does not answer in time is a name that does not resolve: a
        // registration is answered, and a delivery retried, rather than held.
        Some(url::Host::Domain(name)) => {
            tokio::time::timeout(RESOLVE_WITHIN, tokio::net::lookup_host((name, port)))
                .await
                .map_err(|_| Refusal::DoesNotResolve)?
                .map_err(|_| Refusal::DoesNotResolve)?
                .collect()
        }
    };
    if addrs.is_empty() {
        return Err(Refusal::DoesNotResolve);
    }
    for a in &addrs {
        admit(a.ip(), policy)?;
    }
    Ok(addrs)
}

fn admit(ip: IpAddr, policy: Policy) -> Result<(), Refusal> {
    if policy.allow_insecure || is_public(ip) {
        Ok(())
    } else {
        Err(Refusal::NotPublic(ip))
    }
}

/// Whether `ip` is an address on the public internet: not unspecified, loopback,
/// private, shared (carrier-grade NAT), link-local, multicast, broadcast, reserved,
/// or set aside for documentation and benchmarks; an IPv6 address that carries an IPv4
/// one (mapped, NAT64, 6to4) is judged by that address.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let set_aside = a == 0 // "this network"
        || ip.is_loopback()
        || ip.is_private()
        || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT)
        || ip.is_link_local()
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || ip.is_documentation()
        || (a == 198 && (18..20).contains(&b)) // benchmarking
        || (a == 192 && b == 88 && c == 99) // 6to4 relay anycast
        || ip.is_multicast()
        || a >= 240; // reserved, and the broadcast address
    !set_aside
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    // NAT64 (64:ff9b::/96) carries its IPv4 address in the last 32 bits.
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
        return is_public_v4(Ipv4Addr::new(
            (s[6] >> 8) as u8,
            s[6] as u8,
            (s[7] >> 8) as u8,
            s[7] as u8,
        ));
    }
    // 6to4 (2002::/16) in the next 32.
    if s[0] == 0x2002 {
        return is_public_v4(Ipv4Addr::new(
            (s[1] >> 8) as u8,
            s[1] as u8,
            (s[2] >> 8) as u8,
            s[2] as u8,
        ));
    }
    let set_aside = ip.is_unspecified()
        || ip.is_loopback()
        || s[0..6] == [0, 0, 0, 0, 0, 0] // IPv4-compatible (deprecated)
        || (s[0] & 0xfe00) == 0xfc00 // unique local
        || (s[0] & 0xffc0) == 0xfe80 // link-local
        || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated)
        || ip.is_multicast()
        || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
        || (s[0] == 0x0100 && s[1..4] == [0, 0, 0]); // discard-only
    !set_aside
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECURE: Policy = Policy {
        allow_insecure: false,
    };
    const INSECURE: Policy = Policy {
        allow_insecure: true,
    };

    #[test]
    fn addresses_outside_the_public_internet_are_not_public() {
        for ip in [
            "0.0.0.0",
            "0.1.2.3",
            "127.0.0.1",
            "127.255.0.9",
            "10.0.0.1",
            "172.16.5.4",
            "172.31.255.255",
            "192.168.1.1",
            "100.64.0.1",
            "100.127.255.254",
            "169.254.169.254",
            "192.0.0.8",
            "192.0.2.1",
            "198.51.100.7",
            "203.0.113.9",
            "198.18.0.1",
            "192.88.99.1",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:10.1.2.3",
            "::127.0.0.1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "2001:db8::1",
            "100::1",
            "64:ff9b::a00:1",
            "64:ff9b::7f00:1",
            "2002:a00:1::1",
            "2002:c0a8:101::1",
        ] {
            let parsed: IpAddr = ip.parse().unwrap();
            assert!(!is_public(parsed), "{ip} counted as public");
        }
    }

    #[test]
    fn addresses_on_the_internet_are_public() {
        for ip in [
            "1.1.1.1",
            "8.8.8.8",
            "93.184.216.34",
            "100.63.255.255",
            "100.128.0.1",
            "172.15.255.255",
            "172.32.0.1",
            "192.0.1.1",
            "192.169.0.1",
            "198.17.0.1",
            "198.20.0.1",
            "223.255.255.255",
            "2606:4700:4700::1111",
            "2a00:1450:4001::200e",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            let parsed: IpAddr = ip.parse().unwrap();
            assert!(is_public(parsed), "{ip} counted as not public");
        }
    }

    #[test]
    fn each_url_rule_refuses_what_it_names() {
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_LEN));
        for (raw, refusal) in [
            ("not a url", Refusal::NotAUrl),
            ("/relative/path", Refusal::NotAUrl),
            (long.as_str(), Refusal::NotAUrl),
            ("http://example.com/hook", Refusal::NotHttps),
            ("ftp://example.com/hook", Refusal::NotHttps),
            ("https://user:pw@example.com/hook", Refusal::Credentials),
            ("https://user@example.com/hook", Refusal::Credentials),
            ("https://example.com/hook#part", Refusal::Fragment),
            (
                "https://127.0.0.1/hook",
                Refusal::NotPublic("127.0.0.1".parse().unwrap()),
            ),
            (
                "https://10.0.0.5:8443/hook",
                Refusal::NotPublic("10.0.0.5".parse().unwrap()),
            ),
            (
                "https://[::1]/hook",
                Refusal::NotPublic("::1".parse().unwrap()),
            ),
            (
                "https://[fe80::1]/hook",
                Refusal::NotPublic("fe80::1".parse().unwrap()),
            ),
            // Written other ways, the same address.
            (
                "https://2130706433/hook",
                Refusal::NotPublic("127.0.0.1".parse().unwrap()),
            ),
            (
                "https://0x7f.1/hook",
                Refusal::NotPublic("127.0.0.1".parse().unwrap()),
            ),
        ] {
            assert_eq!(check(raw, SECURE), Err(refusal.clone()), "{raw}");
            assert!(!refusal.to_string().is_empty());
        }
        for raw in [
            "https://example.com/hook",
            "https://93.184.216.34:8443/x?y=1",
        ] {
            assert!(check(raw, SECURE).is_ok(), "{raw}");
        }
    }

    #[test]
    fn the_insecure_policy_admits_http_and_private_addresses_but_not_other_faults() {
        assert!(check("http://127.0.0.1:9000/hook", INSECURE).is_ok());
        assert!(check("https://[::1]:9000/hook", INSECURE).is_ok());
        assert_eq!(check("ftp://127.0.0.1/", INSECURE), Err(Refusal::NotHttps));
        assert_eq!(
            check("http://u:p@127.0.0.1/", INSECURE),
            Err(Refusal::Credentials)
        );
    }

    #[tokio::test]
    async fn a_name_is_resolved_and_every_address_it_gives_is_checked() {
        // `localhost` resolves to loopback addresses only.
        let url = check("https://localhost:9443/hook", SECURE).unwrap();
        match resolve(&url, SECURE).await {
            Err(Refusal::NotPublic(ip)) => assert!(ip.is_loopback(), "{ip}"),
            other => panic!("localhost admitted: {other:?}"),
        }
        let admitted = resolve(&url, INSECURE).await.unwrap();
        assert!(!admitted.is_empty());
        assert!(admitted
            .iter()
            .all(|a| a.ip().is_loopback() && a.port() == 9443));
        let literal = check("http://127.0.0.1/hook", INSECURE).unwrap();
        let at = resolve(&literal, INSECURE).await.unwrap();
        assert_eq!(at, vec!["127.0.0.1:80".parse().unwrap()]);
        let unknown = check("https://no-such-host.invalid/hook", SECURE).unwrap();
        assert_eq!(
            resolve(&unknown, SECURE).await,
            Err(Refusal::DoesNotResolve)
        );
    }
}
