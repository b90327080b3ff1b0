"""The analysis stage: composes the statistics of a loaded Dataset once per report, from the user's options.

This is the one place where the statistics modules meet, between :mod:`jagged.stats` (pure
functions) and :mod:`jagged.views`. :func:`metrics_table` is the
per-model table the CLI prints; :func:`analyse` loads an input and returns an
:class:`Analysis`, the one object a report notebook works from (``analyse_notebook``
takes the notebook's parameters): the dataset, the options, the metrics table, the
profile weights, and which report sections apply. The expensive parts are computed once
and kept on it: one decomposition (:attr:`Analysis.decomposition`, shared by the metrics
table, :attr:`Analysis.structure` and the notebooks), one item audit, one item response
model (:attr:`Analysis.item_model`) and one flaw posterior (:attr:`Analysis.flaws`), the
last two passed into the item audit rather than fitted again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from jagged import options as opts
from jagged.errors import JaggedInputError
from jagged.options import AnalysisOptions
from jagged.readers.dataset import Dataset
from jagged.stats.decomposition import Decomposition
from jagged.stats.engine import Engine
from jagged.stats.metrics import jaggedness
from jagged.text import join_note_columns

#: Report sections that apply only to some inputs, in report order (see :attr:`Analysis.sections`).
SECTIONS: tuple[str, ...] = tuple(name for name, optional in opts.REPORT_SECTIONS.items() if optional)
#: MIME type of the display output that records :attr:`Analysis.sections` in an executed notebook;
#: the report renderer reads it to drop the cells of sections that do not apply (notebooks/SECTIONS.md).
SECTIONS_MIME = "application/vnd.jagged.sections+json"


@dataclass
class Analysis:
    """Everything a report shows, computed once from a dataset and the options (each table on first access).

    ``display`` holds the display options by name (:mod:`jagged.options`) for the
    notebook's cells; ``bundled`` whether the input is the data bundled with jagged;
    ``item_rest`` the trait of the item response model and the item audit's rest score;
    ``draws`` the permutation draws of :attr:`structure` (None: the default); ``level``
    ``"item"`` adds the bifactor section (:attr:`bifactor`), ``external`` its table to correlate with.
    """

    dataset: Dataset
    options: AnalysisOptions = field(default_factory=AnalysisOptions)
    display: dict[str, Any] = field(default_factory=dict)
    bundled: bool = False
    draws: int | None = None
    item_rest: str = "domain"
    level: str = "domain"
    external: str | None = None

    @cached_property
    def engine(self) -> Engine:
        """Where the item statistics run (:meth:`jagged.stats.engine.Engine.from_options`), made once."""
        return Engine.from_options(self.options)

    @cached_property
    def decomposition(self) -> Any:
        """The logit decomposition of the scores (:func:`jagged.stats.decomposition.decompose`), read by all."""
        from jagged.stats.decomposition import decompose

        return decompose(self.dataset.scores)

    @cached_property
    def table(self) -> pd.DataFrame:
        """The per-model metrics table (:func:`metrics_table`)."""
        return metrics_table(self.dataset, self.options, decomposition=self.decomposition, engine=self.engine)

    @cached_property
    def leave_one_out(self) -> dict[str, pd.DataFrame]:
        """Each model's statistics with each domain left out (:mod:`jagged.stats.leave_one_out`), by column name.

        ``cv_error``, ``relative_jaggedness`` and ``relative_jaggedness_corrected``: models ×
        domains; ``wedge`` (with profiles): (model, profile) × domains. What the glance asks
        to say when a headline rests on one domain.
        """
        from jagged.stats.leave_one_out import cv_without, relative_without, wedge_without

        out = {"cv_error": cv_without(self.dataset.scores),
               "relative_jaggedness": relative_without(self.decomposition, corrected=False),
               "relative_jaggedness_corrected": relative_without(self.decomposition, corrected=True)}
        if len(self.weights):
            out["wedge"] = wedge_without(self.dataset.scores, self.weights)
        return out

    @cached_property
    def weights(self) -> pd.DataFrame:
        """The profiles × domains weight matrix (zero rows without profiles)."""
        return profile_weights(self.dataset, self.options)

    @cached_property
    def structure(self) -> Any:
        """Model or benchmark (:func:`jagged.stats.structure.structure`), built on :attr:`decomposition`."""
        from jagged.stats.structure import structure

        return structure(self.dataset.scores, draws=self.draws, seed=self.options.seed, ci=self.options.ci,
                         decomposition=self.decomposition)

    @cached_property
    def level_correlations(self) -> dict[str, dict[str, float]]:
        """:func:`jagged.stats.structure.level_correlations` of :attr:`table`, by relative jaggedness column."""
        from jagged.stats.structure import level_correlations

        return {column: level_correlations(self.table, column)
                for column in ("relative_jaggedness", "relative_jaggedness_corrected")}

    @cached_property
    def rank_agreement(self) -> pd.DataFrame:
        """Per profile, how the deployment ranks reorder the models (:func:`jagged.stats.deployment.rank_agreement`)."""
        from jagged.stats.deployment import rank_agreement

        return rank_agreement(self.table)

    @property
    def illustrative(self) -> bool:
        """Whether the profiles are the bundled illustrative ones (:func:`jagged.stats.weights.is_illustrative`)."""
        from jagged.stats.weights import is_illustrative

        names = pd.unique(self.table["profile"]).astype(str).tolist() if self.has_profiles else []
        return is_illustrative(self.options.weights, names)

    def rests_on(self, column: str, values: pd.Series, subject: Any, *, largest: bool,
                 absolute: bool = False) -> tuple[Any, float] | None:
        """Whether a headline value rests on one domain, and the value without it; None when it does not.

        ``values`` are the ranked values (index: the subjects) of the statistic whose
        :attr:`leave_one_out` table is ``column``; ``absolute`` ranks by magnitude (the wedge).
        See :func:`jagged.stats.leave_one_out.headline_rests_on`.
        """
        from jagged.stats.leave_one_out import headline_rests_on

        without = self.leave_one_out.get(column)
        if without is None:
            return None
        grid = without.reindex(index=values.index)
        found = headline_rests_on(values, grid.abs() if absolute else grid, subject, largest=largest)
        return None if found is None else (found, float(grid.loc[subject, found.domain]))

    @cached_property
    def item_source(self) -> Dataset | None:
        """What the item audit reads, loaded once: the dataset's item-level results (in memory or out of core).

        For the bundled per-category scores, the bundled item-level responses behind them
        (the same scores), so every other number of the report stays that of the
        per-category file; None without item-level results.
        """
        from jagged.readers.items import load_bundled_items

        if self.dataset.items is not None or self.dataset.item_path is not None:
            return self.dataset
        return load_bundled_items() if self.bundled else None

    @cached_property
    def item_audit(self) -> Any:
        """The item audit (:func:`jagged.stats.item_audit.audit_items`), None without item-level results.

        Its P(flawed) ranking and IRT columns are :attr:`flaws` and :attr:`item_model`, not
        computed again; without them the audit's notes say why (:attr:`item_model_input`).
        """
        from jagged.stats.item_audit import audit_items, without_model

        source = self.item_source
        if source is None:
            return None
        audit = audit_items(source, rest=self.item_rest, engine=self.engine, fit=self.item_model, flaws=self.flaws,
                            model=False)
        return audit if audit.flaws is not None else without_model(audit, self.item_model_input[1])

    @cached_property
    def item_model_input(self) -> tuple[pd.DataFrame | None, str]:
        """The item table the item response and flaw models run on, or None and why not (one line).

        See :func:`jagged.stats.item_audit.model_table`: the models need the response matrix
        in memory, so an input aggregated out of core, ``engine="spark"``, fewer than
        ``IRT_MIN_MODELS`` models or a matrix above ``IRT_MAX_CELLS`` cells have none.
        """
        from jagged.stats.item_audit import model_table

        source = self.item_source
        if source is None:
            return None, f"{self.dataset.source}: no item-level results"
        return model_table(source, int(self.dataset.scores["model"].nunique()), self.engine)

    @property
    def item_table(self) -> pd.DataFrame | None:
        """The item-level results in memory the item response model runs on (:attr:`item_model_input`), or None."""
        return self.item_model_input[0]

    @cached_property
    def item_model(self) -> Any:
        """The 2PL item response model of the item-level results (:func:`jagged.stats.irt.fit_2pl`), fitted once.

        A trait per domain (:attr:`item_rest`); None without item-level results in memory.
        The item audit, :attr:`flaws` and :attr:`information` read this one
        (:func:`jagged.stats.information.report_fit`: one fit per input and process).
        """
        from jagged.stats.information import report_fit

        table = self.item_table
        return None if table is None else report_fit(table, self.item_rest)

    @cached_property
    def bifactor(self) -> Any:
        """The bifactor fit of the item-level results (:func:`jagged.stats.bifactor.fit_bifactor`), fitted once.

        Raises :class:`JaggedInputError` without item-level results in memory (the reason).
        """
        from jagged.stats.bifactor import fit_bifactor

        if self.item_table is None:
            raise JaggedInputError(f"--level item: {self.item_model_input[1]}")
        return fit_bifactor(self.item_table, seed=self.options.seed)

    @cached_property
    def bifactor_external(self) -> pd.DataFrame | None:
        """The factor scores' correlations with :attr:`external` (:meth:`item_structure`), None without it."""
        return None if self.external is None else self.item_structure(self.external)[1]

    def item_structure(self, external: str | None = None) -> tuple[Any, pd.DataFrame | None]:
        """:attr:`bifactor`, and with ``external`` (a table: model plus numeric columns) its factor scores'
        correlations with it (:func:`jagged.stats.bifactor.external_correlations`)."""
        from jagged.readers.files import read_csv
        from jagged.stats.bifactor import external_correlations

        fit = self.bifactor
        if external is None:
            return fit, None
        path = Path(external)
        return fit, external_correlations(fit, read_csv(path), seed=self.options.seed, source=path.name)

    @cached_property
    def flaws(self) -> Any:
        """The flaw model (:func:`jagged.stats.flaw.flaw_posterior` on :attr:`item_model`), or None.

        P(flawed) per item, expected flawed items per domain and in total with intervals, and
        per model the agreement with likely wrong keys (``flaws.models``).
        """
        from jagged.stats.flaw import flaw_posterior
        from jagged.stats.information import blas_threads_for, matrix_cells

        fit = self.item_model
        if fit is None:
            return None
        with blas_threads_for(matrix_cells(self.item_table)):
            return flaw_posterior(self.item_table, fit)

    @cached_property
    def information(self) -> Any:
        """Where each domain measures, and the models on it (:func:`~jagged.stats.information.domain_information`)."""
        from jagged.stats.information import domain_information

        fit = self.item_model
        return None if fit is None else domain_information(fit)

    @property
    def has_item_model(self) -> bool:
        """Whether the item response model applies (checked without loading anything).

        Item-level results held in memory (the bundled responses, or an input's item
        table; not a Parquet input aggregated out of core, not on Spark) and at least
        :data:`jagged.stats.item_audit.IRT_MIN_MODELS` models.
        """
        from jagged.stats.item_audit import IRT_MIN_MODELS

        in_memory = self.bundled or self.dataset.items is not None
        return bool(in_memory and not self.engine.spark
                    and self.dataset.scores["model"].nunique() >= IRT_MIN_MODELS)

    def item_text(self, item_ids: Any = None) -> pd.DataFrame | None:
        """The question text and options of some items (index ``item``; ``text``, ``options`` a JSON list), or None.

    From the item table of ``source`` (``Analysis.item_source``); for the ``bundled`` data
    without text, MMLU-Pro's bundled question text read for the wanted ``item_ids`` only
    (:func:`jagged.readers.items.load_bundled_item_text`). None when neither has text.
    """
        return item_text(self.item_source, item_ids, bundled=self.bundled)

    @cached_property
    def item_sensitivity(self) -> pd.DataFrame | None:
        """cv_error with the flagged items set aside (:func:`jagged.stats.item_audit.flag_sensitivity`)."""
        from jagged.stats.item_audit import flag_sensitivity

        return None if self.item_audit is None else flag_sensitivity(self.item_audit)

    @property
    def has_items(self) -> bool:
        """Whether item-level results exist for the item audit ("Items to look at")."""
        return bool(self.bundled or self.dataset.items is not None or self.dataset.item_path is not None)

    @property
    def scores(self) -> pd.DataFrame:
        """The canonical per-domain table of the dataset."""
        return self.dataset.scores

    @property
    def has_profiles(self) -> bool:
        """Whether deployment profiles were computed."""
        return "profile" in self.table.columns

    @property
    def has_categories(self) -> bool:
        """Whether the domains are grouped into at least two categories."""
        from jagged.stats.hierarchy import has_categories

        return has_categories(self.dataset.scores)

    @property
    def has_noise(self) -> bool:
        """Whether a sampling-noise estimate exists (item counts known)."""
        return bool(self.table["noise_share"].notna().any())

    @property
    def sections(self) -> dict[str, bool]:
        """Which of the optional report sections (:data:`SECTIONS`) apply to this input."""
        from jagged.stats.decomposition import decomposable

        applies = {"noise": self.has_noise, "hierarchy": self.has_categories, "profiles": self.has_profiles,
                   "items": self.has_items, "irt": self.has_item_model,
                   "decomposition": decomposable(self.dataset.scores),
                   "bifactor": self.level == "item" and self.has_item_model}
        return {name: applies[name] for name in SECTIONS}

    def __repr__(self) -> str:
        """One line: the size of the input, its source and the options (cheap: computes nothing)."""
        scores = self.dataset.scores
        o = self.options
        what = [f"bootstrap={o.bootstrap}"] + ([f"profiles={list(o.profiles)}"] if o.profiles else []) + (
            [f"weights={Path(o.weights).name!r}"] if o.weights else [])
        return (f"<Analysis: {scores['model'].nunique():,} models x {scores['domain'].nunique():,} domains from "
                f"{self.dataset.source!r}{' (bundled)' if self.bundled else ''}; {', '.join(what)}>")

    def _repr_html_(self) -> str:
        """A small summary table for notebooks (every value escaped)."""
        import html

        scores = self.dataset.scores
        on = [name for name, applies in self.sections.items() if applies]
        rows = [("input", str(self.dataset.source) + (" (bundled)" if self.bundled else "")),
                ("models", f"{scores['model'].nunique():,}"), ("domains", f"{scores['domain'].nunique():,}"),
                ("bootstrap", str(self.options.bootstrap)),
                ("sections that apply", ", ".join(on) or "none"),
                ("tables", ".table, .weights, .structure, .item_audit, .item_model, .flaws, .decomposition")]
        body = "".join(f"<tr><th scope=\"row\">{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in rows)
        return f'<table class="jagged-summary"><caption>Analysis</caption><tbody>{body}</tbody></table>'

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        """How a notebook shows the analysis: a one-line summary, and :attr:`sections` as JSON.

        The JSON (MIME type :data:`SECTIONS_MIME`) is what the report renderer reads to
        remove the cells tagged ``section-NAME`` of the sections that do not apply.
        """
        applies = {name: bool(on) for name, on in self.sections.items()}
        scores = self.dataset.scores
        shown = ", ".join(name for name, on in applies.items() if on) or "none"
        left = ", ".join(name for name, on in applies.items() if not on)
        text = (f"Analysis of {scores['model'].nunique()} models x {scores['domain'].nunique()} domains from "
                f"{self.dataset.source}; optional sections that apply: {shown}"
                + (f" (not: {left})" if left else ""))
        return {"text/plain": text, SECTIONS_MIME: applies}


def item_text(source: Dataset | None, item_ids: Any = None, *, bundled: bool = False) -> pd.DataFrame | None:
    """The question text and options of some items: from the item table, or for the bundled data MMLU-Pro's.

    Parameters
    ----------
    source : Dataset or None
        What the item audit reads (``Analysis.item_source``).
    item_ids : iterable, optional
        Only these items (default: all).
    bundled : bool
        The bundled data: when the item table has no text, MMLU-Pro's bundled question text
        is joined by item id, read for the wanted items only
        (:func:`jagged.readers.items.load_bundled_item_text`).

    Returns
    -------
    pandas.DataFrame or None
        Index ``item``; ``text`` and ``options`` (a JSON list of option texts); None when
        neither the items nor the bundled data have text (e.g. Parquet aggregated out of core).
    """
    from jagged.readers.items import TEXT_COLUMNS, item_texts, load_bundled_item_text

    items = None if source is None else source.items
    if items is not None and any(c in items.columns for c in TEXT_COLUMNS):
        texts = item_texts(items)
        return texts if item_ids is None else texts[texts.index.isin([str(i) for i in item_ids])]
    return load_bundled_item_text(item_ids) if bundled else None


def strongest_models(scores: pd.DataFrame, n: int = 5) -> list[str]:
    """The ``n`` models with the highest macro score (:func:`jagged.stats.metrics.jaggedness`), ties by name.

    Whose answers the item lists show beside each question. With one domain the macro score
    is that domain's score (jaggedness itself needs two).
    """
    import warnings

    from jagged.errors import JaggedInputError, JaggedWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JaggedWarning)  # models with one domain: their CV, not their score
        try:
            table = jaggedness(scores)[["model", "macro_score"]]
        except JaggedInputError:
            table = scores.rename(columns={"score": "macro_score"})[["model", "macro_score"]]
    table = table.sort_values(["macro_score", "model"], ascending=[False, True], kind="mergesort")
    return table["model"].drop_duplicates().head(n).astype(str).tolist()


