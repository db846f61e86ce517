"""Which names the explorer answers to: this machine's own addresses, and the names a lecturer allows.

Why: a web page on another site can point a name of its own at this machine (DNS rebinding); the
browser then sends that name as the Host (and the Origin) of requests to the explorer, and, as
they match each other, neither Bokeh's websocket origin check nor Tornado's same-origin test
sees anything foreign. So every request whose Host is not a name the explorer serves on is
refused (403) before Bokeh sees it: the page, its session token and the websocket alike; and
the websocket's Origin must be one of those names too (Bokeh's `allow_websocket_origin`).
Addresses need no allowing (no other site can serve a page from this machine's address), names
do: `--allow-host NAME[:PORT]`.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass

#: What `--address` may be to listen on every interface.
EVERY_INTERFACE = ("0.0.0.0", "::", "")
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
_NAME = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*\.?")


def _bracketed(name: str) -> str:
    """A host name as the Host header writes it: an IPv6 address in brackets, lower case."""
    name = name.lower().split("%")[0]  # an IPv6 zone (fe80::1%eth0) is not part of a Host
    try:
        return f"[{name}]" if ipaddress.ip_address(name).version == 6 else name
    except ValueError:
        return name


def parse_host(text: str) -> tuple[str, int | None]:
    """`--allow-host HOST[:PORT]` -> (host as in a Host header, port or None); ValueError naming what is wrong."""
    raw = text.strip().lower()
    match = re.fullmatch(r"\[([0-9a-f:.]+)\](?::(\d+))?|([^:\[\]]+)(?::(\d+))?|([0-9a-f:.]+)", raw)
    if not match:
        raise ValueError(f"not a host name or address: {text!r}; write HOST or HOST:PORT ([ADDRESS]:PORT for IPv6)")
    host = match.group(1) or match.group(3) or match.group(5)
    port = match.group(2) or match.group(4)
    if port is not None and not 1 <= int(port) <= 65535:
        raise ValueError(f"port must be in 1..65535, got {port} in {text!r}")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if "*" in host:
            raise ValueError(f"{text!r}: give each name in full (a wildcard would let other sites' names in)") from None
        if not _NAME.fullmatch(host) or len(host) > 253:
            raise ValueError(f"not a host name or address: {text!r}") from None
    return _bracketed(host), None if port is None else int(port)


def machine_addresses() -> list[str]:
    """This machine's addresses on every interface (psutil), as Host headers write them."""
    import psutil  # lazy: --help stays fast

    found = []
    for addresses in psutil.net_if_addrs().values():
        found += [_bracketed(a.address) for a in addresses if a.family in (socket.AF_INET, socket.AF_INET6)]
    return found


@dataclass(frozen=True)
class Door:
    """The Host names the explorer answers to and the websocket origins it accepts (name:port)."""

    names: frozenset[str]
    origins: tuple[str, ...]

    @classmethod
    def serving(cls, address: str, port: int, allowed: list[tuple[str, int | None]] = ()) -> Door:
        """The door of a server listening on `address`:`port`, with the `--allow-host` names `allowed`."""
        names = {_bracketed(n) for n in LOOPBACK_NAMES}
        names.add(_bracketed(address or "0.0.0.0"))  # the address itself: the browser tab it opens goes there
        if address in EVERY_INTERFACE:
            names |= set(machine_addresses())
        origins = set()
        for name, its_port in [(name, None) for name in names] + list(allowed):
            names.add(name)
            # Bokeh's allowlist reads name:port at its first colon, so no IPv6 address: a page loaded from one
            # opens its websocket with the Origin equal to the Host, which Tornado lets through unasked
            if ":" not in name:
                origins |= {f"{name}:{port}", f"{name}:{its_port or port}"}
        return cls(frozenset(names), tuple(sorted(origins)))

    def foreign_hosts(self) -> str:
        """A regular expression (tornado's host pattern) that matches every host name but these."""
        return "(?!(?:" + "|".join(re.escape(name) for name in sorted(self.names)) + ")$).*"


def refuse_foreign_hosts(server, door: Door) -> None:
    """Answer 403 to any request whose Host is not one of `door`'s names, before any of Bokeh's handlers.

    Tornado consults host patterns added with `add_handlers` before the application's own (any host)
    ones. Bokeh's Server keeps its Tornado application in `_tornado` (Panel reads it there too): the
    one private name used here; tests/test_explore_door.py sends real requests through it.
    """
    from tornado.web import RequestHandler

    class ForeignHost(RequestHandler):
        def prepare(self):
            self.set_status(403)
            self.set_header("Content-Type", "text/plain; charset=utf-8")
            self.finish(f"403: this explorer does not answer to the name {self.request.host_name!r}. If you serve it "
                        f"under that name on purpose, start it with --allow-host {self.request.host_name}\n")

    server._tornado.add_handlers(door.foreign_hosts(), [(r".*", ForeignHost)])
