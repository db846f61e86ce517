"""Every notebook under notebooks/ executes without error and writes its figures.

The notebooks are jupytext percent-format sources (``notebooks/*.py``); each is read
with jupytext, executed by nbclient in a fresh kernel whose working directory is a
temporary folder, and its ``figures/`` folder is checked. The notebooks assert their
own numbers (published w*, b*, W14, agreement with SVC), so a regression in the
project fails here too. Every plot cell (one that writes into ``FIGURES``) must show
its figure inline: its executed outputs hold an ``image/png``, as a reader sees it in
Jupyter (the kernel runs with Jupyter's own inline backend, not Agg).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

jupytext = pytest.importorskip("jupytext")
nbclient = pytest.importorskip("nbclient")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"

#: The figures each notebook must write into ./figures.
EXPECTED_FIGURES = {
    "01_hard_margin_and_dual.py": ["01_example_5_1_primal_dual.png"],
    "02_soft_margin_and_slacks.py": ["02_exercise_5_4_slacks.png", "02_effect_of_C.png"],
    "03_kernels.py": ["03_exercise_5_5_surface.png", "demo_compare.png"],
    "04_perceptron.py": ["perceptron_vs_svm.png"],
    "05_choosing_C.py": ["05_grid_search_heatmap.png", "choose_C_cv.png", "choose_C_path.png"],
    "06_svm_family.py": ["06_nu_property.png", "06_one_class_boundary.png", "06_svr_tube.png"],
}


def test_every_notebook_is_listed():
    assert sorted(p.name for p in NOTEBOOKS.glob("*.py")) == sorted(EXPECTED_FIGURES)


@pytest.mark.slow  # a kernel per notebook, 10-20 s each
@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", sorted(EXPECTED_FIGURES))
def test_notebook_executes_and_writes_figures(name, tmp_path, monkeypatch):
    nb = jupytext.read(NOTEBOOKS / name)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    # The kernel imports the project from the repository even when it is not installed.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    # Jupyter's inline backend (ipykernel's default when MPLBACKEND is unset): figures reach the outputs
    monkeypatch.delenv("MPLBACKEND", raising=False)
    client = nbclient.NotebookClient(nb, timeout=240, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError with the failing cell's traceback
    errors = [out for cell in nb.cells if cell.cell_type == "code" for out in cell.get("outputs", [])
              if out.get("output_type") == "error"]
    assert not errors
    plot_cells = [cell for cell in nb.cells if cell.cell_type == "code" and "FIGURES" in cell.source
                  and "FIGURES = Path" not in cell.source]
    assert plot_cells
    for cell in plot_cells:
        images = [out for out in cell.get("outputs", []) if "image/png" in out.get("data", {})]
        assert images, f"{name}: a plot cell shows no figure inline:\n{cell.source[:300]}"
    as_text = [out["data"]["text/plain"] for cell in nb.cells if cell.cell_type == "code"
               for out in cell.get("outputs", []) if "image/png" not in out.get("data", {"image/png": 0})
               and str(out["data"].get("text/plain", "")).startswith("<Figure size")]
    assert not as_text, f"{name}: a figure shown as its text, not as a picture: {as_text}"
    for fig in EXPECTED_FIGURES[name]:
        path = tmp_path / "figures" / fig
        assert path.exists(), f"{name} did not write figures/{fig}"
        assert path.stat().st_size > 5_000 and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_readme_notebook_route_makes_a_page_with_the_figures(tmp_path, monkeypatch):
    """By hand, in a folder of one's own: `jupytext --to ipynb`, then `jupyter nbconvert --to html --execute`."""
    import shutil
    import subprocess
    import sys

    pytest.importorskip("nbconvert")
    shutil.copy(NOTEBOOKS / "04_perceptron.py", tmp_path)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    monkeypatch.delenv("MPLBACKEND", raising=False)
    for command in (["jupytext", "--to", "ipynb", "04_perceptron.py"],
                    ["jupyter", "nbconvert", "--to", "html", "--execute", "04_perceptron.ipynb"]):
        done = subprocess.run([sys.executable, "-m", *command], cwd=tmp_path, capture_output=True, text=True,
                              timeout=240)
        assert done.returncode == 0, f"{' '.join(command)}:\n{done.stderr[-2000:]}"
    page = (tmp_path / "04_perceptron.html").read_text(encoding="utf-8")
    assert page.count("data:image/png;base64,") >= 1 and "W14" in page