def analyse(scores: str | Path | Dataset | None = None, *, example_profiles: bool = True, draws: int | None = None,
            level: str = "domain", external: str | None = None, **options: Any) -> Analysis:
    """Load an input and prepare its :class:`Analysis`.

    Parameters
    ----------
    scores : str, pathlib.Path or Dataset, optional
        Any input :func:`jagged.load` reads, or a :class:`Dataset` it returned (then no loader
        option applies); ``None`` or ``""``: the bundled MMLU-Pro data.
    example_profiles : bool
        For the bundled data without ``weights``, its illustrative profiles, as the reports
        use them (:func:`jagged.stats.weights.report_weights`).
    draws : int, optional
        Permutation draws of :attr:`Analysis.structure` (``jagged structure --draws``).
    level, external : str
        ``"item"``: the bifactor section (``--level``); the table its factor scores are
        correlated with (``--external``).
    **options
        Loader, analysis and display options by name (:mod:`jagged.options`); ``""`` and
        ``None`` mean "not given".

    Raises
    ------
    JaggedInputError
        Bad input (the message names the file and the column or value at fault).
    TypeError
        A keyword that is no option (the closest suggested), or loader options with a Dataset.
    """
    from jagged.readers.load import BUNDLED_SCORES, load
    from jagged.stats.weights import report_weights

    opts.check_keywords(options, "analyse")
    if isinstance(scores, Dataset):
        given = sorted(opts.load_kwargs(options))
        if given:
            raise TypeError(f"analyse(): {', '.join(given)} choose how a file is read; the Dataset is already "
                            "loaded (give them to jagged.load)")
        dataset = scores
        bundled = [Path(p) for p in dataset.paths] == [BUNDLED_SCORES] and not dataset.selection
    else:
        bundled = scores in (None, "")
        dataset = load(None if bundled else scores, **opts.load_kwargs(options))
    override = {}
    if example_profiles:
        override["weights"] = report_weights("" if bundled else dataset.source, options.get("weights") or "")
    display = {name: options.get(name, opts.BY_NAME[name].surface_default) for name in opts.names(opts.DISPLAY)}
    return Analysis(dataset=dataset, options=opts.analysis_options(options, **override), display=display,
                    bundled=bundled, draws=draws, level=level, external=external or None)


