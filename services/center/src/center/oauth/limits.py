"""The key a source address counts under in the rate limits (`center.throttles`): an IPv6
source by its /64, so cycling through one subscriber's addresses buys nothing.
"""

from __future__ import annotations

import ipaddress


def source(address: str) -> str:
    """The key of a source address: an IPv4 address itself, an IPv6 one its /64 (one
    subscriber's network, whose 2**64 addresses cost nothing to cycle through)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)
