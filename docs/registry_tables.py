"""The documentation's tables of models, weights and integrity rules, rendered from the
registries, as torchvision renders its model tables from its weights' metadata: the models
from ``lambda_keras.zoo.list_models()``, the weights (metrics, files, rules, sources) from
``registered_weights()``, the rules from ``lambda_keras.zoo.integrity.INTEGRITY_RULES``, the
paper's FLOPs from ``lambda_keras.zoo.paper_table``. Pages mark where each table goes::

    <!-- registry: models -->
    (written by this script)
    <!-- end registry -->

Parameter counts and default input sizes are measured by building each model (a minute), so
they are kept in ``docs/data/zoo_models.json``, which ``--measure`` rewrites (a slow test
re-measures them)::

    python docs/registry_tables.py             # rewrite the pages' tables
    python docs/registry_tables.py --check     # exit 1 if a page is not what the registry renders
    python docs/registry_tables.py --measure   # rebuild every model, rewrite the sizes file
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import lambda_keras.detection  # noqa: E402, F401  (registers torchvision's COCO weights)
from lambda_keras.zoo import paper_table  # noqa: E402
from lambda_keras.zoo.integrity import INTEGRITY_RULES  # noqa: E402
from lambda_keras.zoo.registry import list_models, model_info  # noqa: E402
from lambda_keras.zoo.weights import WeightsSpec, registered_weights  # noqa: E402

DOCS = Path(__file__).resolve().parent
SIZES = DOCS / "data" / "zoo_models.json"
BLOCK = re.compile(r"(<!-- registry: (\w+) -->\n)(.*?)(<!-- end registry -->)", re.S)


def measure() -> dict[str, dict[str, int]]:
    """Build every registered model with its defaults: ``{name: {"parameters": trainable
    parameters, "input_size": default image side}}``."""
    sizes = {}
    for name in list_models():
        model = model_info(name).builder()
        parameters = sum(int(w.numpy().size) for w in model.trainable_weights)
        sizes[name] = {"parameters": parameters, "input_size": int(model.input.shape[1])}
    return sizes


def _builder(name: str) -> str:
    return f"`zoo.{model_info(name).builder.__name__}`"


def _paper_flops(name: str) -> str:
    """The paper's FLOPs of the model as built by default, where the paper gives them."""
    rows = [r for r in paper_table.PAPER if r.model == name and not r.kwargs and r.flops_m]
    return "; ".join(f"{r.flops_m:.0f}M ({r.source})" for r in rows)


def _weights_names(name: str) -> str:
    specs = registered_weights(name).values()
    return ", ".join(
        f"[`{s.name}`](weights.md#{_anchor(s.name)})"
        + (f' (`weights="{s.aliases[0]}"`)' if s.aliases else "")
        for s in specs
    )


def _anchor(name: str) -> str:
    return "weights-" + name.replace(".", "-").replace("_", "-")


def models_table(sizes: dict[str, dict[str, int]]) -> str:
    """One row per registered model: builder, parameters, default input, the paper's FLOPs,
    its registered weights."""
    missing = sorted(set(list_models()) ^ set(sizes))
    if missing:
        raise ValueError(f"The sizes file and the registry differ in {missing}: re-measure.")
    lines = [
        "| model | builder | parameters | default input | FLOPs (paper) | pretrained weights |",
        "|---|---|---:|---:|---|---|",
    ]
    for name in list_models():
        size = sizes[name]
        lines.append(
            f"| `{name}` | {_builder(name)} | {size['parameters'] / 1e6:.2f}M | "
            f"{size['input_size']} | {_paper_flops(name)} | {_weights_names(name) or '—'} |"
        )
    return "\n".join(lines)


def _metrics(spec: WeightsSpec, keys: tuple[str, str]) -> str:
    values = [spec.metrics.get(key) for key in keys]
    if values[0] is None:
        return "—"
    return " / ".join(f"{v:.2f}" if v is not None else "—" for v in values)


def weights_table() -> str:
    """One row per registered weights file: what it fits, its metrics, where the file is and
    the rule that checks it (with the source of its digest or commit)."""
    lines = [
        "| weights | model | input | ImageNet top-1 / top-5 (%) | COCO box / mask AP | file "
        "| integrity (source) |",
        "|---|---|---:|---:|---:|---|---|",
    ]
    for name, spec in registered_weights().items():
        where = f"[{_short(spec)}]({spec.origin})"
        rule = f"[{INTEGRITY_RULES[spec.integrity].title}]({spec.source})"
        alias = f' (`weights="{spec.aliases[0]}"`)' if spec.aliases else ""
        lines.append(
            f'| <a id="{_anchor(name)}"></a>`{name}`{alias} | `{spec.architecture}` | '
            f"{spec.input_size} | {_metrics(spec, ('imagenet_top1', 'imagenet_top5'))} | "
            f"{_metrics(spec, ('coco_box_ap', 'coco_mask_ap'))} | {where} | {rule} |"
        )
    sources = sorted({s.metrics_source for s in registered_weights().values() if s.metrics_source})
    notes = "\n".join(f"- Metrics from <{source}>." for source in sources)
    return "\n".join(lines) + "\n\n" + notes


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
        "models": models_table(json.loads(SIZES.read_text())),
        "weights": weights_table(),
        "rules": rules_table(),
    }


def rendered(page: str, found: dict[str, str]) -> str:
    """``page`` with every marked block holding its table."""

    def fill(match):
        if match[2] not in found:
            raise SystemExit(f"unknown table {match[2]!r}: {sorted(found)}")
        return f"{match[1]}\n{found[match[2]]}\n\n{match[4]}"

    return BLOCK.sub(fill, page)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a page differs")
    parser.add_argument("--measure", action="store_true", help="rebuild every model first")
    args = parser.parse_args()
    if args.measure:
        SIZES.write_text(json.dumps(measure(), indent=1, sort_keys=True) + "\n")
    found, stale = tables(), []
    for path in sorted(DOCS.glob("*.md")):
        page = path.read_text()
        new = rendered(page, found)
        if new != page:
            stale.append(path.name)
            if not args.check:
                path.write_text(new)
    if args.check and stale:
        sys.exit(
            f"not what the registry renders: {', '.join(stale)} (python docs/registry_tables.py)"
        )
    print(f"{'stale' if args.check else 'rewrote'}: {', '.join(stale) or 'nothing'}")


if __name__ == "__main__":
    main()
