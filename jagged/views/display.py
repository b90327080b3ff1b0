"""Show figures and tables in a notebook: PNG with alt text, escaped HTML tables.

Every figure is one embedded PNG at a modest resolution, its alt text in the output
metadata (``{"image/png": {"alt": ...}}``) where the HTML templates read it; every table is
HTML whose texts, names included, are escaped, with a plain-text twin for terminals and
nbval. The output is deterministic (no random ids), so nbval can compare it exactly.
"""

from __future__ import annotations

import base64
import html
import io
import re
import warnings
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, Callable, Iterator, Mapping

import numpy as np
import pandas as pd

from jagged.views.overview import (
    dataset_facts,
    domain_table,
    ends,
    error_matrix,
    left_out,
    median_errors,
    model_order,
    others_label,
    ranked,
)

#: Resolution of embedded figures; with the plot sizes in :mod:`jagged.plots` a report
#: of 30 models stays far below 2 MB.
DEFAULT_DPI = 90
NA_TEXT = "—"
#: Tables with more rows scroll inside a box of their own (the header row stays in view).
SCROLL_ROWS = 40
#: Cell texts longer than this (the plots' label length) may wrap after ``/``, ``_``, ``-``, ``.`` inside a
#: box of at most 23rem (report.css ``.wrap``).
WRAP_MIN = 32
#: Cell texts longer than COLLAPSE_MIN collapse into a ``<details>`` showing their first COLLAPSE_SHOWN characters.
COLLAPSE_MIN, COLLAPSE_SHOWN = 160, 72
#: A part of a note (``"; "``-separated) found in at least this many rows, and in at least half of
#: them, is said once under the table, the rows marked with its number (:func:`shared_notes`).
REPEAT_MIN = 3
#: Columns whose repeated parts are said once under the table.
NOTE_COLUMNS = ("note", "interval_note")
#: MIME type of outputs carrying numbers for REPORT.json (never in the HTML): ``{"metrics": [records]}``.
RECORD_MIME = "application/vnd.jagged.record+json"
#: Fonts tried, in order, for characters DejaVu Sans lacks (CJK, emoji), when installed.
FALLBACK_FONTS = ("Noto Sans CJK JP", "Noto Sans CJK SC", "WenQuanYi Zen Hei", "Droid Sans Fallback",
                  "Noto Color Emoji", "Noto Emoji")


def _figure_of(obj: Any) -> Any:
    """The matplotlib Figure behind an Axes or a Figure."""
    figure = getattr(obj, "figure", None)
    if figure is not None and hasattr(figure, "savefig"):
        return figure
    if hasattr(obj, "savefig"):
        return obj
    raise TypeError(f"expected a matplotlib Axes or Figure, not {type(obj).__name__}")


def figure_png(obj: Any, *, dpi: int = DEFAULT_DPI, colors: int | None = None) -> bytes:
    """Render an Axes' (or Figure's) figure to PNG bytes at ``dpi``.

    ``colors`` (2–256) reduces the image to a palette: a dot, line or bar chart looks the same
    at about a third of the size; not for colour scales (heatmaps), whose shades it would merge.
    """
    import matplotlib as mpl

    buffer = io.BytesIO()
    families = list(dict.fromkeys([*mpl.rcParams["font.sans-serif"][:1], *_installed_fallbacks(),
                                   *mpl.rcParams["font.sans-serif"]]))
    with warnings.catch_warnings(), mpl.rc_context({"font.sans-serif": families, "text.hinting": "no_hinting"}):
        # A name in a script no installed font covers draws as boxes; the tables beside the
        # figure show it as text, so the warning would only clutter the report.
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .* missing from font", category=UserWarning)
        figure = _figure_of(obj)  # laid out by its own engine (constrained layout) as it is drawn
        if colors is None:
            with _laid_out_once(figure, dpi):
                figure.savefig(buffer, format="png", dpi=dpi, facecolor="white", metadata={"Software": None})
            return buffer.getvalue()
        if not 2 <= int(colors) <= 256:
            raise ValueError(f"colors must be between 2 and 256, not {colors}")
        rgb = _render_rgb(figure, dpi)
    # Quantised straight from the drawn pixels: no PNG encoded and decoded in between.
    from PIL import Image

    palette = rgb.quantize(colors=int(colors), method=Image.Quantize.FASTOCTREE)
    palette.save(buffer, format="PNG")
    return buffer.getvalue()


