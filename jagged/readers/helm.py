"""HELM (Stanford CRFM) run folders: item-level results from ``per_instance_stats.json``.

A run folder (``benchmark_output/runs/<suite>/<run name>/``) holds ``run_spec.json``,
``scenario_state.json``, ``per_instance_stats.json`` and ``stats.json`` (HELM's aggregates,
which jagged recomputes); jagged reads one, or any folder holding several:

* **model**: ``run_spec.adapter_spec.model``;
* **domain**: the run name's scenario arguments (``mmlu:subject=philosophy,method=...``
  gives ``philosophy``; several give ``k=v`` pairs), else the scenario, which is the
  ``category`` when a read spans several;
* **item**: ``instance_id``; **correct**: the per-instance ``mean`` of the main metric
  (default ``exact_match``, else the run spec's first) on the ``test`` split (else
  ``valid``), without perturbations, train trials averaged;
* **choice**, **key**, **text**, **options** (``scenario_state.json``): for requests with an
  ``output_mapping``, the letter answered and that of the reference tagged ``correct``;
  the input text and the references in letter order, bounded;
* several runs of one model and domain: the newest (latest request time, else the
  folder's time) is used, the others listed as superseded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from jagged.errors import JaggedInputError
from jagged.readers.files import read_json_text
from jagged.readers.items import cap_text, options_text
from jagged.readers.reader import Head, ItemRead, Parsed, Reader, category_map, mapped, newest
from jagged.text import listing, plural

FORMAT = "HELM run"
RUN_SPEC = "run_spec.json"
PER_INSTANCE = "per_instance_stats.json"
SCENARIO_STATE = "scenario_state.json"
#: Run-name arguments that configure the adapter or name the model, not the scenario.
ADAPTER_ARGS: frozenset[str] = frozenset({
    "model", "model_deployment", "method", "data_augmentation", "max_train_instances", "max_eval_instances",
    "num_outputs", "num_train_trials", "num_trials", "groups", "stop", "instructions", "temperature", "max_tokens",
    "use_chain_of_thought", "use_few_shot", "eval_split", "chain_of_thought_prefix", "follow_format_instructions",
})
DEFAULT_METRIC = "exact_match"
SPLITS = ("test", "valid", "train")


def is_run_file(content: Any) -> bool:
    """Whether parsed JSON is a HELM run's ``run_spec.json`` or ``per_instance_stats.json``."""
    if isinstance(content, dict):
        return "adapter_spec" in content and "scenario_spec" in content
    return (isinstance(content, list) and bool(content) and isinstance(content[0], dict)
            and "instance_id" in content[0] and "stats" in content[0])


def runs_among(files: list[Path]) -> list[Path]:
    """The run folders among a list of files: folders holding both ``run_spec.json`` and ``per_instance_stats.json``."""
    names: dict[Path, set[str]] = {}
    for file in files:
        if file.name in (RUN_SPEC, PER_INSTANCE):
            names.setdefault(file.parent, set()).add(file.name)
    return [folder for folder, present in names.items() if len(present) == 2]


def parse_run_name(name: str) -> tuple[str, dict[str, str]]:
    """``"mmlu:subject=philosophy,model=openai_gpt2"`` -> ``("mmlu", {"subject": "philosophy", "model": ...})``."""
    scenario, _, rest = name.partition(":")
    args = {}
    for part in rest.split(","):
        key, sep, value = part.partition("=")
        if sep and key.strip():
            args[key.strip()] = value.strip()
    return scenario.strip(), args


@dataclass(eq=False)
class HelmRun:
    """One HELM run folder, read and checked."""

    folder: Path
    name: str
    scenario: str
    domain: str
    model: str
    metrics: list[str]
    instances: list[dict[str, Any]]
    requests: list[dict[str, Any]]
    stamp: float


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _read(folder: Path, name: str) -> Any:
    path = folder / name
    if not path.is_file():
        raise JaggedInputError(f"{folder.name}: HELM run folder without {name}")
    return read_json_text(path)


