"""The item audit's sufficient statistics, written once as Ibis expressions that DuckDB or Spark run.

Every sum of :class:`jagged.stats.item_sums.ItemSums` is an expression over one table of
rows (:func:`rows_table`), whatever the input and the engine (:mod:`jagged.stats.engine`).
For a row r = (model m, item i) with rest group g(i) (its domain, or the whole test):

* ``S_mg``, ``N_mg``: sum of ``correct`` and number of items of model m in group g;
* rest score ``R_r = (S_mg − x_r) / (N_mg − 1)`` (undefined when N_mg = 1);
* upper/lower weights: among the item's n_R rows with a rest score, the
  ``k = max(1, ⌊0.27 n_R + ½⌋)`` highest (lowest) get weight 1; with ``above`` rows
  strictly higher and ``tied`` rows equal, w_u = 1 if above + tied ≤ k else
  clip((k − above) / tied, 0, 1) (w_l the same from below).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from jagged.errors import JaggedInputError

#: Share of models in the upper and in the lower group of the discrimination index (Kelley).
UPPER_LOWER = 0.27
#: Label of "no answer extracted" in the per-option sums.
NO_ANSWER = ""
#: Columns of :attr:`jagged.stats.item_sums.ItemSums.items` (per item).
ITEM_SUM_COLUMNS: tuple[str, ...] = (
    "item", "domain", "group", "n", "sx", "sxx", "n_r", "sx_r", "sxx_r", "sr", "srr", "sxr", "k_ul", "sxwu", "sxwl",
    "n_choice", "nopt_min", "nopt_max",
)
#: Columns of :attr:`jagged.stats.item_sums.ItemSums.options` (per item and chosen label, rows with choice
#: information).
OPTION_SUM_COLUMNS: tuple[str, ...] = (
    "pos", "label", "count", "swu", "n_wrong", "n_wrong_r", "sr_wrong", "swu_wrong",
)
#: Canonical columns of :func:`rows_table`.
ROW_COLUMNS: tuple[str, ...] = ("model", "domain", "grp", "item", "x", "choice", "key", "n_options", "informed")
#: Label pattern written as a whole number with a zero fraction (``"1.0"`` reads as ``"1"``, as in memory).
_WHOLE = r"^(-?[0-9]+)\.0+$"


# --------------------------------------------------------------------------- the rows


def text_column(values: np.ndarray) -> pd.Series:
    """An object-dtype column of names (pandas would otherwise convert strings to its string dtype)."""
    return pd.Series(np.asarray(values, dtype=object), dtype=object)


def _text(column: Any, dtype: Any) -> Any:
    """A name column as trimmed text."""
    return column.strip() if dtype.is_string() else column.cast("string")


def _label(column: Any, dtype: Any) -> Any:
    """A label column as :func:`jagged.readers.choices.normalise_labels` reads it (NULL where empty)."""
    import ibis

    if dtype.is_integer():
        return column.cast("string")
    if dtype.is_floating():
        return ibis.ifelse(column == column.round(), column.cast("int64").cast("string"), column.cast("string"))
    text = column.cast("string").strip()
    return ibis.ifelse(text.re_search(_WHOLE), text.re_extract(_WHOLE, 1), text).nullif("")


def rows_table(table: Any, *, rest: str = "domain", validated: bool = False,
               coded: bool = False) -> tuple[Any, bool, bool]:
    """The canonical rows (:data:`ROW_COLUMNS`) of an item-level Ibis table, whether it has choice, and key.

    Parameters
    ----------
    table : ibis.Table
        ``model, domain, item`` (or ``item_id``), ``correct`` and optionally ``choice, key,
        n_options`` (names may carry spaces; other columns are ignored).
    rest : {"domain", "test"}
        The rest group ``grp``: the item's domain, or ``"(all)"``.
    validated : bool
        A validated item table in memory: names and labels are not normalised again.
    coded : bool
        ``model``, ``domain``, ``item`` are integer codes of sorted names (faster to group);
        ``grp`` is then the domain code, or 0 for the whole test.
    """
    import ibis

    from jagged.readers.items import ITEM_ALIASES

    if rest not in ("domain", "test"):
        raise JaggedInputError(f"rest score must be 'domain' or 'test', not {rest!r}")
    schema = table.schema()
    col = {str(name).strip(): name for name in schema.names}
    for alias, name in ITEM_ALIASES.items():
        if alias in col and name not in col:
            col[name] = col[alias]
    missing = [name for name in ("model", "domain", "item", "correct") if name not in col]
    if missing:
        raise JaggedInputError(f"item-level table lacks the column(s) {', '.join(missing)}")

    def column(name: str) -> Any:
        return table[col[name]]

    def typed(name: str) -> Any:
        dtype = schema[col[name]]
        if coded and name in ("model", "domain", "item"):
            return column(name).cast("int64")
        if validated:
            return column(name).cast("string")
        return _label(column(name), dtype) if name in ("item", "choice", "key") else _text(column(name), dtype)

    has_choice, has_key = "choice" in col, "key" in col
    domain = typed("domain")
    choice = typed("choice") if has_choice else ibis.null("string")
    key = typed("key") if has_key else ibis.null("string")
    informed = key.notnull() if has_key else ibis.literal(has_choice)
    rows = table.select(
        model=typed("model"), domain=domain,
        grp=domain if rest == "domain" else (ibis.literal(0, "int64") if coded else ibis.literal("(all)")),
        item=typed("item"), x=column("correct").cast("float64"), choice=choice, key=key,
        n_options=column("n_options").cast("float64") if "n_options" in col else ibis.null("float64"),
        informed=informed)
    return rows, has_choice, has_key


# --------------------------------------------------------------------------- the expressions


def model_group_expr(rows: Any) -> Any:
    """Per (model, rest group): ``s`` Σx and ``n`` items."""
    return rows.group_by(["model", "grp"]).aggregate(s=rows.x.sum(), n=rows.count())


def weighted_rows_expr(rows: Any, mg: Any, frac: float = UPPER_LOWER) -> Any:
    """Every row with its rest score ``rest``, group size ``k`` and weights ``w_u``, ``w_l``."""
    import ibis

    j = rows.join(mg, ["model", "grp"])
    n = j.n.cast("float64")
    # only what the sums read goes through the window's sort (not key, s, n)
    j = j.select("model", "item", "domain", "grp", "x", "choice", "informed", "n_options",
                 rest=ibis.ifelse(j.n > 1, (j.s - j.x) / (n - 1.0), ibis.null("float64")))
    ordered = ibis.desc(ibis.coalesce(j.rest, -1.0))  # rest lies in [0, 1]: rows without one rank last
    # one sort per item: rows strictly above (rank), rows at or above (a range frame), all rows with a rest score
    through = j.rest.count().over(ibis.window(range=(None, 0), group_by=j.item, order_by=ordered))
    j = j.mutate(n_r=j.rest.count().over(ibis.window(rows=(None, None), group_by=j.item, order_by=ordered)),
                 above=ibis.rank().over(group_by=j.item, order_by=ordered), through=through)
    j = j.mutate(tied=j.through - j.above)
    k = ibis.ifelse(j.n_r > 0, ibis.greatest(1.0, (frac * j.n_r + 0.5).floor().cast("float64")), 0.0)
    j = j.mutate(k=k)
    above, tied = j.above.cast("float64"), j.tied.cast("float64")
    below = j.n_r.cast("float64") - above - tied

    def weight(better: Any) -> Any:
        return ibis.cases((j.rest.isnull(), 0.0), (better + tied <= j.k, 1.0),
                          else_=ibis.greatest(0.0, ibis.least(1.0, (j.k - better) / tied)))

    return j.select("model", "item", "domain", "grp", "x", "choice", "informed", "n_options", "rest", "k",
                    w_u=weight(above), w_l=weight(below))


def item_label_sums_expr(w: Any) -> Any:
    """Per (item, label): every sum of the per-item and per-option tables, in one pass over the weighted rows.

    ``label`` is the chosen label (NULL choice: :data:`NO_ANSWER`) on rows with choice
    information and NULL on the others, so that the per-item sums (:func:`item_sums_expr`)
    and the per-option sums (:func:`option_sums_expr`) are sums of this small table: the
    window behind the weights runs once, and only this table is cached.
    """
    import ibis

    t = w.mutate(label=ibis.ifelse(w.informed, w.choice.fill_null(NO_ANSWER), ibis.null("string")))
    ok = t.rest.notnull()
    wrong = t.x == 0
    zero = 0.0
    return t.group_by(["item", "label"]).aggregate(
        domain=t.domain.min(), grp=t.grp.min(), n=t.count(), sx=t.x.sum(), sxx=(t.x * t.x).sum(),
        n_r=t.rest.count(), sx_r=t.x.sum(where=ok).fill_null(zero), sxx_r=(t.x * t.x).sum(where=ok).fill_null(zero),
        sr=t.rest.sum().fill_null(zero), srr=(t.rest * t.rest).sum().fill_null(zero),
        sxr=(t.x * t.rest).sum().fill_null(zero),
        k_ul=t.k.max(), sxwu=(t.x * t.w_u).sum(), sxwl=(t.x * t.w_l).sum(), swu=t.w_u.sum(),
        nopt_min=t.n_options.min(), nopt_max=t.n_options.max(), n_wrong=t.count(where=wrong),
        n_wrong_r=t.count(where=wrong & ok), sr_wrong=t.rest.sum(where=wrong).fill_null(zero),
        swu_wrong=t.w_u.sum(where=wrong).fill_null(zero))


def item_sums_expr(a: Any) -> Any:
    """Per item: the columns of :data:`jagged.stats.item_sums.ITEM_SUM_COLUMNS` (``grp`` for ``group``).

    ``a`` is :func:`item_label_sums_expr`; ``n_choice`` counts the rows with a label.
    """
    sums = ("n", "sx", "sxx", "n_r", "sx_r", "sxx_r", "sr", "srr", "sxr", "sxwu", "sxwl")
    return a.group_by("item").aggregate(
        domain=a.domain.min(), grp=a.grp.min(), **{name: a[name].sum() for name in sums}, k_ul=a.k_ul.max(),
        n_choice=a.n.sum(where=a.label.notnull()).fill_null(0), nopt_min=a.nopt_min.min(),
        nopt_max=a.nopt_max.max())


def option_sums_expr(a: Any) -> Any:
    """Per (item, chosen label) over rows with choice information (NULL choice: :data:`NO_ANSWER`).

    ``a`` is :func:`item_label_sums_expr`.
    """
    informed = a.filter(a.label.notnull())
    return informed.select("item", "label", count=informed.n, swu=informed.swu,
                           n_wrong=informed.n_wrong, n_wrong_r=informed.n_wrong_r, sr_wrong=informed.sr_wrong,
                           swu_wrong=informed.swu_wrong)


def key_counts_expr(rows: Any, has_key: bool, has_choice: bool) -> Any | None:
    """Rows per (item, key); without a key column the choices of correct rows stand for the key (None: neither)."""
    import ibis

    if has_key:
        label = rows.key
    elif has_choice:
        label = ibis.ifelse(rows.x == 1, rows.choice, ibis.null("string"))
    else:
        return None
    keyed = rows.mutate(label=label)
    keyed = keyed.filter(keyed.label.notnull())
    return keyed.group_by(["item", "label"]).aggregate(count=keyed.count())


def model_domain_sums_expr(rows: Any, aside: Any, alt: Any, has_choice: bool) -> Any:
    """Per (model, domain), over the rows of the items set aside or re-scored only: what changes (see ItemSums).

    ``s_aside``, ``n_aside``: Σx and count of the rows of items in ``aside``; ``d_rescored``:
    Σ(re-scored x − x) over the rows of items in ``alt``, ``n_rescored`` their count. The
    sums over all items come from the first pass (:func:`run_model_domain_sums`).
    """
    import ibis

    touched = rows.filter(rows.item.isin(aside.item_aside) | rows.item.isin(alt.item_alt))
    j = touched.left_join(aside, touched.item == aside.item_aside).left_join(alt, touched.item == alt.item_alt)
    out = j.item_aside.notnull()
    rescored = (ibis.ifelse(j.option.isnull(), j.x, ibis.ifelse(j.choice == j.option, 1.0, 0.0))
                if has_choice else j.x)
    return j.group_by(["model", "domain"]).aggregate(
        s_aside=j.x.sum(where=out).fill_null(0.0), n_aside=j.count(where=out), d_rescored=(rescored - j.x).sum(),
        n_rescored=j.count(where=j.option.notnull()))


# --------------------------------------------------------------------------- running them


def fetch(con: Any, expr: Any, names: dict[str, np.ndarray] | None = None) -> pd.DataFrame:
    """An expression's result as a DataFrame (text columns object arrays of str or None, the rest float).

    ``names`` decodes integer-coded columns (:func:`rows_table` with ``coded=True``): column →
    the names its codes index.
    """
    frame = con.to_pyarrow(expr).to_pandas()
    out = {}
    for name in frame.columns:
        values = frame[name]
        if names is not None and name in names:
            out[name] = text_column(np.asarray(names[name], dtype=object)[values.to_numpy(dtype=np.int64)])
        elif values.dtype == object or pd.api.types.is_string_dtype(values):
            array = values.to_numpy(dtype=object)
            array[pd.isna(array)] = None
            out[name] = pd.Series(array, dtype=object)
        else:
            out[name] = pd.to_numeric(values).to_numpy(dtype=float)
    return pd.DataFrame(out, index=pd.RangeIndex(len(frame)))


def _empty_options() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=object if c == "label" else (np.int64 if c == "pos" else float))
                         for c in OPTION_SUM_COLUMNS})


def _positioned(frame: pd.DataFrame, item_names: np.ndarray, label: str) -> pd.DataFrame:
    """A per-(item, label) table with ``pos`` (the item's row) in place of ``item``, sorted by pos then label."""
    pos = pd.Index(item_names).get_indexer(frame["item"].to_numpy(dtype=object)).astype(np.int64)
    labels = frame["label"].to_numpy(dtype=object)
    order = np.lexsort((labels.astype(str), pos)) if len(pos) else np.zeros(0, dtype=np.int64)
    out = {"pos": pos[order], label: text_column(labels[order])}
    for name in frame.columns:
        if name not in ("item", "label"):
            out[name] = frame[name].to_numpy(dtype=float)[order]
    return pd.DataFrame(out)


def compute_item_sums(con: Any, rows: Any, *, has_choice: bool, has_key: bool,
                      names: dict[str, np.ndarray] | None = None) -> tuple[pd.DataFrame, ...]:
    """Run the expressions on ``con``: the ``model_group, items, options, keys`` of an ItemSums.

    ``rows`` from :func:`rows_table`; ``names`` decodes integer-coded rows (``model``,
    ``domain``, ``grp``, ``item`` → names). The per-group table is sorted by model and group.
    """
    from jagged.stats.engine import table_from_frame

    mg_raw = fetch(con, model_group_expr(rows))
    mg_codes = mg_raw[["model", "grp"]].copy()
    if names is not None:  # fetched as float: the codes go back to the engine as integers
        mg_codes = mg_codes.astype(np.int64)
        for name in ("model", "grp"):
            mg_raw[name] = text_column(np.asarray(names[name], dtype=object)[mg_codes[name].to_numpy()])
    order = np.lexsort((mg_raw["grp"].to_numpy(dtype=object).astype(str),
                        mg_raw["model"].to_numpy(dtype=object).astype(str)))
    mg = mg_raw.rename(columns={"grp": "group"}).iloc[order].reset_index(drop=True)
    mg_codes = mg_codes.iloc[order].reset_index(drop=True)
    # the per-group sums go back to the engine as a small table: the rows are not aggregated twice
    kind = "string" if names is None else "int64"
    # (a table of the engine, not a memtable: Spark's cache() does not register the memtables inside it)
    mg_table = table_from_frame(con, pd.DataFrame({
        "model": mg_codes["model"].to_numpy(), "grp": mg_codes["grp"].to_numpy(), "s": mg["s"].to_numpy(dtype=float),
        "n": mg["n"].to_numpy(dtype=float).astype(np.int64)}),
        {"model": kind, "grp": kind, "s": "float64", "n": "int64"})
    w = weighted_rows_expr(rows, mg_table)
    with item_label_sums_expr(w).cache() as cached:  # per (item, label): the window runs once
        items = fetch(con, item_sums_expr(cached), names).rename(columns={"grp": "group"})
        items = items.sort_values("item", kind="stable").reset_index(drop=True)
        items = items[list(ITEM_SUM_COLUMNS)]
        for name in ("item", "domain", "group"):
            items[name] = text_column(items[name].to_numpy(dtype=object))
        item_names = items["item"].to_numpy(dtype=object)
        options = _empty_options()
        if has_choice or has_key:
            found = fetch(con, option_sums_expr(cached), names)
            if len(found):
                options = _positioned(found, item_names, "label")[list(OPTION_SUM_COLUMNS)]
    key_expr = key_counts_expr(rows, has_key, has_choice)
    if key_expr is None:
        keys = pd.DataFrame({"pos": pd.Series(dtype=np.int64), "key": pd.Series(dtype=object),
                             "count": pd.Series(dtype=float)})
    else:
        keys = _positioned(fetch(con, key_expr, names), item_names, "key")
    return mg[["model", "group", "s", "n"]], items, options, keys


def run_cell_sums(con: Any, rows: Any, names: dict[str, np.ndarray] | None = None) -> pd.DataFrame:
    """Per (model, domain): ``s`` Σx and ``n`` rows, sorted by model and domain (names decoded)."""
    out = fetch(con, rows.group_by(["model", "domain"]).aggregate(s=rows.x.sum(), n=rows.count()), names)
    return out.sort_values(["model", "domain"], kind="stable").reset_index(drop=True)


def run_model_domain_sums(con: Any, rows: Any, has_choice: bool, set_aside: np.ndarray,
                          rescore: dict[str, str], cells: pd.DataFrame,
                          names: dict[str, np.ndarray] | None = None) -> pd.DataFrame:
    """The sensitivity's per-(model, domain) sums (see :class:`jagged.stats.item_sums.ItemSums`).

    ``cells`` holds ``model, domain, s, n`` over all items (:func:`run_cell_sums`, or the
    per-group sums when the rest group is the domain); the engine reads only the rows of
    the items set aside or re-scored (:func:`model_domain_sums_expr`). Sorted by model and
    domain, counts as float.
    """
    import ibis

    aside_items: Any = pd.Series([str(i) for i in set_aside], dtype=object)
    alt_items: Any = pd.Series(list(rescore), dtype=object)
    out = cells[["model", "domain", "s", "n"]].copy()
    out["s"], out["n"] = out["s"].to_numpy(dtype=float), out["n"].to_numpy(dtype=float)
    delta = pd.DataFrame({"s_aside": 0.0, "n_aside": 0.0, "d_rescored": 0.0, "n_rescored": 0.0}, index=out.index)
    if len(aside_items) or len(alt_items):
        kind = "string"
        if names is not None:  # coded rows: items by their codes (an item not in the table matches nothing)
            aside_items = pd.Index(names["item"]).get_indexer(aside_items).astype(np.int64)
            alt_items = pd.Index(names["item"]).get_indexer(alt_items).astype(np.int64)
            kind = "int64"
        aside = ibis.memtable(pd.DataFrame({"item_aside": aside_items}), schema={"item_aside": kind})
        alt = ibis.memtable(pd.DataFrame({"item_alt": alt_items,
                                          "option": pd.Series(list(rescore.values()), dtype=object)}),
                            schema={"item_alt": kind, "option": "string"})
        found = fetch(con, model_domain_sums_expr(rows, aside, alt, has_choice), names)
        at = pd.MultiIndex.from_frame(out[["model", "domain"]]).get_indexer(
            pd.MultiIndex.from_frame(found[["model", "domain"]]))
        for name in delta.columns:
            delta.loc[delta.index[at], name] = found[name].to_numpy(dtype=float)
    out["s_kept"] = out["s"] - delta["s_aside"]
    out["n_kept"] = out["n"] - delta["n_aside"]
    out["s_rescored"] = out["s"] + delta["d_rescored"]
    out["n_rescored"] = delta["n_rescored"]
    return out.reset_index(drop=True)