@contextmanager
def _laid_out_once(figure: Any, dpi: int) -> Iterator[None]:
    """Run the figure's layout engine once, at the output resolution, and keep it still while saving.

    ``savefig`` lays out a figure with a layout engine in a dry draw before the real one;
    executing the engine here (``LayoutEngine.execute``) and setting it to ``"none"`` for the
    save gives the same positions with one layout and one draw. The engine is put back after.
    """
    engine = figure.get_layout_engine()
    if engine is None or not hasattr(engine, "execute"):
        yield
        return
    figure.set_dpi(dpi)
    engine.execute(figure)
    figure.set_layout_engine("none")
    try:
        yield
    finally:
        figure.set_layout_engine(engine)


def _render_rgb(figure: Any, dpi: int) -> Any:
    """Draw a figure with Agg at ``dpi`` on white and return its pixels as a PIL RGB image."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from PIL import Image

    figure.set_dpi(dpi)
    figure.patch.set_facecolor("white")
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    width, height = canvas.get_width_height(physical=True)
    return Image.frombuffer("RGBA", (width, height), canvas.buffer_rgba(), "raw", "RGBA", 0, 1).convert("RGB")


@lru_cache(maxsize=1)
def _installed_fallbacks() -> tuple[str, ...]:
    """The :data:`FALLBACK_FONTS` matplotlib can find on this machine."""
    from matplotlib import font_manager

    installed = {font.name for font in font_manager.fontManager.ttflist}
    return tuple(name for name in FALLBACK_FONTS if name in installed)


def figure_bundle(obj: Any, alt: str, *, dpi: int = DEFAULT_DPI,
                  colors: int | None = None) -> tuple[dict[str, str], dict[str, Any]]:
    """The (data, metadata) pair of a figure's display output.

    ``data`` holds ``image/png`` (base64) and ``text/plain`` (the alt text); ``metadata`` is
    ``{"image/png": {"alt": alt, "width": ..., "height": ...}}`` in CSS pixels, so the image
    keeps its size on high-density screens. ``colors``: see :func:`figure_png`.
    """
    if not str(alt).strip():
        raise ValueError("a figure needs alt text")
    png = figure_png(obj, dpi=dpi, colors=colors)
    width = int.from_bytes(png[16:20], "big")
    height = int.from_bytes(png[20:24], "big")
    data = {"image/png": base64.b64encode(png).decode("ascii"), "text/plain": f"[figure: {alt}]"}
    metadata = {"image/png": {"alt": str(alt), "width": width, "height": height}}
    return data, metadata


def show_figure(obj: Any, alt: str, *, dpi: int = DEFAULT_DPI, colors: int | None = None,
                close: bool = True) -> None:
    """Display a figure (what a plot of :mod:`jagged.plots` returns) as a PNG with alt text, then close it.

    ``colors``: see :func:`figure_png`; ``close`` keeps the inline backend from showing it twice.
    """
    from IPython.display import display

    figure = _figure_of(obj)
    data, metadata = figure_bundle(figure, alt, dpi=dpi, colors=colors)
    display(data, raw=True, metadata=metadata)
    if close:
        import matplotlib.pyplot as plt

        plt.close(figure)


def _is_missing(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, (float, np.floating)) and bool(np.isnan(value)))


def cell_text(value: Any, spec: str | Callable[[Any], str] | None = None) -> str:
    """A cell's display text (see :func:`format_table`)."""
    if callable(spec):
        return spec(value)
    if _is_missing(value):
        return NA_TEXT
    if spec:
        return spec.format(value)
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (float, np.floating)):
        return f"{value:.4f}"
    return str(value)


Format = str | Callable[[Any], str]


def format_table(frame: pd.DataFrame, formats: Mapping[str, Format] | None = None) -> pd.DataFrame:
    """Every cell as display text (same shape, column names as strings).

    ``formats`` maps a column to a format spec (``"{:.3f}"``, for non-missing values) or a
    callable (for every value). Otherwise floats get 4 decimals, booleans yes/no; missing
    values show as an em dash.
    """
    formats = dict(formats or {})
    out = {str(c): [cell_text(v, formats.get(c)) for v in frame[c].tolist()] for c in frame.columns}
    return pd.DataFrame(out, index=frame.index, columns=[str(c) for c in frame.columns])


