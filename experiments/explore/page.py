"""The explorer's page: Bokeh figures and Panel widgets wired to `experiments.explore.compute`.

One `ExplorerPage` per browser session. Computing is in `explore_compute`; here are the
layout, the conversion of an `Exploration` into the figures' data sources, and the worker
that keeps the page responsive (see `experiments.explore`).
"""

from __future__ import annotations

import html
import io
import math
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import numpy as np
import panel as pn
from bokeh.models import (
    ColumnDataSource,
    GlyphRenderer,
    HoverTool,
    PanTool,
    PointDrawTool,
    Range1d,
    ResetTool,
    SaveTool,
    Span,
    WheelZoomTool,
)
from bokeh.plotting import figure
from bokeh.plotting.contour import contour_data
from bokeh.transform import factor_cmap, factor_mark

from experiments.explore import compute as ec
from experiments.explore import family as ef
from experiments.explore.family_view import FamilyView
from experiments.separability import format_certificate, hull_outline
from formulations import recovery
from formulations.errors import SVMInputError
from solvers.profiles import PROFILES
from solvers.registry import LAYERS

# One solve at a time for the whole server: Pyomo models are not meant to be built from
# several threads at once, and the machine has few cores. Superseded requests are skipped.
WORKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="explore-solve")
CLASSES = ["+1", "-1"]
CLASS_COLORS = ["#1f77b4", "#d62728"]
EMPTY_WINDOW = (np.array([0.0, 0.0]), np.array([10.0, 10.0]))
C_SLIDER = (-3.0, 4.0, 0.05)  # log10 C: start, end, step


def _fmt(value, digits: int = 6) -> str:
    if value is None:
        return "-"
    if isinstance(value, tuple):
        return "(" + ", ".join(_fmt(v, digits) for v in value) + ")"
    if isinstance(value, float):
        return "-" if math.isnan(value) else f"{value:.{digits}g}"
    return str(value)


def summary_html(result: ec.Exploration) -> str:
    """The numbers as an HTML table; each value cell carries data-key (the browser test reads them)."""
    rows = []
    summary = result.summary()
    w = summary.pop("w*")
    lower, upper = summary.pop("b interval", (None, None))
    items = list(summary.items())
    items.insert(list(summary).index("b*"), ("w*", w))
    for key, value in items:
        rows.append(f'<tr><th style="text-align:left;padding-right:1em">{html.escape(key)}</th>'
                    f'<td data-key="{html.escape(key)}">{html.escape(_fmt(value))}</td></tr>')
        if key == "b*" and lower is not None:
            rows.append(f'<tr><th style="text-align:left">b valid interval (KKT)</th>'
                        f'<td data-key="b interval">[{_fmt(lower)}, {_fmt(upper)}]</td></tr>')
    if w is not None:
        for k, value in enumerate(w, start=1):
            rows.append(f'<tr style="display:none"><td data-key="w{k}">{value:.17g}</td></tr>')
    return "<table class='explorer-summary'>" + "".join(rows) + "</table>"


#: Pixels below the plane for its axis and its legend, whose entries come and go with what is drawn: room for all of
#: them, so that the plane's frame (and every point on it) keeps its place on the screen as they do.
LEGEND_ROOM = 150


#: what a click on the plane adds, and what the bar plot's dashed line is, by member
PLANE_TITLES = {ef.C_SVM: "Click: add a point of the selected class; drag: move it",
                ef.ONE_CLASS: "Click: add a point (one class: its colour is ignored); drag: move it",
                ef.EPS_SVR: "Click: add a point (x: input, y: its target); drag: move it",
                ef.NU_SVR: "Click: add a point (x: input, y: its target); drag: move it"}
