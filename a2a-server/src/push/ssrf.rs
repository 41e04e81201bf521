//! Which webhook addresses the push sender may connect to.

use std::net::{IpAddr, Ipv4Addr};
use std::str::FromStr;
use std::sync::LazyLock;

/// An IP network in CIDR form, such as `127.0.0.0/8` or `fd00::/8`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpNetwork {
    address: IpAddr,
    prefix: u8,
}

impl IpNetwork {
    /// Whether `ip` lies in this network.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.address, normalize(ip)) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

impl FromStr for IpNetwork {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (addr, prefix) = match s.split_once('/') {
            Some((addr, prefix)) => (addr, Some(prefix)),
            None => (s, None),
        };
        let address: IpAddr = addr
            .parse()
            .map_err(|_| format!("invalid network address {addr:?}"))?;
        let max = if address.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| format!("invalid prefix in {s:?}"))?,
            None => max,
        };
        Ok(IpNetwork { address, prefix })
    }
}

impl From<IpAddr> for IpNetwork {
    /// The network of exactly this address (`/32`, `/128`).
    fn from(address: IpAddr) -> Self {
        let prefix = if address.is_ipv4() { 32 } else { 128 };
        IpNetwork { address, prefix }
    }
}

impl std::fmt::Display for IpNetwork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.address, self.prefix)
    }
}

/// An IPv4-mapped IPv6 address is judged as the IPv4 address it carries.
fn normalize(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The IANA IPv4 and IPv6 Special-Purpose Address Registries (as of 2025):
/// each block with the registry's name, and `true` where the registry says
/// "Globally Reachable: True"; blocks it marks False or N/A (deprecated) are
/// refused. The most specific block holding an address decides; addresses in
/// no block are allowed. The few rows outside the registries, or judged
/// stricter than it, say why.
///
/// IPv4-mapped addresses (`::ffff:0:0/96`, "IPv4-mapped Address") are judged
/// as the IPv4 address they carry, before this table is read.
const SPECIAL_PURPOSE: &[(&str, &str, bool)] = &[
    // ----- IPv4 Special-Purpose Address Registry -----
    ("0.0.0.0/8", "\"This network\"", false),
    ("0.0.0.0/32", "\"This host on this network\"", false),
    ("10.0.0.0/8", "Private-Use", false),
    ("100.64.0.0/10", "Shared Address Space", false),
    ("127.0.0.0/8", "Loopback", false),
    ("169.254.0.0/16", "Link Local", false),
    ("172.16.0.0/12", "Private-Use", false),
    ("192.0.0.0/24", "IETF Protocol Assignments", false),
    ("192.0.0.0/29", "IPv4 Service Continuity Prefix", false),
    ("192.0.0.8/32", "IPv4 dummy address", false),
    ("192.0.0.9/32", "Port Control Protocol Anycast", true),
    (
        "192.0.0.10/32",
        "Traversal Using Relays around NAT Anycast",
        true,
    ),
    ("192.0.0.170/32", "NAT64/DNS64 Discovery", false),
    ("192.0.0.171/32", "NAT64/DNS64 Discovery", false),
    ("192.0.2.0/24", "Documentation (TEST-NET-1)", false),
    ("192.31.196.0/24", "AS112-v4", true),
    ("192.52.193.0/24", "AMT", true),
    // The registry's 192.88.99.2/32 ("6a44-relay anycast address") is
    // globally reachable, but it is a relay on to an address taken from the
    // packet, like 6to4 and Teredo below: the whole block is refused.
    ("192.88.99.0/24", "Deprecated (6to4 Relay Anycast)", false),
    ("192.168.0.0/16", "Private-Use", false),
    ("192.175.48.0/24", "Direct Delegation AS112 Service", true),
    ("198.18.0.0/15", "Benchmarking", false),
    ("198.51.100.0/24", "Documentation (TEST-NET-2)", false),
    ("203.0.113.0/24", "Documentation (TEST-NET-3)", false),
    ("240.0.0.0/4", "Reserved", false),
    ("255.255.255.255/32", "Limited Broadcast", false),
    // Not in the registry: multicast has a registry of its own.
    ("224.0.0.0/4", "Multicast", false),
    // ----- IPv6 Special-Purpose Address Registry -----
    ("::1/128", "Loopback Address", false),
    ("::/128", "Unspecified Address", false),
    // Globally reachable in the registry, but a NAT64 translator in the
    // server's own network turns it into the IPv4 address it carries,
    // private or not: refused whatever it carries.
    ("64:ff9b::/96", "IPv4-IPv6 Translat.", false),
    ("64:ff9b:1::/48", "IPv4-IPv6 Translat. (local use)", false),
    ("100::/64", "Discard-Only Address Block", false),
    ("100:0:0:1::/64", "Dummy IPv6 Prefix", false),
    ("2001::/23", "IETF Protocol Assignments", false),
    ("2001::/32", "TEREDO", false),
    ("2001:1::1/128", "Port Control Protocol Anycast", true),
    ("2001:1::2/128", "TURN Anycast", true),
    (
        "2001:1::3/128",
        "DNS-SD Service Registration Protocol Anycast",
        true,
    ),
    ("2001:2::/48", "Benchmarking", false),
    ("2001:3::/32", "AMT", true),
    ("2001:4:112::/48", "AS112-v6", true),
    ("2001:10::/28", "Deprecated (previously ORCHID)", false),
    ("2001:20::/28", "ORCHIDv2", true),
    (
        "2001:30::/28",
        "Drone Remote ID Protocol Entity Tags (DETs) Prefix",
        true,
    ),
    ("2001:db8::/32", "Documentation", false),
    // Carries an IPv4 address a relay reaches on the sender's behalf:
    // refused whatever it carries.
    ("2002::/16", "6to4", false),
    ("2620:4f:8000::/48", "Direct Delegation AS112 Service", true),
    ("3fff::/20", "Documentation", false),
    ("5f00::/16", "Segment Routing (SRv6) SIDs", false),
    ("fc00::/7", "Unique-Local", false),
    ("fe80::/10", "Link-Local Unicast", false),
    // Not in the registry: deprecated forms that carry an IPv4 address (a
    // translator or tunnel would reach it on the sender's behalf, private or
    // not), the deprecated site-local block some networks still route, and
    // multicast.
    ("::/96", "IPv4-compatible (deprecated)", false),
    ("::ffff:0:0:0/96", "IPv4-translated", false),
    ("fec0::/10", "Site-Local (deprecated)", false),
    ("ff00::/8", "Multicast", false),
];

/// A row of [`SPECIAL_PURPOSE`], parsed.
struct Block {
    network: IpNetwork,
    name: &'static str,
    reachable: bool,
}

static BLOCKS: LazyLock<Vec<Block>> = LazyLock::new(|| {
    SPECIAL_PURPOSE
        .iter()
        .filter_map(|&(network, name, reachable)| {
            Some(Block {
                // Every row parses (a test checks).
                network: network.parse().ok()?,
                name,
                reachable,
            })
        })
        .collect()
});

/// The most specific special-purpose block holding `ip`, if any.
fn special_block(ip: IpAddr) -> Option<&'static Block> {
    BLOCKS
        .iter()
        .filter(|block| block.network.contains(ip))
        .max_by_key(|block| block.network.prefix)
}