def table_html(frame: pd.DataFrame, *, caption: str | None = None,
               formats: Mapping[str, Format] | None = None,
               numeric: tuple[str, ...] | None = None, row_header: bool = True,
               cut: tuple[int, str] | None = None) -> str:
    """An escaped HTML table (``<table class="jagged-table">``) with a header row of ``<th scope="col">`` cells.

    The index is not shown; ``formats`` as in :func:`format_table`; ``numeric`` columns (by
    default the numeric ones) are right-aligned; with ``row_header`` each row's first cell is a
    ``<th scope="row">``. ``cut`` = (n, text): after n rows, a row spanning the table saying
    what was left out. Repeated notes are said once under it (:func:`shared_notes`).
    """
    text = format_table(frame, formats)
    text, footnotes = shared_notes(text)
    if numeric is None:
        numeric = tuple(str(c) for c in frame.columns
                        if pd.api.types.is_numeric_dtype(frame[c].dtype)
                        and not pd.api.types.is_bool_dtype(frame[c].dtype))
    esc = html.escape
    parts = ['<table class="jagged-table">']
    if caption:
        parts.append(f"<caption>{esc(caption)}</caption>")
    parts.append("<thead><tr>")
    parts.extend(f'<th scope="col">{cell_markup(str(c))}</th>' for c in text.columns)
    parts.append("</tr></thead><tbody>")
    is_num = [c in numeric for c in text.columns]
    for position, row in enumerate(text.itertuples(index=False, name=None)):
        if cut is not None and position == cut[0]:
            parts.append(f'<tr class="cut"><td colspan="{len(text.columns)}">{esc(cut[1])}</td></tr>')
        cells = [f'<td class="num">{esc(v)}</td>' if num else f"<td>{cell_markup(v)}</td>"
                 for num, v in zip(is_num, row)]
        if row_header and cells:
            cells[0] = f'<th scope="row">{cell_markup(row[0])}</th>'
        parts.append(f"<tr>{''.join(cells)}</tr>")
    parts.append("</tbody></table>")
    if footnotes:
        parts.append('<ol class="table-notes">')
        parts.extend(f'<li value="{number}">{esc(note)}</li>' for number, note in footnotes)
        parts.append("</ol>")
    return "\n".join(parts)


def shared_notes(text: pd.DataFrame, columns: tuple[str, ...] = NOTE_COLUMNS,
                 minimum: int = REPEAT_MIN) -> tuple[pd.DataFrame, list[tuple[int, str]]]:
    """Say a note repeated on many rows once: the rows keep a marker ``[n]``, the note goes under the table.

    ``text`` holds display texts (:func:`format_table`); a ``"; "``-separated part of a cell
    of ``columns`` found in at least ``minimum`` rows and half of them is shared. Returns
    the table with each shared part replaced by its marker (``"[1]"``) and the shared parts
    as (number, text), in order of first appearance.
    """
    notes: list[tuple[int, str]] = []
    if len(text) < minimum:
        return text, notes
    out = text
    for column in [c for c in text.columns if c in columns]:
        cells = [[] if v in ("", NA_TEXT) else v.split("; ") for v in text[column].tolist()]
        counts: dict[str, int] = {}
        for parts in cells:
            for part in dict.fromkeys(parts):
                counts[part] = counts.get(part, 0) + 1
        shared = [part for part, n in counts.items() if n >= minimum and 2 * n >= len(cells)]
        if not shared:
            continue
        numbers = {part: len(notes) + k for k, part in enumerate(shared, start=1)}
        notes.extend((n, part) for part, n in numbers.items())
        marked = ["; ".join(f"[{numbers[p]}]" if p in numbers else p for p in parts) or NA_TEXT
                  if parts else text[column].iloc[i] for i, parts in enumerate(cells)]
        out = out.assign(**{column: marked})
    return out, notes


def collapse_markup(text: str, shown: int = COLLAPSE_SHOWN) -> str:
    """A very long cell as a closed ``<details>``: its start as the summary, the whole text inside (escaped)."""
    return (f'<details class="long-cell"><summary>{html.escape(text[:shown].rstrip())}… '
            f'<span class="more">({len(text):,} characters)</span></summary>'
            f'<span class="wrap">{html.escape(text)}</span></details>')


