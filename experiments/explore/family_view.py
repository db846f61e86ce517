"""The explorer page's drawing of the family's members (experiments.explore.family): nu-SVC's margins at f = +-rho,
the one-class boundary f = 0, the regressions' curve and epsilon tube on 1-D data, and the fractions nu bounds
against nu. A mixin of `ExplorerPage`, which owns the plane, the alpha plot and the layout."""

from __future__ import annotations

import math

import numpy as np
from bokeh.models import ColumnDataSource, GlyphRenderer, HoverTool, Range1d, SaveTool
from bokeh.plotting import figure
from bokeh.plotting.contour import contour_data

from experiments.explore import family as ef

ROLE_COLORS = {"SV": "black", "margin error": "#ff7f0e", "outlier": "#ff7f0e", "SV on the tube": "black",
               "outside the tube": "#ff7f0e"}
#: the fraction each nu member's sweep plots from above and from below, as the legend names them
FRACTION_NAMES = {ef.NU_SVC: ("margin errors", "support vectors"), ef.ONE_CLASS: ("outliers", "support vectors"),
                  ef.NU_SVR: ("points outside the tube", "support vectors")}


class FamilyView:
    """Renderers for the family's members, added to the page's plane, and the nu figure."""

    def _build_family_renderers(self) -> None:
        plane = self.plane
        self.boundary = plane.contour(x=[0, 1], y=[0, 1], z=np.zeros((2, 2)), levels=[0], line_color="black",
                                      line_width=2, fill_color=None)
        self.boundary.visible = False
        self.curve = ColumnDataSource(dict(x=[], f=[], lower=[], upper=[]))
        plane.varea(x="x", y1="lower", y2="upper", source=self.curve, fill_color="#dfeaf6",
                    fill_alpha=0.6, legend_label="epsilon tube", level="underlay")  # beneath the points
        plane.line("x", "f", source=self.curve, line_color="black", line_width=2, legend_label="regression f(x)")
        for edge in ("lower", "upper"):
            plane.line("x", edge, source=self.curve, line_color="#1f77b4", line_dash="dashed")
        for renderer in plane.select(type=GlyphRenderer):  # as the page's own: a selected point fades no other
            renderer.nonselection_glyph = None

    def _build_nu_plot(self) -> None:
        nu_plot = figure(width=620, height=240, title="the fractions nu bounds, over nu (dots: this nu's solve)",
                         x_axis_label="nu", y_axis_label="fraction of the points", x_range=Range1d(0, 1),
                         y_range=Range1d(0, 1.02), tools=[SaveTool(filename="explorer_nu")])
        nu_plot.line([0, 1], [0, 1], line_color="gray", line_dash="dashed", legend_label="nu")
        self.sweep = ColumnDataSource(dict(nu=[], above=[], below=[], status=[]))
        lines = [nu_plot.line("nu", "above", source=self.sweep, line_color="#ff7f0e", legend_label="from above"),
                 nu_plot.line("nu", "below", source=self.sweep, line_color="black", legend_label="from below")]
        self.nu_now = ColumnDataSource(dict(nu=[], value=[]))
        nu_plot.scatter("nu", "value", source=self.nu_now, size=10, color="#d62728", legend_label="this nu")
        nu_plot.add_tools(HoverTool(renderers=lines, tooltips=[("nu", "@nu"), ("from above", "@above{0.000}"),
                                                                ("from below", "@below{0.000}"),
                                                                ("status", "@status")]))
        nu_plot.legend.location, nu_plot.legend.label_text_font_size = "top_left", "8pt"
        self.nu_lines = lines
        self.nu_plot = nu_plot

    def _clear_family(self) -> None:
        self.boundary.visible = False
        for source in (self.curve, self.sweep, self.nu_now):
            source.data = {key: [] for key in source.data}

    def _draw_family(self, result: ef.FamilyExploration) -> None:
        member = result.settings.member
        self._draw_sweep(result)
        if not result.has_point:
            return
        sol, g = result.solution, result.grid
        if result.regression:
            eps = float(result.value("epsilon"))
            self.curve.data = dict(x=g["xs"].tolist(), f=g["f"].tolist(), lower=(g["f"] - eps).tolist(),
                                   upper=(g["f"] + eps).tolist())
        else:
            rho = float(result.value("rho"))
            if member == ef.NU_SVC and rho > 0:  # the margins y f(x) = rho
                self.contours.set_data(contour_data(g["xs"], g["ys"], g["f"], levels=[-rho, 0, rho]))
                self.contours.visible = True
            else:
                self.boundary.set_data(contour_data(g["xs"], g["ys"], g["f"], levels=[0]))
                self.boundary.visible = True
        P, f = result.points, result.decision
        marked = [k for k, role in enumerate(result.roles) if role in ROLE_COLORS]
        self.sv.data = dict(x=P[marked, 0].tolist(), y=P[marked, 1].tolist(),
                            role=[result.roles[k] for k in marked],
                            color=[ROLE_COLORS[result.roles[k]] for k in marked])
        alpha = np.asarray(sol.alpha, dtype=float)
        if result.regression:
            alpha = alpha - np.asarray(sol.extras["alpha_star"], dtype=float)  # beta_i: f = sum_i beta_i k(x_i, .) + b
        shown = result.y * f if member == ef.NU_SVC else f
        index = list(range(1, len(f) + 1))
        self.info.data = dict(x=P[:, 0].tolist(), y=P[:, 1].tolist(), role=result.roles, alpha=alpha.tolist(),
                              slack=[math.nan] * len(f), y_f=shown.tolist(), index=index)
        self.alpha.data = dict(index=index, alpha=alpha.tolist(), color=["#1f77b4" if v >= 0 else "#d62728"
                                                                           for v in alpha])
        bound = ef.multiplier_bound(result.settings, len(f))
        self.C_line.location, self.C_line.visible = bound, True
        low = min(0.0, float(alpha.min()))
        self.bars.y_range.update(start=1.08 * low, end=1.08 * max(bound, float(alpha.max())))
        self.bars.x_range.update(start=0.4, end=len(f) + 0.6)

    def _draw_sweep(self, result: ef.FamilyExploration) -> None:
        member = result.settings.member
        if member not in ef.NU_MEMBERS:
            return
        above, below = FRACTION_NAMES[member]
        self.nu_lines[0].name, self.nu_lines[1].name = above, below
        for item, label in zip(self.nu_plot.legend[0].items[1:3], (above, below)):
            item.label = {"value": label}
        table = result.sweep
        if table is not None and len(table):
            self.sweep.data = dict(nu=table.nu.tolist(), above=table.above.tolist(), below=table.below.tolist(),
                                   status=table.status.tolist())
        now = [result.value(name) for name in ef.FRACTIONS[member]]
        if result.has_point:
            nu = float(result.settings.nu)
            self.nu_now.data = dict(nu=[nu, nu], value=[float(v) for v in now])
