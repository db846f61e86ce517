"""Interactive duality explorer in the browser: click points, move C, watch primal and dual meet.

    python -m experiments.explore                 # opens http://127.0.0.1:5006 in the browser
    python -m experiments.explore --port 8000 --no-browser
    python -m experiments.explore --address 0.0.0.0 --allow-host lecture-room.example   # for a class

Only this machine's addresses (and the names given with --allow-host) are answered to: any other
Host is refused, so that no other web site can reach the page through a name of its own (see
experiments/explore/door.py).

Built with Panel on Bokeh. Why: Bokeh's `PointDrawTool` gives click-to-add and drag-to-move
points on a plot with no JavaScript of ours, its `SaveTool` exports the figure as PNG and its
hover tool shows per-point values; Panel adds the widgets (sliders, selects, a file download),
async callbacks and a server started from Python (`pn.serve`). Both are maintained by the
HoloViz / Bokeh projects, install from PyPI with pip, and run offline (resources are served by
the local server, nothing is fetched from a CDN). The page's computing lives in
`experiments.explore.compute` (plain functions, tested without a browser); this module is the
layout, the wiring and the worker.

Each change (points, C, kernel, layer, ...) sends a request to a worker thread. Requests are
numbered: one that was superseded before it started is skipped, and the result of one
superseded while it ran is dropped, so the page always ends at the newest settings and never
waits on the event loop.
"""

from __future__ import annotations

import argparse
import sys

from experiments.explore.door import Door, parse_host, refuse_foreign_hosts  # light: Tornado is imported when used

DEFAULT_PORT = 5006


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m experiments.explore",
        description="Serve the interactive SVM duality explorer: click points of two classes, move C, "
                    "and see the primal and dual optima, the gap, the KKT residuals and the verdict.")
    parser.add_argument("--port", type=_port, default=DEFAULT_PORT, help=f"TCP port (default {DEFAULT_PORT})")
    parser.add_argument("--address", "--host", dest="address", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1: this machine only; 0.0.0.0: every "
                             "interface, for a class, who reach it by this machine's address)")
    parser.add_argument("--allow-host", action="append", default=[], type=_allowed_host, metavar="HOST[:PORT]",
                        help="a name browsers may reach the page by, besides this machine's addresses (repeatable): "
                             "its name on the class network, or a reverse proxy's (with the proxy's port if it is "
                             "not --port). A request by any other name is refused (403): another web site could "
                             "point a name of its own at this machine")
    parser.add_argument("--no-browser", action="store_true", help="do not open a browser tab")
    return parser.parse_args(argv)


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port must be in 1..65535, got {value}")
    return value


def _allowed_host(text: str) -> tuple[str, int | None]:
    try:
        return parse_host(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _cannot_listen(args: argparse.Namespace, exc: OSError) -> int:
    """Address in use, unknown host: one line, no traceback, exit code 2."""
    print(f"explore: cannot listen on {args.address}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
    return 2


def _try_listen(address: str, port: int) -> None:
    """Bind the port and let it go again, with Tornado's bind_sockets as Bokeh's server binds it: a port in use
    is refused before Panel, Bokeh and the solvers are imported (seconds on a busy machine). OSError if not."""
    from tornado.netutil import bind_sockets

    for sock in bind_sockets(port, address or None):
        sock.close()


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        _try_listen(args.address, args.port)
    except OSError as exc:
        return _cannot_listen(args, exc)
    # Panel and the solvers are imported only now, so --help, bad options and a port in use answer at once:
    import panel as pn

    from experiments.explore.page import ExplorerPage  # lazy: Panel, Bokeh and the solvers

    door = Door.serving(args.address, args.port, args.allow_host)
    try:
        server = pn.serve(lambda: ExplorerPage().layout, port=args.port, address=args.address,
                          websocket_origin=list(door.origins), show=not args.no_browser, start=False,
                          title="SVM duality explorer", verbose=False,
                          location=False)  # the page keeps no state in its URL; Panel's reader of it splits an
                                           # IPv6 Host ([::1]:5006) at every colon and fails the request
    except OSError as exc:  # taken since _try_listen let it go
        return _cannot_listen(args, exc)
    refuse_foreign_hosts(server, door)
    url = f"http://{args.address}:{server.port}/"
    print(f"SVM duality explorer at {url} (Ctrl+C stops it); it answers to {', '.join(sorted(door.names))}",
          flush=True)
    try:
        server.io_loop.start()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
