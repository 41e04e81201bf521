//! Which webhook addresses the push sender may connect to.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

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

/// An IPv4-mapped IPv6 address is judged as the IPv4 address it carries.
fn normalize(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

fn v4_forbidden(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || a == 0
        || (a == 100 && (64..=127).contains(&b)) // CGNAT 100.64.0.0/10
        || (a == 198 && (b == 18 || b == 19)) // benchmarking 198.18.0.0/15
        || a >= 240 // reserved
}

fn v6_forbidden(ip: Ipv6Addr) -> bool {
    let segments = ip.segments();
    let first = segments[0];
    let bits = u128::from(ip);
    ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || (first & 0xfe00) == 0xfc00 // unique local fc00::/7
        || (first & 0xffc0) == 0xfe80 // link-local fe80::/10
        || (first & 0xffc0) == 0xfec0 // site-local fec0::/10 (deprecated, still routed by some)
        // Addresses that carry an IPv4 address a gateway may reach on the
        // sender's behalf (a private one, say): refused whatever they carry.
        || bits >> 32 == 0 // IPv4-compatible ::a.b.c.d (::/96)
        || bits >> 32 == 0x0064_ff9b_0000_0000_0000_0000 // NAT64 64:ff9b::/96
        || bits >> 80 == 0x0064_ff9b_0001 // local-use NAT64 64:ff9b:1::/48
        || first == 0x2002 // 6to4 2002::/16
        || (first == 0x2001 && segments[1] == 0) // Teredo 2001::/32
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
        if self.allow_all || self.allowed.iter().any(|n| n.contains(ip)) {
            return true;
        }
        match normalize(ip) {
            IpAddr::V4(v4) => !v4_forbidden(v4),
            IpAddr::V6(v6) => !v6_forbidden(v6),
        }
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