def analyse_notebook(parameters: Mapping[str, Any]) -> Analysis:
    """:func:`analyse` from a report notebook's parameters (``globals()`` of the notebook).

    Picks ``scores`` and every option the notebook declares out of ``parameters`` ("" means
    "not given", as in the notebooks' parameters cells), with the bundled data's
    illustrative profiles as the reports use them.
    """
    values = opts.from_notebook({k: v for k, v in parameters.items() if k in opts.BY_NAME})
    return analyse(parameters.get("scores") or None, example_profiles=True, level=parameters.get("level") or "domain",
                   external=parameters.get("external") or None, **values)


def add_notes(table: pd.DataFrame, model_notes: dict[str, str]) -> pd.DataFrame:
    """Append per-model remarks to the ``note`` column ("; "-separated)."""
    if not model_notes:
        return table
    extra = table["model"].map(model_notes).fillna("")
    return table.assign(note=join_note_columns(table["note"], extra))


def metrics_table(dataset: Dataset, options: AnalysisOptions | None = None, *,
                  decomposition: Decomposition | None = None, engine: Engine | None = None) -> pd.DataFrame:
    """The full per-model metrics table for a dataset (defaults: the jaggedness table only).

    ``decomposition`` is :func:`jagged.stats.decomposition.decompose` of the scores when
    already computed; ``engine`` where out-of-core intervals run (default: from ``options``).

    Returns
    -------
    pandas.DataFrame
        The columns of :func:`jagged.jaggedness`, then ``cv_error_corrected``,
        ``noise_share``, ``p_equal_error``, ``noise_flag`` (:func:`jagged.stats.uncertainty.add_noise`).
        With profiles: one row per profile × model, ``profile`` after ``model`` and the
        columns of :func:`jagged.stats.deployment.deployment_metrics` before ``note``. With
        two or more domain categories: ``cv_error_categories``, ``share_between``
        (:func:`add_hierarchy`). Then the columns of :func:`jagged.stats.structure.add_structure`
        and of :func:`jagged.stats.leave_one_out.add_rests_on`. With ``bootstrap > 0``:
        ``<stat>_lo`` / ``<stat>_hi``, each after the estimate it contains (checked:
        :func:`jagged.stats.intervals.check_intervals`), ``interval_method`` and
        ``interval_note`` (:func:`jagged.stats.bootstrap.add_intervals`).
    """
    from jagged.stats.bootstrap import add_intervals
    from jagged.stats.decomposition import decompose, replicate_statistic
    from jagged.stats.intervals import check_intervals
    from jagged.stats.leave_one_out import add_rests_on
    from jagged.stats.structure import add_structure
    from jagged.stats.uncertainty import add_noise

    options = options or AnalysisOptions()
    table = add_noise(jaggedness(dataset.scores), dataset.scores, dataset.items, alpha=1.0 - options.ci)
    table = add_hierarchy(table, dataset.scores)
    weights = profile_weights(dataset, options)
    if len(weights):
        table = add_deployment(table, dataset.scores, weights)
    if decomposition is None:
        decomposition = decompose(dataset.scores)
    table = add_structure(table, decomposition, alpha=1.0 - options.ci)
    table = add_rests_on(table, dataset.scores, decomposition)
    if options.bootstrap > 0:
        table = add_intervals(table, dataset.scores, dataset.items, weights=weights, n_boot=options.bootstrap,
                              seed=options.seed, ci=options.ci,
                              statistics={"relative_jaggedness": replicate_statistic(decomposition)},
                              source=dataset.item_path, engine=engine or Engine.from_options(options))
    check_intervals(table)  # invariant: every printed estimate lies in its own interval
    return add_notes(table, dataset.model_notes)