/// The address policy of the push sender: public addresses only, plus explicitly
/// allowed networks.
#[derive(Debug, Clone, Default)]
pub struct AddressPolicy {
    allowed: Vec<IpNetwork>,
    allow_all: bool,
}

impl AddressPolicy {
    /// Public addresses only (the default).
    pub fn public_only() -> Self {
        AddressPolicy::default()
    }

    /// Every address, private and loopback included. For trusted networks and tests only.
    pub fn allow_all() -> Self {
        AddressPolicy {
            allowed: Vec::new(),
            allow_all: true,
        }
    }

    /// Also allows the given networks (for example `127.0.0.0/8` for a local test receiver).
    #[must_use]
    pub fn allow(mut self, network: IpNetwork) -> Self {
        self.allowed.push(network);
        self
    }

    /// Whether the sender may connect to `ip`.
    pub fn permits(&self, ip: IpAddr) -> bool {
        self.refusal(ip).is_none()
    }

    /// Checks the host of a URL about to be called: an IP address against
    /// the policy (a resolver never sees it), and `localhost` as the
    /// loopback address it names. Other names are checked when they are
    /// resolved ([`GuardedResolver`](super::GuardedResolver)). The error says
    /// why.
    pub fn check_host(&self, host: &url::Host<&str>) -> Result<(), String> {
        let ip = match host {
            url::Host::Ipv4(ip) => IpAddr::V4(*ip),
            url::Host::Ipv6(ip) => IpAddr::V6(*ip),
            url::Host::Domain(name) => {
                let name = name.trim_end_matches('.');
                let local = name.eq_ignore_ascii_case("localhost")
                    || name
                        .rsplit_once('.')
                        .is_some_and(|(_, tld)| tld.eq_ignore_ascii_case("localhost"));
                match local {
                    true => IpAddr::V4(Ipv4Addr::LOCALHOST),
                    false => return Ok(()),
                }
            }
        };
        match self.refusal(ip) {
            Some(why) => Err(why),
            None => Ok(()),
        }
    }