def cell_markup(text: str) -> str:
    """A cell's text as escaped HTML, long ones wrapping.

    Over :data:`WRAP_MIN` characters it sits in a ``<span class="wrap">``; without spaces (an
    id) it also gets ``<wbr/>`` after ``/``, ``_``, ``-`` and ``.``, at most one per
    :data:`WRAP_STEP` characters, so a 100-character model id wraps at its joints (the text
    copied or spoken is unchanged); over :data:`COLLAPSE_MIN` it collapses
    (:func:`collapse_markup`). ``<wbr/>`` is self-closed and sparse: BeautifulSoup's
    ``html.parser``, which nbconvert runs on the page, slows down quadratically on many unclosed
    void elements.
    """
    escaped = html.escape(text)
    if len(text) <= WRAP_MIN:
        return escaped
    if len(text) > COLLAPSE_MIN:
        return collapse_markup(text)
    if any(c.isspace() for c in text):  # a phrase (a note) wraps at its spaces: the box is enough
        return f'<span class="wrap">{escaped}</span>'
    out, last = [], 0
    for match in _JOINTS.finditer(escaped):
        if match.end() - last >= WRAP_STEP and match.end() < len(escaped):
            out.append(escaped[last:match.end()] + "<wbr/>")
            last = match.end()
    out.append(escaped[last:])
    return '<span class="wrap">' + "".join(out) + "</span>"


#: Where long names may wrap (the escaped text has no such character inside an entity).
_JOINTS = re.compile(r"[/_.\-]")
#: Fewest characters between two line-break opportunities in a long name.
WRAP_STEP = 8


def table_text(frame: pd.DataFrame, formats: Mapping[str, Format] | None = None) -> str:
    """The plain-text twin of :func:`table_html` (same cell texts, aligned columns)."""
    return format_table(frame, formats).to_string(index=False)


def show_table(frame: pd.DataFrame, *, caption: str | None = None,
               formats: Mapping[str, Format] | None = None, collapsed: str | None = None,
               limit: int | None = None) -> None:
    """Display a table as escaped HTML (:func:`table_block`) with a plain-text twin.

    ``collapsed`` puts it in a closed ``<details>`` with this summary; ``limit`` shows only the
    first and last rows (:func:`cut_rows`), for tables whose every row is also in the
    per-model table. Every table scrolls sideways in a focusable region, one of more than
    :data:`SCROLL_ROWS` rows also downwards (printed, it unrolls).
    """
    from IPython.display import display

    kept, _ = cut_rows(frame, limit)
    display({"text/html": table_block(frame, caption=caption, formats=formats, collapsed=collapsed, limit=limit),
             "text/plain": table_text(kept, formats)}, raw=True)


def cut_rows(frame: pd.DataFrame, limit: int | None) -> tuple[pd.DataFrame, int]:
    """The first and last rows of a table, ``limit`` in all (:func:`jagged.views.overview.ends`), and the cut."""
    positions, cut = ends(range(len(frame)), limit)
    return (frame if not cut else frame.iloc[positions]), cut


def table_block(frame: pd.DataFrame, *, caption: str | None = None,
                formats: Mapping[str, Format] | None = None, collapsed: str | None = None,
                limit: int | None = None) -> str:
    """The HTML :func:`show_table` displays: the table, in its scrolling region and ``<details>`` when asked."""
    kept, cut = cut_rows(frame, limit)
    note = None
    if cut:
        hidden = len(frame) - len(kept)
        note = (f"… {hidden:,} of {len(frame):,} rows not shown here (every model is in the per-model "
                "table above, and in jagged metrics)")
        caption = f"{caption} — the first {cut} and the last {len(kept) - cut} of {len(frame):,}" if caption else None
    markup = table_html(kept, caption=caption, formats=formats, cut=(cut, note) if cut else None)
    label = html.escape(caption or collapsed or "table", quote=True)
    # every table scrolls sideways inside its own box (never past the page); a long one also downwards
    box = "table-scroll" if len(kept) > SCROLL_ROWS else "table-wrap"
    markup = f'<div class="{box}" role="region" tabindex="0" aria-label="{label}">\n{markup}\n</div>'
    if collapsed:
        markup = f"<details><summary>{html.escape(collapsed)}</summary>\n{markup}\n</details>"
    return markup


