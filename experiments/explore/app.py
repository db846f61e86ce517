"""Interactive duality explorer in the browser: click points, move C, watch primal and dual meet.

    python -m experiments.explore                 # opens http://127.0.0.1:5006 in the browser
    python -m experiments.explore --port 8000 --no-browser

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

DEFAULT_PORT = 5006


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m experiments.explore",
        description="Serve the interactive SVM duality explorer: click points of two classes, move C, "
                    "and see the primal and dual optima, the gap, the KKT residuals and the verdict.")
    parser.add_argument("--port", type=_port, default=DEFAULT_PORT, help=f"TCP port (default {DEFAULT_PORT})")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1: this machine only; 0.0.0.0: every interface)")
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


def main(argv=None) -> int:
    args = parse_args(argv)
    # Panel and the solvers are imported only now, so --help and bad options answer at once:
    import panel as pn

    from experiments.explore.page import ExplorerPage  # lazy: Panel, Bokeh and the solvers

    # Browsers may only open the page's websocket from the address they loaded it from; listening
    # on every interface means "reachable by any name of this machine".
    everywhere = args.host in ("0.0.0.0", "::")
    origins = "*" if everywhere else [f"{args.host}:{args.port}", f"localhost:{args.port}"]
    try:
        server = pn.serve(lambda: ExplorerPage().layout, port=args.port, address=args.host, websocket_origin=origins,
                          show=not args.no_browser, start=False,
                          title="SVM duality explorer", verbose=False)
    except OSError as exc:  # address in use, unknown host: one line, no traceback
        print(f"explore: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    url = f"http://{args.host}:{server.port}/"
    print(f"SVM duality explorer at {url} (Ctrl+C stops it)", flush=True)
    try:
        server.io_loop.start()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