    /// Why the sender may not connect to `ip` (the special-purpose block it
    /// is in), or `None` if it may.
    pub fn refusal(&self, ip: IpAddr) -> Option<String> {
        if self.allow_all || self.allowed.iter().any(|n| n.contains(ip)) {
            return None;
        }
        let block = special_block(ip).filter(|block| !block.reachable)?;
        let judged = normalize(ip);
        let carries = match judged == ip {
            true => String::new(),
            false => format!(" (it carries {judged})"),
        };
        Some(format!(
            "{ip}{carries} is in {} ({}), which is not globally reachable",
            block.network, block.name
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_internal_ranges_by_default() {
        let policy = AddressPolicy::public_only();
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "224.0.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "198.18.0.1",
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "::10.0.0.1",
            "::8.8.8.8",
            "64:ff9b::7f00:1",
            "64:ff9b::808:808",
            "64:ff9b:1::a00:1",
            "2002:7f00:1::1",
            "2002:c0a8:101::1",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            "fec0::1",
            "feff::1",
        ] {
            assert!(
                !policy.permits(ip.parse().unwrap()),
                "{ip} should be blocked"
            );
        }
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "2606:4700::1111",
            "100.128.0.1",
            "2001:4860:4860::8888",
            "64:ff9c::1",
        ] {
            assert!(
                policy.permits(ip.parse().unwrap()),
                "{ip} should be allowed"
            );
        }
    }

    /// One address inside each IANA special-purpose block (IPv4 and IPv6
    /// registries) that the registry does not mark globally reachable, and
    /// one inside each that it does. Decided without connecting anywhere.
    #[test]
    fn follows_the_iana_special_purpose_registries() {
        let policy = AddressPolicy::public_only();
        let refused = [
            "0.1.2.3",             // "This network"
            "10.0.0.1",            // Private-Use
            "100.64.0.1",          // Shared Address Space
            "100.127.255.254",     // Shared Address Space
            "127.1.2.3",           // Loopback
            "169.254.1.1",         // Link Local
            "172.31.255.255",      // Private-Use
            "192.0.0.1",           // IETF Protocol Assignments
            "192.0.0.8",           // IPv4 dummy address
            "192.0.0.170",         // NAT64/DNS64 Discovery
            "192.0.0.255",         // IETF Protocol Assignments
            "192.0.2.1",           // Documentation (TEST-NET-1)
            "192.88.99.1",         // Deprecated (6to4 Relay Anycast)
            "192.88.99.2",         // 6a44-relay anycast: a relay on to other addresses
            "192.168.0.1",         // Private-Use
            "198.18.0.1",          // Benchmarking
            "198.19.255.255",      // Benchmarking
            "198.51.100.7",        // Documentation (TEST-NET-2)
            "203.0.113.9",         // Documentation (TEST-NET-3)
            "240.0.0.1",           // Reserved
            "255.255.255.255",     // Limited Broadcast
            "224.0.0.251",         // multicast (its own registry)
            "::ffff:192.0.0.1",    // IPv4-mapped: judged as the IPv4 address
            "::ffff:192.88.99.1",  // IPv4-mapped
            "::ffff:203.0.113.1",  // IPv4-mapped
            "::ffff:0:0",          // IPv4-mapped 0.0.0.0
            "::ffff:0:808:808",    // IPv4-translated (SIIT), whatever it carries
            "::1",                 // Loopback
            "::",                  // Unspecified
            "64:ff9b:1::808:808",  // IPv4-IPv6 Translat. (local use)
            "100::1",              // Discard-Only Address Block
            "100:0:0:1::1",        // Dummy IPv6 Prefix
            "2001::1",             // TEREDO
            "2001:0:4136:e378::1", // TEREDO
            "2001:1::4",           // IETF Protocol Assignments
            "2001:2::1",           // Benchmarking
            "2001:10::1",          // Deprecated (previously ORCHID)
            "2001:1ff:ffff::1",    // IETF Protocol Assignments (end of 2001::/23)
            "2001:db8::1",         // Documentation
            "2002:808:808::1",     // 6to4, whatever it carries
            "2002:c000:201::1",    // 6to4 carrying TEST-NET-1
            "3fff::1",             // Documentation
            "3fff:fff:ffff::1",    // Documentation (end of 3fff::/20)
            "5f00::1",             // Segment Routing (SRv6) SIDs
            "fc00::1",             // Unique-Local
            "fdff:ffff::1",        // Unique-Local
            "fe80::1",             // Link-Local Unicast
            "febf::1",             // Link-Local Unicast (end of fe80::/10)
            "ff0e::1",             // multicast
        ];
        // Every wrong decision at once, so a failure shows them all.
        let wrongly_allowed: Vec<&str> = refused
            .into_iter()
            .filter(|ip| policy.permits(ip.parse().unwrap()))
            .collect();
        assert!(wrongly_allowed.is_empty(), "allowed: {wrongly_allowed:?}");
        let reachable = [
            "1.1.1.1",
            "100.63.255.255",   // just below Shared Address Space
            "100.128.0.0",      // just above it
            "192.0.0.9",        // Port Control Protocol Anycast
            "192.0.0.10",       // Traversal Using Relays around NAT Anycast
            "192.0.1.1",        // past IETF Protocol Assignments
            "192.31.196.1",     // AS112-v4
            "192.52.193.1",     // AMT
            "192.88.98.255",    // just below the deprecated relay block
            "192.175.48.1",     // Direct Delegation AS112 Service
            "198.17.255.255",   // just below Benchmarking
            "198.20.0.0",       // just above it
            "223.255.255.255",  // last unicast before multicast
            "::ffff:8.8.8.8",   // IPv4-mapped public address
            "2001:1::1",        // Port Control Protocol Anycast
            "2001:1::2",        // TURN Anycast
            "2001:1::3",        // DNS-SD Service Registration Protocol Anycast
            "2001:3::1",        // AMT
            "2001:4:112::1",    // AS112-v6
            "2001:20::1",       // ORCHIDv2
            "2001:30::1",       // Drone Remote ID Protocol Entity Tags
            "2001:200::1",      // just past 2001::/23
            "2001:db7:ffff::1", // just below Documentation
            "2620:4f:8000::1",  // Direct Delegation AS112 Service
            "3ffe::1",          // below 3fff::/20
            "4000::1",
        ];
        let wrongly_refused: Vec<&str> = reachable
            .into_iter()
            .filter(|ip| !policy.permits(ip.parse().unwrap()))
            .collect();
        assert!(wrongly_refused.is_empty(), "refused: {wrongly_refused:?}");
    }

    #[test]
    fn every_registry_row_parses() {
        for (network, name, _) in SPECIAL_PURPOSE {
            assert!(network.parse::<IpNetwork>().is_ok(), "{network} ({name})");
        }
        assert_eq!(BLOCKS.len(), SPECIAL_PURPOSE.len());
    }

    #[test]
    fn a_refusal_names_the_registry_block() {
        let policy = AddressPolicy::public_only();
        let why = policy.refusal("192.0.2.1".parse().unwrap()).unwrap();
        assert!(why.contains("Documentation (TEST-NET-1)"), "{why}");
        let why = policy.refusal("::ffff:10.1.2.3".parse().unwrap()).unwrap();
        assert!(why.contains("Private-Use"), "{why}");
        assert_eq!(policy.refusal("8.8.8.8".parse().unwrap()), None);
        let err = crate::push::check_webhook_url("http://198.51.100.1/hook", &policy).unwrap_err();
        assert!(err.contains("TEST-NET-2"), "{err}");
        // Names under localhost are loopback without asking a resolver.
        for url in [
            "http://localhost/",
            "http://LOCALHOST./",
            "http://app.localhost/",
        ] {
            let url = url::Url::parse(url).unwrap();
            assert!(policy.check_host(&url.host().unwrap()).is_err(), "{url}");
            let loopback = AddressPolicy::public_only().allow("127.0.0.0/8".parse().unwrap());
            assert!(loopback.check_host(&url.host().unwrap()).is_ok(), "{url}");
        }
        let named = url::Url::parse("http://example.com/").unwrap();
        assert!(policy.check_host(&named.host().unwrap()).is_ok());
    }

    #[test]
    fn allow_list_opens_specific_networks() {
        let policy = AddressPolicy::public_only().allow("127.0.0.0/8".parse().unwrap());
        assert!(policy.permits("127.0.0.5".parse().unwrap()));
        assert!(policy.permits("::ffff:127.0.0.5".parse().unwrap()));
        assert!(!policy.permits("10.0.0.1".parse().unwrap()));
        assert!("10.0.0.0/33".parse::<IpNetwork>().is_err());
        assert!(AddressPolicy::allow_all().permits("10.0.0.1".parse().unwrap()));
    }
}