BAR_TITLES = {ef.C_SVM: "alpha* per point (dual variables; dashed: C)",
              ef.NU_SVC: "alpha* per point (dual variables; dashed: their bound 1/l)",
              ef.ONE_CLASS: "alpha* per point (dual variables; dashed: their bound 1/(nu l))",
              ef.EPS_SVR: "alpha - alpha* per point (dual variables; dashed: C)",
              ef.NU_SVR: "alpha - alpha* per point (dual variables; dashed: their bound C/l)"}


class ExplorerPage(FamilyView):
    """Widgets, figures and the request loop of one session."""

    def __init__(self, start: str = "example_5_1"):
        self._generation = 0
        self._requested_at = time.perf_counter()
        self._syncing_C = False
        # In a server session the first solve waits until the session is loaded (pn.state.onload). Sent
        # while the page was being built, a fast solve's result could reach the document from the worker
        # thread before the session was attached, and was lost: the browser test's second page stayed at
        # "solving request #1..." (2 of 5 whole-suite runs; the first page's solve, with cold imports, was
        # slower than the session's start).
        self._ready = pn.state.curdoc is None
        self._build_widgets(start)
        self._build_plane()
        self._build_family_renderers()
        self._build_alpha_plot()
        self._build_nu_plot()
        self._build_layout()
        self._member_changed()
        self._load_start()
        if not self._ready:
            pn.state.onload(self._loaded)

    def _loaded(self) -> None:
        self._ready = True
        self.request()

    # ------------------------------------------------------------------ layout

    def _build_widgets(self, start: str) -> None:
        w = pn.widgets
        self.start = w.Select(label="Start from", options=list(ec.STARTS), value=start, width=160)
        self.load = w.Button(label="Load", color="primary", width=80)
        self.member = w.Select(label="Member", options=list(ef.MEMBER_LABELS), value="C-SVM", width=130)
        self.nu = w.FloatSlider(label="nu", start=0.01, end=1.0, step=0.01, value=0.3, width=190)
        self.epsilon = w.FloatInput(label="epsilon (tube)", value=0.1, start=0.0, step=0.05, width=110)
        self.point_class = w.RadioButtonGroup(label="Class of a new point", options=CLASSES, value="+1",
                                              color="default", width=120)
        self.log_C = w.FloatSlider(label="log10 C", start=C_SLIDER[0], end=C_SLIDER[1], step=C_SLIDER[2],
                                   value=0.0, width=190)
        self.C_text = w.TextInput(label="C (type a number)", value="1", width=120)
        self.hard = w.Checkbox(label="hard margin (C = inf)", value=False)
        self.formulation = w.Select(label="Formulation", options=list(ec.FORMULATION_CHOICES), value="dual", width=130)
        self.kernel = w.Select(label="Kernel", options=list(ec.KERNEL_CHOICES), value="linear", width=100)
        self.gamma = w.FloatInput(label="gamma", value=1.0, start=1e-6, width=80)
        self.degree = w.IntInput(label="degree", value=3, start=1, end=10, width=70)
        self.coef0 = w.FloatInput(label="coef0", value=1.0, width=80)
        self.layer = w.Select(label="Layer", options=list(LAYERS), value="pyomo", width=100)
        self.backend = w.Select(label="Backend", options=ec.available_backends("pyomo"), value="clarabel", width=110)
        self.profile = w.Select(label="Profile", options=list(PROFILES), value="high", width=100)
        self.method = w.Select(label="Method", options=list(ec.METHODS), value="auto", width=110)
        self.compare = w.Checkbox(label="also solve through the other layer", value=False)
        self.csv = w.FileDownload(callback=self._csv_file, filename="explorer_points.csv",
                                  label="Export points (CSV)", color="success", width=200)
        self.busy = pn.indicators.LoadingSpinner(value=False, visible=False, size=22)
        self.state = pn.pane.HTML("", width=420)
        self.message = pn.pane.Alert("", alert_type="danger", visible=False, width=520)
        self.numbers = pn.pane.HTML("", width=520)
        self.layers = pn.pane.DataFrame(None, visible=False, index=False, float_format=lambda v: f"{v:.6g}")
        self.certificate = pn.pane.Markdown("", visible=False, width=520)
        self.answer_file = w.FileInput(accept=".json,.csv", multiple=False, width=220)
        self.answer_report = pn.pane.HTML("", visible=False, width=520)

        self.load.on_click(lambda _event: self._load_start())
        self.start.param.watch(lambda _event: self._load_start(), "value")
        self.point_class.param.watch(self._class_changed, "value")
        self.answer_file.param.watch(lambda _event: self._load_answer(), "value")
        self.log_C.param.watch(self._slider_moved, "value")
        self.C_text.param.watch(self._C_typed, "value")
        self.kernel.param.watch(self._kernel_changed, "value")
        self.member.param.watch(lambda _event: self._member_changed(load=True), "value")
        self.layer.param.watch(self._layer_changed, "value")
        for widget in (self.hard, self.formulation, self.gamma, self.degree, self.coef0, self.backend,
                       self.profile, self.method, self.compare, self.nu, self.epsilon):
            widget.param.watch(lambda _event: self.request(), "value")

    def _build_plane(self) -> None:
        lo, hi = EMPTY_WINDOW
        plane = figure(width=620, height=560, x_range=Range1d(lo[0], hi[0]), y_range=Range1d(lo[1], hi[1]),
                       tools=[], title="Click: add a point of the selected class; drag: move it",
                       x_axis_label="x1", y_axis_label="x2", match_aspect=True,
                       min_border_bottom=LEGEND_ROOM)
        self.contours = plane.contour(x=[0, 1], y=[0, 1], z=np.zeros((2, 2)), levels=[-1, 0, 1],
                                      fill_color=["#fbe3e1", "#dfeaf6"], fill_alpha=0.6,
                                      line_color=["#d62728", "black", "#1f77b4"], line_dash=["dashed", "solid", "dashed"],
                                      line_width=[1.2, 2, 1.2])
        self.contours.visible = False
        self.hulls = ColumnDataSource(dict(xs=[], ys=[], color=[]))
        plane.patches("xs", "ys", source=self.hulls, fill_color="color", line_color="color", fill_alpha=0.15,
                      legend_label="convex hulls")
        self.hull_links = ColumnDataSource(dict(x0=[], y0=[], x1=[], y1=[]))
        plane.segment("x0", "y0", "x1", "y1", source=self.hull_links, line_color="gray", line_dash="dotted")
        self.common = ColumnDataSource(dict(x=[], y=[]))
        plane.scatter("x", "y", source=self.common, marker="star", size=22, fill_color="gold", line_color="black",
                      legend_label="common point of both hulls")
        self.slacks = ColumnDataSource(dict(x0=[], y0=[], x1=[], y1=[]))
        plane.segment("x0", "y0", "x1", "y1", source=self.slacks, line_color="#ff7f0e", line_width=2,
                      legend_label="slack (to own margin)")
        self.points = ColumnDataSource(dict(x=[], y=[], cls=[]))
        drawn = plane.scatter("x", "y", source=self.points, size=9, line_color="white",
                              color=factor_cmap("cls", CLASS_COLORS, CLASSES),
                              marker=factor_mark("cls", ["circle", "square"], CLASSES), legend_field="cls")
        self.sv = ColumnDataSource(dict(x=[], y=[], role=[], color=[]))
        plane.scatter("x", "y", source=self.sv, size=17, fill_alpha=0, line_color="color", line_width=2,
                      legend_field="role")
        # every solved point, invisible, for the hover: its alpha, slack and y f(x)
        self.info = ColumnDataSource(dict(x=[], y=[], role=[], alpha=[], slack=[], y_f=[], index=[]))
        hoverable = plane.scatter("x", "y", source=self.info, size=12, fill_alpha=0, line_alpha=0)
        # where a loaded answer breaks a condition (ec.check_answer): an x on each such point
        self.breaks = ColumnDataSource(dict(x=[], y=[], point=[], breaks=[]))
        broken = plane.scatter("x", "y", source=self.breaks, marker="x", size=18, line_color="#d62728", line_width=3,
                               legend_label="answer breaks a condition")
        self.draw_tool = PointDrawTool(renderers=[drawn], add=True, drag=True, default_overrides={"cls": "+1"})
        hover = HoverTool(renderers=[hoverable], tooltips=[("point", "@index"), ("alpha", "@alpha{0.0000e}"),
                                                        ("slack", "@slack{0.0000}"), ("y f(x)", "@y_f{0.0000}"),
                                                        ("role", "@role")])
        # a filename: the save tool downloads at once instead of asking for a name
        broken_hover = HoverTool(renderers=[broken], tooltips=[("point", "@point"), ("the answer breaks", "@breaks")])
        plane.add_tools(self.draw_tool, hover, broken_hover, PanTool(), WheelZoomTool(), ResetTool(),
                        SaveTool(filename="explorer_plane"))
        # The class of the next click changes in the browser at once (no round trip to the server
        # between choosing -1 and clicking); the Python watcher keeps the server's copy in step.
        self.point_class.jslink(self.draw_tool, code={
            "value": f"target.default_overrides = {{cls: {CLASSES!r}[source.active]}}"})
        plane.toolbar.active_tap = self.draw_tool
        plane.toolbar.active_drag = self.draw_tool
        legend = plane.legend[0]
        legend.orientation, legend.label_text_font_size, legend.ncols = "horizontal", "8pt", 3
        plane.add_layout(legend, "below")  # outside the plane: it never hides a point
        for renderer in plane.select(type=GlyphRenderer):
            # a click selects the point it adds or drags: Bokeh's default faded every other point to 0.1 alpha,
            # unreadable on a projector; non-selected points keep their own look
            renderer.nonselection_glyph = None
        self.legend = legend
        self.points.on_change("data", self._points_changed)
        self.plane = plane

    def _build_alpha_plot(self) -> None:
        bars = figure(width=620, height=200, title="alpha* per point (dual variables; dashed: C)",
                      x_axis_label="point", y_axis_label="alpha", tools=[SaveTool(filename="explorer_alpha")],
                      x_range=Range1d(0, 1), y_range=Range1d(0, 1))
        self.alpha = ColumnDataSource(dict(index=[], alpha=[], color=[]))
        rects = bars.vbar(x="index", top="alpha", width=0.8, source=self.alpha, color="color")
        bars.add_tools(HoverTool(renderers=[rects], tooltips=[("point", "@index"), ("alpha", "@alpha{0.0000e}")]))
        self.C_line = Span(location=0, dimension="width", line_dash="dashed", line_color="gray", visible=False)
        bars.add_layout(self.C_line)
        self.bars = bars

    def _build_layout(self) -> None:
        self.class_title = pn.pane.Markdown("**Class of a new point**")
        controls = pn.Column(
            pn.Row(self.start, self.load), self.member, self.class_title, self.point_class,
            pn.Row(self.log_C, self.C_text), self.hard, pn.Row(self.nu, self.epsilon),
            pn.Row(self.formulation, self.kernel), pn.Row(self.gamma, self.degree, self.coef0),
            pn.Row(self.layer, self.backend), pn.Row(self.profile, self.method), self.compare,
            self.csv, pn.pane.Markdown("PNG: the save icon in each plot's toolbar.", width=300),
            pn.pane.Markdown(f"Each request stops at {ec.SOLVE_TIME_LIMIT_S:g} s; the page solves up to "
                             f"{ec.MAX_POINTS:,} points.", width=300),
            pn.pane.Markdown("**Check an answer** (w, b, xi or alpha; .json or .csv, docs/grading.md) on these "
                             "points, with this C and kernel:", width=300), self.answer_file, width=350)
        # shown for nu's members; a Column, as a Bokeh pane's own visibility follows its figure's
        self.nu_pane = pn.Column(pn.pane.Bokeh(self.nu_plot))
        results = pn.Column(pn.Row(self.busy, self.state), self.message, self.answer_report, self.numbers,
                            self.layers, self.certificate)
        self.layout = pn.Column(
            pn.pane.Markdown("## SVM duality explorer: primal and dual, point by point"),
            pn.Row(controls, pn.Column(pn.pane.Bokeh(self.plane), pn.pane.Bokeh(self.bars), self.nu_pane), results))

    # ------------------------------------------------------------------ controls

    def _load_start(self) -> None:
        X, y = ec.start_points(self.start.value)
        lo, hi = ec.plot_window(X) if len(X) else EMPTY_WINDOW
        self.plane.x_range.update(start=lo[0], end=hi[0])
        self.plane.y_range.update(start=lo[1], end=hi[1])
        self.points.data = dict(x=X[:, 0].tolist(), y=X[:, 1].tolist(), cls=["+1" if v > 0 else "-1" for v in y])

    def _points_changed(self, _attr, _old, _new) -> None:
        # Bokeh selects a point just added, and the next click on empty space would only clear
        # that selection instead of adding a point: clear it here so every click adds one.
        self.points.selected.indices = []
        self._clear_answer()  # it was judged on the points as they were
        self.request()

    def _load_answer(self) -> None:
        """The uploaded answer judged on the plane's points (ec.check_answer); the points where it breaks a
        condition marked, each condition listed with its worst point and why."""
        self._clear_answer()
        if not self.answer_file.value:
            return
        name = self.answer_file.filename or "answer.json"
        if self.member_name() != ef.C_SVM:
            self._show_answer_error("answers are checked against the C-SVM: choose the member C-SVM")
            return
        try:
            text = self.answer_file.value.decode("utf-8")
            view = ec.check_answer(name, text, *self.current_points(), self.settings())
        except UnicodeDecodeError:
            self._show_answer_error(f"{name}: not UTF-8 text")
            return
        except SVMInputError as exc:
            self._show_answer_error(str(exc))
            return
        broken = view.table[view.table.breaks != ""]
        self.breaks.data = dict(x=broken.x1.tolist(), y=broken.x2.tolist(), point=broken.point.tolist(),
                                breaks=broken.breaks.tolist())
        self.answer_report.object = ec.answer_html(view)
        self.answer_report.visible = True

    def _show_answer_error(self, message: str) -> None:
        self.answer_report.object = f"<span data-key='answer-error' style='color:#d62728'>{html.escape(message)}</span>"
        self.answer_report.visible = True

    def _clear_answer(self) -> None:
        self.breaks.data = {key: [] for key in self.breaks.data}
        self.answer_report.object, self.answer_report.visible = "", False

    def _class_changed(self, event) -> None:
        self.draw_tool.default_overrides = {"cls": event.new}

    def _slider_moved(self, event) -> None:
        if self._syncing_C:
            return
        self._set_C_text(f"{10 ** event.new:.4g}")
        self.request()

    def _set_C_text(self, text: str) -> None:
        self._syncing_C = True
        try:
            self.C_text.value = text
        finally:
            self._syncing_C = False

    def _C_typed(self, event) -> None:
        if self._syncing_C:
            return
        try:
            C = ec.parse_C(event.new)
        except SVMInputError:
            pass  # request() shows the message
        else:
            if math.isfinite(C):
                self._syncing_C = True
                try:
                    self.log_C.value = min(max(math.log10(C), C_SLIDER[0]), C_SLIDER[1])
                finally:
                    self._syncing_C = False
        self.request()

    def _kernel_changed(self, event) -> None:
        if event.new != "linear" and self.formulation.value != ec.KERNEL_DUAL:
            self.formulation.value = ec.KERNEL_DUAL  # its watcher sends the request
        else:
            self.request()

    def _layer_changed(self, event) -> None:
        options = ec.available_backends(event.new)
        self.backend.options = options
        if self.backend.value not in options:
            self.backend.value = options[0]
        self.request()

    def member_name(self) -> str:
        return ef.MEMBER_LABELS[self.member.value]

    def _member_changed(self, load: bool = False) -> None:
        """Show the member's own controls; the regressions read the plane as 1-D data (x1 in, x2 out), and a
        change between them and the classifiers loads start data of the right kind."""
        member = self.member_name()
        regression, labelled = member in ef.REGRESSIONS, member in (ef.C_SVM, ef.NU_SVC)
        self.log_C.visible = self.C_text.visible = member in (ef.C_SVM, *ef.REGRESSIONS)
        self.hard.visible = self.method.visible = member == ef.C_SVM
        self.nu.visible = member in ef.NU_MEMBERS
        self.epsilon.visible = member == ef.EPS_SVR
        self.point_class.visible = self.class_title.visible = labelled
        self.nu_pane.visible = member in ef.NU_MEMBERS
        self.plane.xaxis.axis_label = "x (input)" if regression else "x1"
        self.plane.yaxis.axis_label = "y (target)" if regression else "x2"
        self.bars.yaxis.axis_label = "alpha - alpha*" if regression else "alpha"
        self.plane.title.text = PLANE_TITLES.get(member, PLANE_TITLES[ef.C_SVM])
        self.bars.title.text = BAR_TITLES[member]
        if not load:
            return
        if regression != (self.start.value == ec.REGRESSION_START):
            self.start.value = ec.REGRESSION_START if regression else "example_5_1"  # its watcher loads and solves
        else:
            self.request()

    def settings(self):
        """The controls as Settings, or as FamilySettings for a family member (SVMInputError when C is not a
        number)."""
        member = self.member_name()
        if member != ef.C_SVM:
            C = ec.parse_C(self.C_text.value) if member in ef.REGRESSIONS else 1.0
            if not math.isfinite(C):
                raise SVMInputError("C must be finite for the regressions (inf is the C-SVM's hard margin)")
            return ef.FamilySettings(member=member, nu=self.nu.value, C=C, epsilon=self.epsilon.value,
                                     formulation=self.formulation.value, kernel=self.kernel.value,
                                     gamma=self.gamma.value, degree=self.degree.value, coef0=self.coef0.value,
                                     layer=self.layer.value, backend=self.backend.value, profile=self.profile.value,
                                     compare_layers=self.compare.value)
        C = math.inf if self.hard.value else ec.parse_C(self.C_text.value)
        return ec.Settings(C=C, formulation=self.formulation.value, kernel=self.kernel.value,
                           gamma=self.gamma.value, degree=self.degree.value, coef0=self.coef0.value,
                           layer=self.layer.value, backend=self.backend.value, profile=self.profile.value,
                           method=self.method.value, compare_layers=self.compare.value)

    def current_points(self) -> tuple[np.ndarray, np.ndarray]:
        data = self.points.data
        X = np.column_stack([np.asarray(data["x"], dtype=float), np.asarray(data["y"], dtype=float)])
        y = np.where(np.asarray(data["cls"]) == "-1", -1.0, 1.0)
        return X, y

    def _csv_file(self) -> io.StringIO:
        try:
            labelled = self.member_name() in (ef.C_SVM, ef.NU_SVC)
            return io.StringIO(ec.points_csv(*self.current_points(), labelled=labelled))
        except SVMInputError as exc:
            self._show_error_in_session(exc)
            return io.StringIO("")

    # ------------------------------------------------------------------ requests

    def request(self) -> None:
        """Queue a solve of the current points and settings; a newer request supersedes it."""
        if not self._ready:  # the session is still loading: _loaded sends the first request
            return
        self._generation += 1
        generation = self._generation
        self._requested_at = time.perf_counter()
        X, y = self.current_points()
        window = (np.array([self.plane.x_range.start, self.plane.y_range.start]),
                  np.array([self.plane.x_range.end, self.plane.y_range.end]))
        try:
            settings = self.settings()
        except SVMInputError as exc:
            self._show_error_in_session(exc)
            return
        self._set_busy(True)
        self._set_state(f"solving request #{generation}...")
        future = WORKER.submit(self._compute_if_current, generation, X, y, settings, window)
        doc = pn.state.curdoc
        if doc is None:  # no server session (a script or a test): wait here
            self._finish(generation, future)
        else:  # the only thread-safe way back into the session's document
            future.add_done_callback(lambda done: doc.add_next_tick_callback(partial(self._finish, generation, done)))

    def _finish(self, generation: int, future) -> None:
        """Show the outcome of request `generation`, unless a newer request superseded it."""
        if generation != self._generation:
            return
        try:
            result = future.result()
        except SVMInputError as exc:
            self._show_error(exc)
        except Exception as exc:  # a failing backend must not take the server down
            self._show_error(f"the solve failed: {type(exc).__name__}: {exc}")
        else:
            if result is not None:
                self._show(result, generation)

    def _compute_if_current(self, generation: int, X, y, settings, window):
        if generation != self._generation:
            return None
        if isinstance(settings, ef.FamilySettings):
            return ef.explore_family(X, y, settings, window=window, time_limit=ec.SOLVE_TIME_LIMIT_S,
                                     max_points=ec.MAX_POINTS, superseded=lambda: generation != self._generation)
        return ec.explore(X, y, settings, window=window, time_limit=ec.SOLVE_TIME_LIMIT_S, max_points=ec.MAX_POINTS)

    def _set_busy(self, busy: bool) -> None:
        self.busy.value = self.busy.visible = busy  # an idle spinner would still look like work

    def _set_state(self, state: str, detail: str = "") -> None:
        """What the page is doing, with the number of points it holds (the browser test waits on both)."""
        n = len(self.points.data["x"])
        self.state.object = (f"<span data-key='state'>{html.escape(state)}</span>, "
                             f"<span data-key='points'>{n}</span> points" + (f", {detail}" if detail else ""))

    def _show_error_in_session(self, exc) -> None:
        """_show_error in the session's next tick, as a result is shown: a widget's callback may not hold the
        document's lock, and clearing the drawing's Bokeh sources there raised RuntimeError on the server
        ("_pending_writes should be non-None") when C was typed as "abc". At once without a session."""
        doc = pn.state.curdoc
        if doc is None:
            self._show_error(exc)
        else:
            doc.add_next_tick_callback(partial(self._show_error, exc))

    def _show_error(self, exc) -> None:
        self._set_busy(False)
        self.message.alert_type = "danger"
        self.message.object = f"<span data-key='error'>{html.escape(str(exc))}</span>"
        self.message.visible = True
        self._set_state("not solved")
        self._clear_drawing()

    def _clear_drawing(self) -> None:
        self.contours.visible = False
        for source in (self.hulls, self.hull_links, self.common, self.slacks, self.sv, self.info, self.alpha):
            source.data = {key: [] for key in source.data}
        self.C_line.visible = False
        self._clear_family()
        self.numbers.object = ""
        self.layers.visible = self.certificate.visible = False
        self._sync_legend()

    def _sync_legend(self) -> None:
        """Legend entries only for what is drawn: an entry whose renderer has no data showed a label without
        its glyph (the convex hulls, their common point and the slacks before there are any)."""
        for item in self.legend.items:
            item.visible = any(len(next(iter(r.data_source.data.values()), [])) > 0 for r in item.renderers)

    # ------------------------------------------------------------------ results

    def _show(self, result: ec.Exploration, generation: int) -> None:
        # the state line goes last: the browser receives the drawing before it (messages keep their order)
        self._clear_drawing()
        notice = result.notice()  # the time limit, when a solve ran into it
        self.message.alert_type = "warning"
        self.message.object = f"<span data-key='notice'>{html.escape(notice)}</span>"
        self.message.visible = bool(notice)
        if isinstance(result, ef.FamilyExploration):
            self._draw_family(result)
        else:
            self._draw_solution(result)
            self._draw_certificate(result)
        self._sync_legend()
        self.numbers.object = summary_html(result)
        if result.other is not None:
            tables = ef.layers_table if isinstance(result, ef.FamilyExploration) else ec.layers_table
            self.layers.object = tables(result)
            self.layers.visible = True
        elapsed = time.perf_counter() - self._requested_at
        self._set_busy(False)
        self._set_state(f"request #{generation} shown",
                        f"<span data-key='update s'>{elapsed:.3f}</span> s after the change")

    def _draw_solution(self, result: ec.Exploration) -> None:
        if not result.has_point:
            return
        g = result.grid
        data = contour_data(g["xs"], g["ys"], g["f"], levels=[-1, 0, 1])
        self.contours.set_data(data)
        self.contours.visible = True
        table = result.point_table()
        sv = table[table["role"] != ec.CODE_NAMES[recovery.ZERO]]
        colors = {ec.CODE_NAMES[recovery.FREE]: "black", ec.CODE_NAMES[recovery.AT_BOUND]: "#ff7f0e"}
        self.sv.data = dict(x=sv["x1"].tolist(), y=sv["x2"].tolist(), role=sv["role"].tolist(),
                            color=[colors[r] for r in sv["role"]])
        self.info.data = dict(x=table["x1"].tolist(), y=table["x2"].tolist(), role=table["role"].tolist(),
                              alpha=table["alpha"].tolist(), slack=table["slack"].tolist(),
                              y_f=table["y_f"].tolist(), index=(table.index + 1).tolist())
        seg = result.slack_segments()
        self.slacks.data = dict(x0=seg[:, 0].tolist(), y0=seg[:, 1].tolist(), x1=seg[:, 2].tolist(),
                                y1=seg[:, 3].tolist())
        self.alpha.data = dict(index=(table.index + 1).tolist(), alpha=table["alpha"].tolist(),
                               color=[CLASS_COLORS[0] if v > 0 else CLASS_COLORS[1] for v in result.y])
        top = float(table["alpha"].max())
        if math.isfinite(result.settings.C):
            self.C_line.location = result.settings.C
            self.C_line.visible = True
            top = max(top, result.settings.C)
        self.bars.y_range.update(start=0, end=1.08 * top if top > 0 else 1.0)
        self.bars.x_range.update(start=0.4, end=len(table) + 0.6)

    def _draw_certificate(self, result: ec.Exploration) -> None:
        res = result.separability
        if res is None:
            return
        self.certificate.object = format_certificate(res)
        self.certificate.visible = True
        if res.separable is not False:
            return
        xs, ys, colors = [], [], []
        links = {key: [] for key in ("x0", "y0", "x1", "y1")}
        for label, color, weights in ((1.0, CLASS_COLORS[0], res.lam), (-1.0, CLASS_COLORS[1], res.mu)):
            pts = result.X[result.y == label]
            vertices = hull_outline(pts)
            xs.append(vertices[:, 0].tolist())
            ys.append(vertices[:, 1].tolist())
            colors.append(color)
            for k in np.flatnonzero(weights > 1e-9):
                for key, value in zip(("x0", "y0", "x1", "y1"), (*res.point, *pts[k])):
                    links[key].append(float(value))
        self.hulls.data = dict(xs=xs, ys=ys, color=colors)
        self.hull_links.data = links
        self.common.data = dict(x=[float(res.point[0])], y=[float(res.point[1])])