def add_hierarchy(table: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    """Add the category level when the domains have at least two categories.

    Adds ``cv_error_categories`` (CV of the category error rates, each category the plain
    mean of its domains) and ``share_between`` (the share of the variance of e_d that
    lies between categories; see :func:`jagged.stats.hierarchy.variance_decomposition`)
    before ``note``. Without categories the table is returned unchanged.
    """
    from jagged.stats.hierarchy import has_categories, hierarchy_metrics

    if not has_categories(scores):
        return table
    levels = hierarchy_metrics(scores)[["model", "cv_categories", "share_between"]].rename(
        columns={"cv_categories": "cv_error_categories"})
    merged = table.merge(levels, on="model", how="left", validate="one_to_one")
    return merged[[c for c in merged.columns if c != "note"] + ["note"]]


def resolve_profiles(scores: pd.DataFrame, weights: str | Path | pd.DataFrame | None = None,
                     profiles: Sequence[str] = (), missing_weight: str = "error") -> pd.DataFrame:
    """The normalised profiles × domains weight matrix, from a weights file or table (``jagged.resolve_profiles``).

    ``weights`` is a weights file (CSV or YAML, :mod:`jagged.readers.weights`), or such a
    table in memory (``profile``, ``domain``, ``weight``); ``profiles`` and
    ``missing_weight`` as in :func:`jagged.stats.weights.resolve_profiles`, which says what
    it returns. Any problem of the file or the profiles is a :class:`JaggedInputError`.
    """
    from jagged.readers.weights import read_weights
    from jagged.stats import weights as profile_stats

    profile_stats.check_missing_weight(missing_weight)
    if weights is None or isinstance(weights, pd.DataFrame):
        return profile_stats.resolve_profiles(scores, weights, profiles, missing_weight)
    path = Path(weights)
    return profile_stats.resolve_profiles(scores, read_weights(path), profiles, missing_weight, source=path.name)


def describe_profiles(weights: pd.DataFrame, path: str | Path | None = None, *, top: int = 3) -> pd.DataFrame:
    """:func:`jagged.stats.weights.describe_profiles` with the comments of the weights file at ``path``."""
    from jagged.readers.weights import read_weights
    from jagged.stats.weights import describe_profiles as describe

    return describe(weights, None if path is None else read_weights(path), top=top)


def profile_weights(dataset: Dataset, options: AnalysisOptions | None = None) -> pd.DataFrame:
    """The profiles × domains weight matrix the options ask for (zero rows: none).

    See :func:`resolve_profiles`.
    """
    options = options or AnalysisOptions()
    return resolve_profiles(dataset.scores, options.weights, options.profiles, options.missing_weight)


def add_deployment(table: pd.DataFrame, scores: pd.DataFrame, weights: pd.DataFrame) -> pd.DataFrame:
    """Expand a per-model jaggedness table to profile × model rows with deployment metrics.

    Returns ``model``, ``profile``, the jaggedness columns, the deployment columns of
    :func:`jagged.stats.deployment.deployment_metrics` and ``note`` (both notes,
    "; "-separated); profiles in matrix order, models sorted.
    """
    from jagged.stats.deployment import deployment_metrics
    from jagged.stats.weights import items_coverage

    dep = deployment_metrics(scores, weights)
    if "items" in set(weights.index) and scores["n_items"].notna().any():
        coverage = dep["model"].map(items_coverage(scores)).to_numpy(dtype=float)
        partial = (dep["profile"] == "items").to_numpy() & (coverage < 1)
        extra = [f"items profile weights by full domain sizes; this model's n_items cover {c:.1%} of them"
                 for c in coverage[partial]]
        notes = dep["note"].to_numpy(dtype=object).copy()
        notes[partial] = join_note_columns(notes[partial], extra)
        dep = dep.assign(note=notes)
    base = table.drop(columns="note")
    merged = dep.drop(columns="note").merge(base, on="model", how="left", validate="many_to_one")
    first = ["model", "profile"] + [c for c in base.columns if c != "model"]
    merged = merged[first + [c for c in dep.columns if c not in first and c != "note"]]
    own = table.set_index("model")["note"].reindex(dep["model"]).fillna("").to_numpy(dtype=object)
    notes = join_note_columns(own, dep["note"])
    return merged.assign(note=notes)


# --------------------------------------------------------------------------- two runs or releases

def load_side(path: str | Path | None, options: Mapping[str, Any], where: Sequence[str] = (), side: str = "a") -> Any:
    """One side: any input :func:`jagged.load` reads (loader options from ``options``); "" or None: bundled items.

    ``where`` filters this side's rows on top of ``options["where"]`` (``--where-a``/``--where-b``);
    the side is then named after them: ``releases.csv [release=2024-08-31]``.
    """
    if path in (None, ""):
        if where:
            raise JaggedInputError(f"--where-{side}: side {side.upper()} is the bundled item-level responses, which "
                                   "have no such columns; give the input file")
        from jagged.readers.items import load_bundled_items

        return load_bundled_items()
    from jagged.readers.load import load

    kwargs = opts.load_kwargs(options)
    if where:
        kwargs["where"] = (*kwargs.get("where", ()), *where)
    dataset = load(path, **kwargs)
    if where:
        dataset.source = f"{dataset.source} [{', '.join(where)}]"
    return dataset


def check_overlap(a: Any, b: Any) -> None:
    """Refuse two datasets with no model or no domain in common (nothing to compare like for like).

    Raises
    ------
    JaggedInputError
        ``A and B have no model in common: nothing to compare`` (and the same for domains).
    """
    for kind in ("model", "domain"):
        common = set(a.scores[kind].astype(str)) & set(b.scores[kind].astype(str))
        if not common:
            raise JaggedInputError(f"{a.source} and {b.source} have no {kind} in common: nothing to compare")


def compare_weights(a: Any, b: Any, options: Mapping[str, Any]) -> Any:
    """The profiles × domains weights over the domains of both sides (None without profiles).

    ``weights``, ``profiles`` and ``missing_weight`` as in :func:`jagged.analysis.resolve_profiles`
    (which reads the weights file).
    """
    analysis = opts.analysis_options(options)
    if not analysis.weights and not analysis.profiles:
        return None
    both = pd.concat([a.scores.astype({"model": str, "domain": str}), b.scores.astype({"model": str, "domain": str})],
                     ignore_index=True)
    return resolve_profiles(both, analysis.weights, analysis.profiles, analysis.missing_weight)


def compare_inputs(a: str | Path | None, b: str | Path | None, *, alpha: float = 0.05, repeats: bool = False,
                   where_a: Sequence[str] = (), where_b: Sequence[str] = (), **options: Any) -> tuple[Any, Any, Any]:
    """Load two inputs and compare them (``jagged compare A B``): ``(Dataset, Dataset, Comparison)``.

    Parameters
    ----------
    a, b : str or pathlib.Path
        The earlier and the later run or release: any input :func:`jagged.load` reads
        (``""``/None: the bundled item-level MMLU-Pro responses).
    alpha : float
        False discovery rate of the ledger's ``difficulty_moved``.
    repeats : bool
        A and B are repeated runs of the same models: add the run-to-run noise floor.
    where_a, where_b : sequence of str
        ``COLUMN=VALUE`` row filters of one side (``where`` applies to both).
    **options
        Loader options (both sides) and ``weights``, ``profiles``, ``missing_weight``,
        ``bootstrap``, ``seed``, ``ci`` by name (:mod:`jagged.options`).

    Raises
    ------
    JaggedInputError
        What the loaders reject; no model or no domain in common; weights that do not
        cover the domains of both; ``repeats`` without item-level results on both sides.
    """
    from jagged.stats.compare import compare

    opts.check_keywords(options, "compare_inputs")
    side_a, side_b = load_side(a, options, where_a, "a"), load_side(b, options, where_b, "b")
    check_overlap(side_a, side_b)
    weights = compare_weights(side_a, side_b, options)
    analysis = opts.analysis_options(options)
    comparison = compare(side_a, side_b, weights, n_boot=analysis.bootstrap, seed=analysis.seed, ci=analysis.ci,
                         alpha=alpha, repeats=(side_a, side_b) if repeats else None)
    return side_a, side_b, comparison