def read_run(folder: Path, *, model_name: str | None = None) -> HelmRun:
    """Read one run folder; a missing file or field is an error naming the folder, the file and the field."""
    spec = _read(folder, RUN_SPEC)
    where = f"{folder.name}/{RUN_SPEC}"
    if not isinstance(spec, dict) or not isinstance(spec.get("adapter_spec"), dict):
        raise JaggedInputError(f"{where}: no field 'adapter_spec'")
    name = spec.get("name")
    if not isinstance(name, str) or not name.strip():
        raise JaggedInputError(f"{where}: field 'name' is {str(name)[:40]!r}, not a run name")
    model = model_name or spec["adapter_spec"].get("model")
    if not isinstance(model, str) or not model.strip():
        raise JaggedInputError(f"{where}: field 'adapter_spec.model' is {str(model)[:40]!r}, not a model; pass "
                               "--model-name")
    scenario, args = parse_run_name(name)
    own = {k: v for k, v in args.items() if k not in ADAPTER_ARGS}
    domain = (next(iter(own.values())) if len(own) == 1 else ",".join(f"{k}={v}" for k, v in own.items())) or scenario
    metrics = [str(n) for m in _list(spec.get("metric_specs")) for n in _list(_dict(_dict(m).get("args")).get("names"))]
    instances = _read(folder, PER_INSTANCE)
    if not isinstance(instances, list) or not all(isinstance(i, dict) for i in instances):
        raise JaggedInputError(f"{folder.name}/{PER_INSTANCE}: not a list of instance objects")
    state_path = folder / SCENARIO_STATE
    state = read_json_text(state_path) if state_path.is_file() else {}
    requests = [r for r in _list(_dict(state).get("request_states")) if isinstance(r, dict)]
    times = [_dict(r.get("result")).get("request_datetime") for r in requests]
    times = [t for t in times if isinstance(t, (int, float)) and not isinstance(t, bool)]
    times = [t for t in times if math.isfinite(t)]
    stamp = float(max(times)) if times else (folder / RUN_SPEC).stat().st_mtime
    return HelmRun(folder=folder, name=name.strip(), scenario=scenario, domain=domain, model=model.strip(),
                   metrics=metrics, instances=instances, requests=requests, stamp=stamp)


def _stats_of(instance: dict[str, Any]) -> list[dict[str, Any]]:
    stats = instance.get("stats")
    return [s for s in stats if isinstance(s, dict) and isinstance(s.get("name"), dict)] if isinstance(stats, list) \
        else []


def _split_and_metric(run: HelmRun, metric: str | None) -> tuple[str, str]:
    """The split (test, else valid, ...) and the metric of a run's items."""
    names: dict[str, set[str]] = {}
    for instance in run.instances:
        for stat in _stats_of(instance):
            key = stat["name"]
            if not key.get("perturbation"):
                names.setdefault(str(key.get("split")), set()).add(str(key.get("name")))
    if not names:
        raise JaggedInputError(f"{run.folder.name}/{PER_INSTANCE}: no per-instance stats")
    split = next((s for s in SPLITS if s in names), sorted(names)[0])
    found = names[split]
    if metric:
        if metric not in found:
            raise JaggedInputError(f"{run.folder.name}/{PER_INSTANCE}: no metric {metric!r} on the {split} split; it "
                                   f"has {listing(sorted(found), 12)}")
        return split, metric
    for name in (DEFAULT_METRIC, *run.metrics):
        if name in found:
            return split, name
    raise JaggedInputError(f"{run.folder.name}/{PER_INSTANCE}: no {DEFAULT_METRIC} stat; choose a metric with "
                           f"--metric NAME ({listing(sorted(found), 12)})")


def _choices(run: HelmRun) -> dict[str, tuple[str | None, str | None]]:
    """Instance id to (letter answered, letter of the correct reference), for multiple-choice requests."""
    out: dict[str, tuple[str | None, str | None]] = {}
    for state in run.requests:
        instance = _dict(state.get("instance"))
        mapping = state.get("output_mapping")
        if instance.get("perturbation") or not isinstance(mapping, dict) or not mapping:
            continue
        references = instance.get("references") if isinstance(instance.get("references"), list) else []
        correct = [ref["output"].get("text") for ref in references if isinstance(ref, dict)
                   and isinstance(ref.get("output"), dict) and isinstance(ref.get("tags"), list)
                   and "correct" in ref["tags"]]
        key = next((str(letter) for letter, text in mapping.items() if correct and text == correct[0]), None)
        result = state.get("result") if isinstance(state.get("result"), dict) else {}
        completions = result.get("completions") if isinstance(result.get("completions"), list) else []
        answer = completions[0].get("text") if completions and isinstance(completions[0], dict) else None
        answer = answer.strip() if isinstance(answer, str) else None
        if answer not in mapping:  # an answer given as the option's text, else no option
            answer = next((letter for letter, text in mapping.items() if answer and text == answer), None)
        if key is not None:
            out.setdefault(str(instance.get("id")), (answer, key))
    return out


def _texts(run: HelmRun) -> dict[str, tuple[str | None, str | None]]:
    """Instance id to (input text, options as a JSON list for multiple-choice requests), bounded."""
    out: dict[str, tuple[str | None, str | None]] = {}
    for state in run.requests:
        instance = _dict(state.get("instance"))
        iid = str(instance.get("id"))
        if instance.get("perturbation") or iid in out:
            continue
        mapping = state.get("output_mapping")
        options = options_text([mapping[k] for k in sorted(mapping)]) if isinstance(mapping, dict) and mapping \
            else None
        out[iid] = (cap_text(_dict(instance.get("input")).get("text")), options)
    return out


