"""The documentation's tables of models, weights and integrity rules, rendered from the
registries, as torchvision renders its model tables from its weights' metadata: the models
from ``lambda_keras.zoo.list_models()``, the weights (metrics, files, rules, sources, terms)
from ``registered_weights()``, the rules from ``lambda_keras.zoo.integrity.INTEGRITY_RULES``,
the paper's FLOPs from ``lambda_keras.zoo.paper_table``, the keras-hub presets from
``lambda_keras.hub.list_presets()``, measured speeds from the benchmarks'
results files. Pages mark where each table goes::

    <!-- registry: models -->
    (written by this script)
    <!-- end registry -->

Parameter counts, default input sizes and FLOPs (``lambda_keras.zoo.count_flops``) are
measured by building each model (a minute), so they are kept in ``docs/data/zoo_models.json``,
which ``--measure`` rewrites (a slow test re-measures them)::

    python docs/registry_tables.py             # rewrite the pages' tables
    python docs/registry_tables.py --check     # exit 1 if a page is not what the registry renders
    python docs/registry_tables.py --measure   # rebuild every model, rewrite the sizes file
"""

from __future__ import annotations

import argparse
import json
import os
import re
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from marked_blocks import fill_blocks, rewrite_pages  # noqa: E402

import lambda_keras.detection  # noqa: E402, F401  (registers torchvision's COCO weights)
from lambda_keras.hub.presets import list_presets  # noqa: E402
from lambda_keras.zoo import count_flops, paper_table  # noqa: E402
from lambda_keras.zoo.integrity import INTEGRITY_RULES  # noqa: E402
from lambda_keras.zoo.registry import list_models, model_info  # noqa: E402
from lambda_keras.zoo.weights import WeightsSpec, registered_weights  # noqa: E402

DOCS = Path(__file__).resolve().parent
RESULTS = DOCS.parent / "benchmarks" / "results"
SIZES = DOCS / "data" / "zoo_models.json"
BLOCK = re.compile(r"(<!-- registry: (\w+) -->\n)(.*?)(<!-- end registry -->)", re.S)


def measure() -> dict[str, dict[str, int]]:
    """Build every registered model with its defaults: ``{name: {"parameters": trainable
    parameters, "input_size": default image side, "flops": FLOPs of one image}}``, and for
    a model whose ImageNet weights are evaluated at another side, ``"imagenet_flops"`` at that
    side."""
    sizes = {}
    for name in models():
        model = model_info(name).builder()
        parameters = sum(int(w.numpy().size) for w in model.trainable_weights)
        sizes[name] = {
            "parameters": parameters,
            "input_size": int(model.input.shape[1]),
            "flops": count_flops(model),
        }
        spec = _imagenet_weights(name)
        if spec is not None and spec.input_size != sizes[name]["input_size"]:
            side = spec.input_size  # where the weights' metrics were measured
            model = model_info(name).builder(input_shape=(side, side, 3))
            sizes[name]["imagenet_flops"] = count_flops(model)
    return sizes


def _natural(name: str) -> list:
    """Sort key that orders ``lambda_resnet26t`` before ``lambda_resnet101`` (numbers as
    numbers)."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def models() -> list[str]:
    """The registered models in natural order."""
    return sorted(list_models(), key=_natural)


def _builder(name: str) -> str:
    return f"`zoo.{model_info(name).builder.__name__}`"


def _paper_flops(name: str) -> str:
    """The paper's FLOPs of the model as built by default, where the paper gives them."""
    rows = [r for r in paper_table.PAPER if r.model == name and not r.kwargs and r.flops_m]
    return "; ".join(f"{r.flops_m:.0f}M ({r.source})" for r in rows)


def _weights_names(name: str) -> str:
    """The model's registered weights, linked, and its keras-hub preset (``lambda_keras.hub``)."""
    specs = registered_weights(name).values()
    names = ", ".join(f"[`{s.name}`](weights.md#{_anchor(s.name)})" for s in specs)
    preset = f"{name}_imagenet"
    if preset in list_presets():
        names += f"<br>keras-hub preset [`{preset}`](weights.md#in-keras-hub)"
    return names


def _anchor(name: str) -> str:
    return "weights-" + name.replace(".", "-").replace("_", "-")


