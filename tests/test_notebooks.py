"""The notebooks (A3): stored without outputs, and each runs top to bottom offline in a fresh kernel."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("*.ipynb"))
EXPECTED = {
    "01_quickstart_langchain.ipynb",
    "02_quickstart_llamaindex.ipynb",
    "03_audit_and_dry_run.ipynb",
    "04_write_gate_and_quarantine.ipynb",
}


def test_every_notebook_is_present() -> None:
    """The four documented notebooks are shipped."""
    assert {p.name for p in NOTEBOOKS} >= EXPECTED


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_stored_without_outputs(path: Path) -> None:
    """No outputs, execution counts or widget state are stored in git."""
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.cells and nb.cells[0].cell_type == "markdown"
    assert sum(1 for c in nb.cells if c.cell_type == "markdown") >= 4
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [], f"{path.name}: cell {cell.get('id')} has outputs"
            assert cell.execution_count is None, f"{path.name}: cell {cell.get('id')} has an execution count"
    assert "widgets" not in nb.metadata


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path: Path) -> None:
    """The notebook runs top to bottom in a fresh python3 kernel, offline, in under a minute."""
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS_DIR)}},
    )
    started = time.perf_counter()
    client.execute()
    elapsed = time.perf_counter() - started
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
    assert elapsed < 60, f"{path.name} took {elapsed:.0f} s"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_asserts_the_outcomes_it_shows(path: Path) -> None:
    """Each notebook asserts what it demonstrates (a notebook showing a stale memory accepted would fail)."""
    nb = nbformat.read(path, as_version=4)
    asserts = [
        line for c in nb.cells if c.cell_type == "code" for line in c.source.splitlines() if line.lstrip().startswith("assert ")
    ]
    assert len(asserts) >= 5, f"{path.name}: {len(asserts)} assertions"


def test_jupyter_lab_comes_with_the_notebooks_extra() -> None:
    """The [notebooks] extra installs JupyterLab, so `jupyter lab notebooks/` works after the README's install."""
    import subprocess
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    pyproject = tomllib.loads((NOTEBOOKS_DIR.parent / "pyproject.toml").read_text(encoding="utf-8"))
    extra = pyproject["project"]["optional-dependencies"]["notebooks"]
    assert any(req.startswith("jupyterlab") for req in extra)
    out = subprocess.run([sys.executable, "-m", "jupyterlab", "--version"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip().split(".")[0] >= "4"