def _run_rows(run: HelmRun, metric: str | None) -> tuple[list[tuple], str, str]:
    """(model, domain, item, correct, choice, key, text, options) of one run; its split and metric."""
    split, name = _split_and_metric(run, metric)
    values: dict[str, list[float]] = {}
    for instance in run.instances:
        if instance.get("perturbation"):
            continue
        iid = instance.get("instance_id")
        if iid is None or isinstance(iid, (dict, list, bool)):
            raise JaggedInputError(f"{run.folder.name}/{PER_INSTANCE}: an instance_id is {str(iid)[:30]!r}")
        for stat in _stats_of(instance):
            key = stat["name"]
            if key.get("name") == name and str(key.get("split")) == split and not key.get("perturbation"):
                mean = stat.get("mean")
                if isinstance(mean, bool) or not isinstance(mean, (int, float)) or not math.isfinite(mean) \
                        or not 0.0 <= mean <= 1.0:
                    raise JaggedInputError(f"{run.folder.name}/{PER_INSTANCE}: instance {iid!r}: {name} mean is "
                                           f"{str(mean)[:30]!r}, not a score in [0, 1]")
                values.setdefault(str(iid), []).append(float(mean))
    choices, texts = _choices(run), _texts(run)
    rows = [(run.model, run.domain, iid, sum(v) / len(v), *choices.get(iid, (None, None)),
             *texts.get(iid, (None, None))) for iid, v in values.items()]
    return rows, split, name


def read_runs(folders: list[Path], *, source: str, metric: str | None = None, model_name: str | None = None,
              **_: Any) -> ItemRead:
    """Read HELM run folders into an item-level table (loader options: :mod:`jagged.options`)."""
    runs = [read_run(folder, model_name=model_name) for folder in folders]
    winners, replaced = newest((((r.model, r.domain), r) for r in runs), rank=lambda r: (r.stamp, str(r.folder)))
    used = list(winners.values())
    several = len({r.domain for r in used}) > 1
    rows, used_how = [], {}
    for run in used:
        found, split, name = _run_rows(run, metric)
        if not found:
            raise JaggedInputError(f"{run.folder.name}/{PER_INSTANCE}: no instance has a {name} stat on the "
                                   f"{split} split")
        rows.extend((m, d, f"{d}:{i}" if several else i, *rest) for m, d, i, *rest in found)
        used_how[run.folder.name] = (split, name)
    items = pd.DataFrame(rows, columns=["model", "domain", "item", "correct", "choice", "key", "text", "options"])
    paths = {r.domain: (r.scenario, r.domain) if r.domain != r.scenario else (r.domain,) for r in used}
    categories = category_map(paths, list(dict.fromkeys(p[0] for p in paths.values())))
    items["category"] = mapped(items["domain"], categories)
    if items["key"].isna().all():
        items = items.drop(columns=["choice", "key"])
    items = items[[c for c in ("model", "domain", "item", "correct", "category", "choice", "key", "text", "options")
                   if c in items]]
    hows = sorted({f"{name} on the {split} split" for split, name in used_how.values()})
    details: dict[str, Any] = {
        "detected": f"{FORMAT} ({plural(len(used), 'run folder')})",
        "runs": [r.name for r in used],
        "metric": ", ".join(hows) + " (no perturbations; train trials averaged)",
        "models": sorted({r.model for r in used}),
        "leaves": list(dict.fromkeys(r.domain for r in used)),
    }
    if "key" in items.columns:
        details["multiple choice"] = (f"{int(items['key'].notna().sum()):,} items with the chosen option (choice) and "
                                      "the key, as letters")
    if replaced:
        details["superseded"] = [f"{r.old.folder.name} ({r.key[0]}, {r.key[1]}) superseded by {r.new.folder.name}"
                                 for r in replaced]
    return ItemRead(items=items, categories=categories, paths=[r.folder / PER_INSTANCE for r in used],
                    model_notes={}, details=details, format=FORMAT)


def _parse(head: Head) -> Parsed:
    """A run file stands for its run folder."""
    return Parsed(head.path.parent, READER, head.path.parent, head.root, head.kind)


def _read_found(found: list[Parsed], *, source: str, **options: Any) -> ItemRead:
    return read_runs(list(dict.fromkeys(p.content for p in found)), source=source, **options)


READER = Reader(name="HELM run", family="HELM runs", what="HELM runs", options=("metric", "model_name"),
                read=_read_found, recognises=is_run_file, parse=_parse)