def models_table(sizes: dict[str, dict[str, int]]) -> str:
    """One row per registered model: builder, parameters, default input, the paper's FLOPs,
    its registered weights."""
    _check_sizes(sizes)
    lines = [
        "| model | builder | parameters | default input | FLOPs (paper) | pretrained weights |",
        "|---|---|---:|---:|---|---|",
    ]
    for name in models():
        size = sizes[name]
        lines.append(
            f"| `{name}` | {_builder(name)} | {size['parameters'] / 1e6:.2f}M | "
            f"{size['input_size']} | {_paper_flops(name) or '—'} | "
            f"{_weights_names(name) or '—'} |"
        )
    return "\n".join(lines)


def _check_sizes(sizes: dict[str, dict[str, int]]) -> None:
    missing = sorted(set(list_models()) ^ set(sizes))
    if missing:
        raise ValueError(f"The sizes file and the registry differ in {missing}: re-measure.")


def _imagenet_weights(name: str) -> WeightsSpec | None:
    """The weights ``weights="imagenet"`` selects for ``name``, if any."""
    return next((s for s in registered_weights(name).values() if "imagenet" in s.aliases), None)


# Where the pick-a-model table's speeds come from: (results file, table, img/s column, the rows
# taken, what the file does not say). bench_timm_ports.py times the ports with TensorFlow in
# float32 (its docstring); its results file does not record the backend.
SPEED_SOURCES = (
    ("timm_ports.json", "timm_ports", "Keras `auto`", {}, "TensorFlow, float32"),
    (
        "train.json",
        "train",
        "inference img/s",
        {"backend": "tensorflow", "precision": "float32", "XLA": "off"},
        "",
    ),
)


def measured_speeds() -> tuple[dict[str, str], list[str]]:
    """Measured inference img/s per registry model, each cell with the letter of its source,
    and the sources (file, settings, machine) those letters name."""
    cells, notes = {}, []
    letters = "abcdefgh"[: len(SPEED_SOURCES)]
    for letter, (file, table, column, where, unsaid) in zip(letters, SPEED_SOURCES, strict=True):
        results = json.loads((RESULTS / file).read_text())
        found = results["tables"].get(table, {"columns": []})
        missing = sorted({column, "model", *where} - set(found["columns"]))
        if missing:
            raise ValueError(
                f"benchmarks/results/{file} has no table {table!r} with the columns {missing}: "
                "re-run its benchmark or change SPEED_SOURCES."
            )
        for row in found["rows"]:
            values = dict(zip(found["columns"], row, strict=True))
            if values["model"] in list_models() and all(values[k] == v for k, v in where.items()):
                cells.setdefault(values["model"], f"{_number(values[column], file)} ({letter})")
        taken = ", ".join([unsaid] * bool(unsaid) + [f"{k} {v}" for k, v in where.items()])
        cpu = results["cpu"]
        notes.append(
            f"({letter}) `benchmarks/results/{file}`: {found['title']}; {taken}; "
            f"{cpu['model']}, {cpu['cores']} cores, {results['date'][:10]}."
        )
    return cells, notes


def _number(value: object, file: str) -> str:
    if not isinstance(value, (int, float)):
        raise ValueError(f"benchmarks/results/{file}: a speed is not a number: {value!r}.")
    return f"{value:.1f}"


