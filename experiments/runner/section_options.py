"""The command-line options a suite that writes its own report (the coursework suites) takes.

Such a suite runs one function (experiments.coursework.cli.COURSEWORK_SUITES) instead of a sweep: an option
reaches it only where the function has a parameter for it (--layers, --backends, --profile, --seed,
--no-figures); any other option given would be silently dropped, so it is refused by name instead.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

from experiments.runner.options import UsageError, build_parser, parse_names
from solvers.registry import BACKEND_NAMES, LAYERS, availability

#: Options that never reach a solve: where the output goes and how much the console says.
_ALWAYS = {"suite", "list", "out", "no_progress", "quiet", "verbose", "version"}


def _given(args) -> list[str]:
    """The options of `args` that differ from the parser's defaults (the ones the user gave), by dest."""
    defaults = vars(build_parser().parse_args([]))
    return [dest for dest, value in defaults.items() if dest not in _ALWAYS and getattr(args, dest, value) != value]


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-") if dest != "C" else "--C"


def _names(text: str, allowed, what: str) -> list[str]:
    """parse_names, where an empty list (",") is refused too: a suite's function needs a name."""
    names = parse_names(text, allowed, what)
    if not names:
        raise UsageError(f"unknown {what} {text!r}; choose from {', '.join(allowed)}")
    return names


def _one(names: list[str], flag: str, suite: str) -> str:
    if len(names) != 1:
        raise UsageError(f"suite {suite!r} solves with one {flag[2:].rstrip('s')}: give {flag} one name, "
                         f"got {', '.join(names)}")
    return names[0]


def _solvers(args, params: dict, suite: str) -> dict:
    """--layers and --backends as the suite's `layer`/`backend` (or seeds' `backends` pairs), checked available."""
    layers = _names(args.layers, LAYERS, "layer") if args.layers else None
    names = _names(args.backends, BACKEND_NAMES, "backend") if args.backends else None
    opts: dict = {}
    if "backends" in params:  # seeds: (layer, backend) pairs
        default = params["backends"].default
        pairs = ([(lay, n) for lay in (layers or LAYERS) for n in names] if names
                 else [p for p in default if p[0] in layers])
        opts["backends"] = tuple(pairs)
    else:
        if layers is not None:
            # a function whose default layer is None solves in every layer: both names mean that default
            both = params["layer"].default is None and set(layers) == set(LAYERS)
            opts["layer"] = None if both else _one(layers, "--layers", suite)
        if names is not None:
            opts["backend"] = _one(names, "--backends", suite)
        lay = opts.get("layer", params["layer"].default)
        backend = opts.get("backend", params["backend"].default)
        pairs = [(x, backend) for x in (LAYERS if lay is None else (lay,))]
    for lay, n in pairs:
        ok, reason = availability(lay, n)
        if not ok:
            raise UsageError(f"{lay}/{n} is not available for suite {suite!r}: {reason}")
    return opts


def section_options(suite: str, run: Callable, args) -> dict:
    """The keyword options of `run` (a coursework suite's function) that the command line gives; an option
    the function has no parameter for is a UsageError naming it."""
    params = inspect.signature(run).parameters
    takes = {"layers": "layer" in params or "backends" in params, "backends": "layer" in params or "backends" in params,
             "profile": "profile" in params, "seed": "seed" in params, "no_figures": "figures" in params}
    given = _given(args)
    refused = [d for d in given if not takes.get(d, False)]
    if refused:
        raise UsageError(f"{_flag(refused[0])} does not apply to suite {suite!r}: it writes its own report with "
                         f"fixed data and parameters (it takes: "
                         + (", ".join(_flag(d) for d, ok in takes.items() if ok) or "--out only") + ")")
    opts = _solvers(args, params, suite) if args.layers or args.backends else {}
    if args.profile:
        opts["profile"] = args.profile
    if "seed" in given:
        opts["seed"] = args.seed
    if args.no_figures:
        opts["figures"] = False
    if "progress" in params:  # a suite that shows its progress follows --no-progress and --quiet, as the sweep does
        opts["progress"] = not (args.no_progress or args.quiet)
    return opts