#: Characters that mean something in Markdown (CommonMark lets any ASCII punctuation be escaped).
_MARKDOWN_SPECIAL = frozenset("\\`*_{}[]()#+-.!|~$:")


def markdown_text(value: Any) -> str:
    """A name to put inside Markdown, shown as typed and never markup.

    HTML-significant characters become entities (nbconvert's renderer passes raw HTML
    through), Markdown punctuation is backslash-escaped (``*x*`` stays ``*x*``, ``$x$`` never
    becomes math); runs of white space become one space.
    """
    out = []
    for char in " ".join(str(value).split()):
        if char in "<>&\"'":
            out.append(html.escape(char, quote=True))
        elif char in _MARKDOWN_SPECIAL:
            out.append("\\" + char)
        else:
            out.append(char)
    return "".join(out)


def show_heading(text: str, level: int = 3) -> None:
    """Display a Markdown heading whose text comes from the data (a model name), escaped by :func:`markdown_text`."""
    from IPython.display import display

    if level not in (2, 3, 4):
        raise ValueError(f"level must be 2, 3 or 4, not {level}")
    display({"text/markdown": "#" * level + " " + markdown_text(text), "text/plain": str(text)}, raw=True)


def show_text(text: str) -> None:
    """Display a short paragraph of plain text (escaped) as HTML."""
    from IPython.display import display

    display({"text/html": f"<p>{html.escape(text)}</p>", "text/plain": text}, raw=True)


# ---------------------------------------------------------------------------------------
# The report's building blocks


def show_dataset(dataset: Any) -> None:
    """Show what was read: a facts table and a per-domain table."""
    show_table(dataset_facts(dataset), caption="What was read")
    show_table(domain_table(dataset.scores), caption="Domains", formats={"n_items": "{:.0f}"})


#: Column formats of the per-model summary table.
METRIC_FORMATS: dict[str, str] = {
    "macro_score": "{:.4f}", "mean_error": "{:.4f}", "sd_error": "{:.4f}", "cv_error": "{:.4f}",
}


def show_metrics(table: pd.DataFrame, *, by: str = "cv_error") -> None:
    """Show the per-model jaggedness table (:func:`jagged.views.overview.ranked` by ``by``).

    A model's ``cv_error_rests_on`` (the domain without which it would be at most half) is
    shown beside ``cv_error`` when any model has one.
    """
    rows = ranked(table, by)
    marks = table.drop_duplicates("model").set_index("model").get("cv_error_rests_on")
    if marks is not None and (marks != "").any():  # the domain a cv_error rests on (leaving it out halves it)
        rows.insert(rows.columns.get_loc("cv_error") + 1, "cv_error_rests_on", rows["model"].map(marks).fillna(""))
    show_table(rows, caption=f"Per-model jaggedness, sorted by {by} (highest first)", formats=METRIC_FORMATS)


def json_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """A table as JSON-ready records: plain Python values, missing values (NaN, NA, NaT) as None."""
    records = frame.astype(object).where(frame.notna(), None).to_dict(orient="records")
    return [{str(k): (v.item() if isinstance(v, np.generic) else v) for k, v in row.items()} for row in records]


def show_error_matrix(scores: pd.DataFrame, table: pd.DataFrame, *, limit: int | None = None) -> None:
    """The heatmap's numbers as a collapsed table, with the same ``limit`` cut and summary row."""
    matrix = error_matrix(scores, table, limit=limit)
    cut = model_order(table, limit=limit)[1]
    if cut:  # the heatmap's summary row of the models left out, in the same place
        hidden = left_out(table, limit=limit)
        summary = median_errors(scores, hidden).reindex(matrix.columns[1:])
        row = pd.DataFrame([[others_label(len(hidden)), *summary.tolist()]], columns=matrix.columns)
        matrix = pd.concat([matrix.iloc[:cut], row, matrix.iloc[cut:]], ignore_index=True)
    formats = {c: "{:.2f}" for c in matrix.columns if c != "model"}
    show_table(matrix, caption="Error rate (1 − score) by model and domain", formats=formats,
               collapsed="The heatmap's numbers as a table")