def picker_table(sizes: dict[str, dict[str, int]]) -> str:
    """Which model to pick: per registered model its ImageNet accuracy (of the weights
    ``weights="imagenet"`` loads), size, FLOPs at its default input, measured speed and the
    terms of its weights; pretrained models first, by top-1."""
    _check_sizes(sizes)
    speeds, notes = measured_speeds()
    specs = {name: _imagenet_weights(name) for name in models()}
    order = sorted(specs, key=lambda n: -specs[n].metrics["imagenet_top1"] if specs[n] else 0)
    lines = [
        "| model | top-1 / top-5 (%) | params | GFLOPs | input | img/s (CPU) | weights' terms |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for name in order:
        spec, size = specs[name], sizes[name]
        terms = f"[{spec.license}]({spec.license_source})" if spec and spec.license else "—"
        side = spec.input_size if spec else size["input_size"]
        flops = size.get("imagenet_flops", size["flops"]) if spec else size["flops"]
        lines.append(
            f"| `{name}` | {_metrics(spec, ('imagenet_top1', 'imagenet_top5')) if spec else '—'}"
            f" | {size['parameters'] / 1e6:.1f}M | {flops / 1e9:.1f} | {side} | "
            f"{speeds.get(name, '—')} | {terms} |"
        )
    return "\n".join(lines) + "\n\n" + "\n".join(f"- {note}" for note in notes)


def _metrics(spec: WeightsSpec, keys: tuple[str, str]) -> str:
    values = [spec.metrics.get(key) for key in keys]
    if values[0] is None:
        return "—"
    return " / ".join(f"{v:.2f}" if v is not None else "—" for v in values)


def _specs() -> list[WeightsSpec]:
    return sorted(registered_weights().values(), key=lambda s: _natural(s.name))


def weights_table() -> str:
    """One row per registered weights file: what it fits, its metrics and its terms."""
    lines = [
        "| weights | input | ImageNet top-1 / top-5 (%) | COCO box / mask AP | terms |",
        "|---|---:|---:|---:|---|",
    ]
    for spec in _specs():
        alias = f'<br>`weights="{spec.aliases[0]}"`' if spec.aliases else ""
        terms = f"[{spec.license}]({spec.license_source})" if spec.license else "—"
        lines.append(
            f'| <a id="{_anchor(spec.name)}"></a>`{spec.name}`{alias}<br>'
            f"for `{spec.architecture}` | {spec.input_size} | "
            f"{_metrics(spec, ('imagenet_top1', 'imagenet_top5'))} | "
            f"{_metrics(spec, ('coco_box_ap', 'coco_mask_ap'))} | {terms} |"
        )
    sources = sorted({s.metrics_source for s in registered_weights().values() if s.metrics_source})
    notes = "\n".join(f"- Metrics from <{source}>." for source in sources)
    return "\n".join(lines) + "\n\n" + notes


def files_table() -> str:
    """One row per registered weights file: where it is and the rule that checks it, linked to
    the page its digest or commit was read on (and what that page is, where the rule's title
    does not say it)."""
    lines = ["| weights | file | integrity (source) |", "|---|---|---|"]
    for spec in _specs():
        where = f"[{_short(spec)}]({spec.origin})"
        title = spec.source_title or INTEGRITY_RULES[spec.integrity].title
        lines.append(f"| `{spec.name}` | {where} | [{title}]({spec.source}) |")
    return "\n".join(lines)


def _short(spec: WeightsSpec) -> str:
    """A file's address in a few words: the Hub repository and revision, or the URL's file."""
    if spec.hub_repo is not None:
        return f"{spec.hub_repo} @ {spec.hub_revision[:7]}"
    return spec.url.rsplit("/", 1)[-1]


def rules_table() -> str:
    """What each integrity rule checks, refuses and trusts."""
    lines = ["| rule | checks | refuses | trusts |", "|---|---|---|---|"]
    for key, rule in INTEGRITY_RULES.items():
        lines.append(f"| `{key}` ({rule.title}) | {rule.checks} | {rule.refuses} | {rule.trusts} |")
    return "\n".join(lines)


def tables() -> dict[str, str]:
    """Each table by the name its marker gives (``<!-- registry: <name> -->``)."""
    return {
        "picker": picker_table(json.loads(SIZES.read_text())),
        "models": models_table(json.loads(SIZES.read_text())),
        "weights": weights_table(),
        "files": files_table(),
        "rules": rules_table(),
    }


def rendered(page: str, found: dict[str, str]) -> str:
    """``page`` with every marked block holding its table."""
    return fill_blocks(page, BLOCK, found, lambda table: f"\n{table}\n\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a page differs")
    parser.add_argument("--measure", action="store_true", help="rebuild every model first")
    args = parser.parse_args()
    if args.measure:
        SIZES.write_text(json.dumps(measure(), indent=1, sort_keys=True) + "\n")
    found = tables()
    rewrite_pages(lambda page: rendered(page, found), args.check, "python docs/registry_tables.py")


if __name__ == "__main__":
    main()
