"""Tables with many domains: memory linear in the domains, numbers unchanged, figures readable.

With fewer models than domains the domains' correlation matrix has rank < n, so the
parallel analysis takes its eigenvalues from the n × n side and the category check sums
standardised residuals per category instead of forming the D × D matrix. Checked here
against the direct p × p computations on small tables, and by peak memory (psutil,
sampled over the process and its children) of ``jagged structure`` and ``jagged report``
on a 3 models × 1,000 domains table in subprocesses: within the 2 GiB the README states
(before: 4 GB for ``structure``, a (500, 1000, 1000) array).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import psutil
import pytest

import jagged
from jagged.plots import dispersion
from jagged.plots import structure as ps
from jagged.stats import decomposition as sdec
from jagged.stats import dimensions as sdim
from jagged.stats.dimensions import correlation_eigenvalues
from jagged.views import structure as vs

ROOT = Path(__file__).resolve().parent.parent
GIB = 1024 ** 3


def many_domains(models: int, domains: int, *, seed: int = 7, categories: int = 0) -> pd.DataFrame:
    """A complete long table (``model, domain, score, n_items``[, ``category``]): binomial draws."""
    rng = np.random.default_rng(seed)
    level = rng.normal(0.6, 0.12, models)
    difficulty = rng.normal(0.0, 0.1, domains)
    p = np.clip(level[:, None] - difficulty[None, :] + rng.normal(0, 0.08, (models, domains)), 0.01, 0.99)
    items = rng.integers(100, 1000, (models, domains))
    frame = pd.DataFrame({"model": np.repeat([f"model-{i}" for i in range(models)], domains),
                          "domain": np.tile([f"domain-{j:04d}" for j in range(domains)], models),
                          "score": (rng.binomial(items, p) / items).ravel(), "n_items": items.ravel()})
    if categories:
        frame["category"] = np.tile([f"c{j % categories}" for j in range(domains)], models)
    return frame


def peak_rss(args: list[str], cwd: Path) -> tuple[int, int, str]:
    """Run a command; return (exit status, peak resident bytes of it and its descendants, stderr)."""
    child = subprocess.Popen(args, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    watched = psutil.Process(child.pid)
    peak = 0
    while child.poll() is None:
        try:
            members = [watched] + watched.children(recursive=True)
        except psutil.NoSuchProcess:
            break
        total = 0
        for member in members:
            try:
                total += member.memory_info().rss
            except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
                pass
        peak = max(peak, total)
        time.sleep(0.02)
    child.wait()
    return child.returncode, peak, child.stderr.read() if child.stderr else ""


# --------------------------------------------------------------------------- same numbers, other shape

@pytest.mark.parametrize("n, p", [(4, 300), (12, 40), (40, 12)])
def test_eigenvalues_from_the_smaller_side_equal_those_of_the_domains_correlation_matrix(n, p):
    x = np.random.default_rng(n * p).normal(size=(n, p))
    dims = sdim.parallel_analysis(x, draws=60, seed=1)
    direct = np.sort(np.linalg.eigvalsh(np.corrcoef(x, rowvar=False)))[::-1]
    np.testing.assert_allclose(dims.eigenvalues, direct, atol=1e-10)
    assert dims.rank == min(n - 1, p)
    if n <= p:
        assert (dims.eigenvalues[n:] == 0.0).all()           # exact zeros beyond the n × n side
    z = (x - x.mean(axis=0)) / x.std(axis=0)
    # one block of permuted data (60 · n · p < 4 million entries), so the same generator gives the same draws
    perm = sdim.permuted_eigenvalues(z, 60, np.random.default_rng(5))
    shuffled = np.random.default_rng(5).permuted(np.broadcast_to(z, (60, n, p)), axis=1)
    loop = np.array([np.sort(np.linalg.eigvalsh(np.corrcoef(s, rowvar=False)))[::-1] for s in shuffled])
    np.testing.assert_allclose(perm, loop, atol=1e-10)


def test_correlation_eigenvalues_are_batched_and_never_negative():
    z = np.random.default_rng(3).normal(size=(5, 3, 50))
    z = (z - z.mean(axis=1, keepdims=True)) / z.std(axis=1, keepdims=True)
    got = correlation_eigenvalues(z)
    assert got.shape == (5, 50) and (got >= 0).all()
    for k in range(5):
        np.testing.assert_allclose(got[k], np.sort(np.linalg.eigvalsh(z[k].T @ z[k] / 3))[::-1], atol=1e-10)
    np.testing.assert_allclose(got.sum(axis=1), 50.0, atol=1e-9)  # trace of a correlation matrix


def test_category_check_equals_the_pairwise_correlations_it_no_longer_forms():
    table = many_domains(8, 30, seed=11, categories=3)
    dec = sdec.decompose(table)
    dims = sdim.dimensions(table, draws=80)
    check = sdim.category_check(table, dec, dims, draws=80, seed=4)
    r = dec.residual[dec.fitted.all(axis=1)]
    corr = np.corrcoef(r, rowvar=False)
    labels = np.array([int(c[1:]) for c in table.drop_duplicates("domain")["category"]])

    def within_between(lab: np.ndarray) -> tuple[float, float]:
        same = lab[:, None] == lab[None, :]
        off = ~np.eye(len(lab), dtype=bool)
        return corr[same & off].mean(), corr[~same].mean()

    within, between = within_between(labels)
    assert check.within == pytest.approx(within, abs=1e-12) and check.between == pytest.approx(between, abs=1e-12)
    shuffled = np.random.default_rng(4).permuted(np.broadcast_to(labels, (80, len(labels))), axis=1)
    null = np.array([np.subtract(*within_between(lab)) for lab in shuffled])
    assert check.p_value == (1 + np.sum(null >= within - between - 1e-12)) / 81


def test_default_draws_follow_the_cost_of_the_smaller_side():
    assert sdim.default_draws(3, 1000) == sdim.default_draws(30, 2000) == sdim.DEFAULT_DRAWS
    assert sdim.default_draws(10_000, 100) == 200 and sdim.default_draws(10_000, 1_000) == sdim.MIN_DRAWS


# --------------------------------------------------------------------------- figures at 1,000 domains

def test_scree_plot_draws_only_the_dimensions_that_can_show():
    table = many_domains(3, 1000)
    dims = sdim.dimensions(table, draws=50)
    ax = ps.scree(dims.table(), percentile=dims.percentile)
    (line,) = [a for a in ax.get_lines() if a.get_gid() == "eigenvalues"]
    assert len(line.get_xdata()) == 2 and "first 2 of 1000" in ax.get_title(loc="left")
    assert "the first 2 of the 1000 eigenvalues" in vs.scree_alt(dims)
    plt.close(ax.figure)
    wide = sdim.parallel_analysis(np.random.default_rng(1).normal(size=(60, 45)), draws=30)
    ax = ps.scree(wide.table())
    (line,) = [a for a in ax.get_lines() if a.get_gid() == "eigenvalues"]
    assert len(line.get_xdata()) == ps.SCREE_LIMIT and f"first {ps.SCREE_LIMIT} of 45" in ax.get_title(loc="left")
    plt.close(ax.figure)
    small = sdim.parallel_analysis(np.random.default_rng(2).normal(size=(29, 14)), draws=30)
    ax = ps.scree(small.table())
    assert len(ax.get_lines()[0].get_xdata()) == 14 and "first" not in ax.get_title(loc="left")
    assert vs.scree_alt(small).startswith("Scree plot: the 14 eigenvalues")


def test_error_heatmap_of_1000_domains_keeps_to_the_page():
    table = many_domains(3, 1000)
    metrics = jagged.jaggedness(table)
    ax = dispersion.error_heatmap(table, metrics)
    width, _ = ax.figure.get_size_inches()
    assert width == pytest.approx(dispersion.PAGE_WIDTH)
    assert [c.get_array().shape for c in ax.collections if c.get_gid() == "errors"] == [(3, 1000)]
    labels = [t for t in ax.get_xticklabels() if t.get_text()]
    assert 10 <= len(labels) <= 120 and "every" in ax.get_title(loc="left")
    assert min(t.get_fontsize() for t in labels) >= dispersion.MIN_LABEL_PT


# --------------------------------------------------------------------------- memory, end to end

@pytest.fixture(scope="module")
def thousand(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("many") / "scores_3x1000.csv"
    many_domains(3, 1000, categories=12).to_csv(path, index=False)
    return path


def test_structure_of_1000_domains_stays_within_a_fraction_of_the_limit(thousand):
    code, peak, stderr = peak_rss([sys.executable, "-m", "jagged.cli", "structure", str(thousand), "--json"],
                                  thousand.parent)
    assert code == 0, stderr
    assert peak < 1 * GIB, f"peak RSS {peak / 2 ** 20:.0f} MiB"     # was 4 GB


def test_report_of_1000_domains_within_2_gib(thousand):
    out = thousand.parent / "report" / "r.html"
    code, peak, stderr = peak_rss([sys.executable, "-m", "jagged.cli", "report", str(thousand), "-o", str(out)],
                                  ROOT)
    assert code == 0, stderr
    assert peak < 2 * GIB, f"peak RSS {peak / 2 ** 20:.0f} MiB"
    html = out.read_text(encoding="utf-8")
    assert "the first 2 of the 1000 eigenvalues" in html
