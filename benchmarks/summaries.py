"""One sentence under each rendered table, written from its numbers.

``SUMMARIES`` maps ``"<results file>/<table>"`` to a function of the :class:`results.Table`
that returns the sentence; ``benchmarks/render.py`` puts it between the title and the table,
and refuses a table that has none. Each function reads the rows: a re-measured table gets a
sentence that says what the new numbers say.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from bench_detection_stages import STAGES as DETECTION_STAGES
from results import Table, is_number, plain


def _column(table: Table, name: str) -> int:
    return table.columns.index(name)


def _range(ratios: Sequence[float], digits: int = 2) -> str:
    low, high = min(ratios), max(ratios)
    if round(low, digits) == round(high, digits):
        return f"{low:.{digits}f}x"
    return f"{low:.{digits}f}-{high:.{digits}f}x"


def _ratios(table: Table, numerator: str, denominator: str, rows=None) -> list[float]:
    i, j = _column(table, numerator), _column(table, denominator)
    return [
        row[i] / row[j]
        for row in (table.rows if rows is None else rows)
        if is_number(row[i]) and is_number(row[j]) and row[j]
    ]


def series(first: str, second: str, quantity: str) -> Callable[[Table], str]:
    """Two columns against the first one (a map side): their ratio, and where their order
    turns for good."""

    def sentence(table: Table) -> str:
        x, i, j = 0, _column(table, first), _column(table, second)
        rows = [r for r in table.rows if is_number(r[i]) and is_number(r[j])]
        text = (
            f"{first} needs {_range(_ratios(table, first, second, rows))} the {quantity} of "
            f"{second} over {table.columns[x]}s {rows[0][x]} to {rows[-1][x]}"
        )
        below = [r[i] < r[j] for r in rows]
        if all(below):
            return text + f", less at every {table.columns[x]}."
        if below[-1]:
            turn = next(k for k in range(len(rows)) if all(below[k:]))
            return text + f", and less from {table.columns[x]} {rows[turn][x]} on."
        return text + f", and more at {table.columns[x]} {rows[-1][x]}."

    return sentence


def against(reference: str, quantity: str, others: Sequence[str] | None = None):
    """Each other value column as a multiple of ``reference``'s value in the same row."""

    def sentence(table: Table) -> str:
        columns = others or [
            c for k, c in enumerate(table.columns) if table.kind_of(k) == "value" and c != reference
        ]
        parts = [
            f"{plain(c)} {_range(_ratios(table, c, reference))}"
            for c in columns
            if _ratios(table, c, reference)
        ]
        return f"Against {plain(reference)}'s {quantity} (per row): " + ", ".join(parts) + "."

    return sentence


def against_targets(
    reference: str, quantity: str, targets: dict[str, float]
) -> Callable[[Table], str]:
    """``against``, each value column of ``targets`` also said against its target (at most
    that multiple of ``reference``'s value, compared as the sentence shows it: to 2 decimals)
    on the rows where both columns have a value."""

    def sentence(table: Table) -> str:
        parts = []
        for k, column in enumerate(table.columns):
            if table.kind_of(k) != "value" or column not in targets:
                continue
            ratios = [round(r, 2) for r in _ratios(table, column, reference)]
            if ratios:
                met = sum(r <= targets[column] for r in ratios)
                parts.append(
                    f"{plain(column)} at most {targets[column]:.2f}x: {_verdict(met, len(ratios))}"
                )
        said = against(reference, quantity)(table)
        return said + (" Targets: " + "; ".join(parts) + "." if parts else "")

    return sentence


def _verdict(met: int, rows: int) -> str:
    if met == rows:
        return f"met on all {rows} rows" if rows > 1 else "met"
    return f"met on {met} of {rows} rows" if met else "not met"


def pairs(quantity: str, *compared: tuple[str, str]):
    """Column pairs (ours, the reference kernel) as multiples, row by row."""

    def sentence(table: Table) -> str:
        parts = []
        for ours, theirs in compared:
            ratios = _ratios(table, ours, theirs)
            parts.append(f"{ours} takes {_range(ratios)} the {quantity} of {theirs}")
        rows = len([r for r in table.rows if any(is_number(v) for v in r)])
        return f"Over its {rows} rows, " + "; ".join(parts) + "."

    return sentence


def rows_against(label: int, reference: str, columns: Sequence[str], ignore: Sequence[int] = ()):
    """Rows whose label ``label`` is not ``reference`` against the row that is and shares the
    other labels (but those in ``ignore``): each of ``columns`` as a multiple of its value."""

    def sentence(table: Table) -> str:
        def key(row):
            skipped = {label, *ignore}
            return tuple(v for k, v in enumerate(row[: table.labels]) if k not in skipped)

        base = {key(r): r for r in table.rows if r[label] == reference}
        parts = []
        for other in dict.fromkeys(r[label] for r in table.rows if r[label] != reference):
            # A row without its reference (no TensorFlow on a GPU image) is compared with none.
            matched = [
                (r, base[key(r)]) for r in table.rows if r[label] == other and key(r) in base
            ]
            if not matched:
                continue
            ranges = []
            for name in columns:
                c = _column(table, name)
                ratios = [r[c] / b[c] for r, b in matched if is_number(r[c]) and is_number(b[c])]
                if ratios:
                    ranges.append(f"{name} {_range(ratios)}")
            parts.append(f"{table.columns[label]} {other}: " + ", ".join(ranges))
        if not parts:
            return f"No row has a {table.columns[label]} {reference} row to be compared with."
        return (
            f"Against {table.columns[label]} {reference} (the same other settings): "
            + "; ".join(parts)
            + "."
        )

    return sentence


def ready_times(table: Table) -> str:
    """Each backend's time to a ready model (and to the first detection) as a multiple of
    TensorFlow's, model by model."""
    ready, first = _column(table, "ready (s)"), _column(table, "first detect (s)")
    base = {row[0]: row for row in table.rows if row[1] == "tensorflow"}
    parts = []
    for backend in dict.fromkeys(row[1] for row in table.rows if row[1] != "tensorflow"):
        cells = []
        for row in table.rows:
            reference = base.get(row[0])
            if row[1] != backend or reference is None:
                continue
            if not (is_number(row[ready]) and is_number(reference[ready])):
                continue
            cell = f"{row[0]} {row[ready] / reference[ready]:.2f}x"
            if is_number(row[first]) and is_number(reference[first]):
                cell += f" (first detect {row[first] / reference[first]:.2f}x)"
            cells.append(cell)
        if cells:
            parts.append(f"{backend}: " + ", ".join(cells))
    if not parts:
        return "No row has a TensorFlow row to be compared with."
    return "Time to a ready model against TensorFlow's: " + "; ".join(parts) + "."


def ratio_by_label(label: int, numerator: str, denominator: str, quantity: str):
    """``numerator / denominator`` per value of label column ``label`` (an implementation)."""

    def sentence(table: Table) -> str:
        parts = []
        for value in dict.fromkeys(r[label] for r in table.rows):
            rows = [r for r in table.rows if r[label] == value]
            ratios = _ratios(table, numerator, denominator, rows)
            if ratios:
                parts.append(f"{plain(str(value))} {_range(ratios, 1)}")
        return (
            f"{numerator} takes this multiple of {denominator}'s {quantity}: "
            + ", ".join(parts)
            + "."
        )

    return sentence


def fastest_implementation(table: Table) -> str:
    """Which implementation is fastest per shape, on each backend (the numeric rows)."""
    value_columns = [
        c for k, c in enumerate(table.columns) if table.kind_of(k) == "value" and c != "timm"
    ]
    parts = []
    for name in value_columns:
        c = _column(table, name)
        wins: dict[str, int] = {}
        shapes = dict.fromkeys(tuple(r[:2]) for r in table.rows)
        for shape in shapes:
            timed = [r for r in table.rows if tuple(r[:2]) == shape and is_number(r[c])]
            if timed:
                best = min(timed, key=lambda r: r[c])[2]
                wins[best] = wins.get(best, 0) + 1
        counted = ", ".join(f"{impl} {n}" for impl, n in sorted(wins.items(), key=lambda w: -w[1]))
        parts.append(f"{name} {counted}")
    return f"The fastest implementation, shapes won of {len(shapes)}: " + "; ".join(parts) + "."


def auto_over_sweep(table: Table) -> str:
    """``auto``'s worst cell per backend and batch, against the 1.1x target."""
    backend, batch, ratio, cells, worst = range(5)
    parts = [
        f"{r[backend]} (ratio {r[ratio]}) {r[worst]:.2f}x at batch {r[batch]}" for r in table.rows
    ]
    over = [r for r in table.rows if r[worst] > 1.1]
    verdict = (
        "every cell within 1.1x of the faster implementation"
        if not over
        else "over 1.1x: " + ", ".join(f"{r[backend]} at batch {r[batch]}" for r in over)
    )
    total = sum(r[cells] for r in table.rows)
    return f"`auto`'s worst cell over {total} cells: " + "; ".join(parts) + f"; {verdict}."


def memory_rows(table: Table) -> str:
    """The lambda layer's memory against MultiHeadAttention's at the same batch."""
    layer, batch, peak, note = range(4)
    lambda_row = next(r for r in table.rows if r[layer].startswith("LambdaLayer"))
    same = next(r for r in table.rows if r[batch] == lambda_row[batch] and r is not lambda_row)
    how = "" if same[note] == "measured" else f" ({same[note]} of the smaller batches)"
    return (
        f"At batch {lambda_row[batch]} the global lambda layer adds {lambda_row[peak]:,.0f} MiB, "
        f"MultiHeadAttention {same[peak]:,.0f} MiB{how}: "
        f"{same[peak] / lambda_row[peak]:.1f}x as much."
    )


def detection_training(table: Table) -> str:
    """The converted model's step against torchvision's in the same row (the same architecture,
    weights and batch); the rows without a torchvision cell are other models."""
    tv = _column(table, "torchvision")
    backends = [c for c in ("tensorflow", "jax", "torch") if c in table.columns]
    parts = []
    for row in (r for r in table.rows if is_number(r[tv])):
        ratios = [
            f"{name} {row[_column(table, name)] / row[tv]:.2f}x"
            for name in backends
            if is_number(row[_column(table, name)])
        ]
        parts.append(f"{row[0]} at {row[1]} px: " + ", ".join(ratios))
    if not parts:
        return "No torchvision column: no step is compared like for like."
    return (
        "Each backend's step against torchvision's own on the same batch (the same architecture "
        "and weights; the other rows are other models): " + "; ".join(parts) + "."
    )


def compiled_markers(table: Table) -> str:
    """Which XLA_FLAGS changed what XLA compiled (the marker counts against the first row's)."""
    base = table.rows[0]

    def names(rows) -> str:
        return ", ".join(row[0].split(":")[0] for row in rows)

    others = table.rows[1:]
    failed = [row for row in others if not all(is_number(cell) for cell in row[1:])]
    same = [row for row in others if row not in failed and row[1:] == base[1:]]
    changed = [row for row in others if row not in failed and row not in same]
    text = f"{base[0].split(':')[0]} compiles " + ", ".join(
        f"{value} {plain(name)}" for name, value in zip(table.columns[1:], base[1:], strict=True)
    )
    for rows, what in ((same, "the same programs"), (changed, "other counts (table)")):
        if rows:
            text += f"; {names(rows)}: {what}"
    if failed:
        text += f"; {names(failed)}: nothing compiled (note below)"
    return text + "."


def equality(table: Table) -> str:
    """Whether every route matched every detection, and the largest differences."""
    tv, ours, matched = (_column(table, c) for c in table.columns[2:5])
    box, score, mask = (_column(table, c) for c in table.columns[5:8])
    complete = all(r[tv] == r[ours] == r[matched] for r in table.rows)
    counts = sorted({r[tv] for r in table.rows})
    return (
        f"{'Every' if complete else 'Not every'} route matched "
        f"{'all' if complete else 'each of'} torchvision's "
        f"{' / '.join(f'{c:,}' for c in counts)} detections; over all routes the largest box "
        f"difference is {max(r[box] for r in table.rows):.4f} px, the largest score difference "
        f"{max(r[score] for r in table.rows):.6f} and at most "
        f"{max(r[mask] for r in table.rows):.4f}% of a mask's pixels differ."
    )


def detection_job(table: Table) -> str:
    box, mask = _column(table, "box AP"), _column(table, "mask AP")
    left_out, seconds = _column(table, "targets left out"), _column(table, "training s")
    parts = [
        f"on {r[0]} box AP {r[box]:.3f} and mask AP {r[mask]:.3f} (IoU .50:.95) after "
        f"{r[seconds]:,} s of training"
        + (f", {r[left_out]:,} target rows left out of the loss" if r[left_out] else "")
        for r in table.rows
    ]
    dropped = [r[0] for r in table.rows if r[left_out]]
    tail = (
        f" Only {' and '.join(dropped)} left targets out of the loss."
        if dropped
        else " No run left a target out of the loss."
    )
    return "The default run reaches " + "; ".join(parts) + "." + tail


def main_job(table: Table) -> str:
    parts = [
        f"on {r[0]} {r[1]} reaches {r[3]:.2f}% test top-1 after {r[4]:,} s of training"
        for r in table.rows
    ]
    return "Each run from a fresh process: " + "; ".join(parts) + "."


def torch_steps(target: float):
    """The Keras rows' step times as multiples of timm's; the compiled rows against ``target``
    (at most that multiple: 1.00 on the CPUs, 1.25, 0.8x timm's images/s, on a GPU)."""

    def sentence(table: Table) -> str:
        train, infer = _column(table, "train x timm"), _column(table, "inference x timm")
        parts = []
        for row in table.rows:
            if row[1] == "timm" or not (is_number(row[train]) and is_number(row[infer])):
                continue
            cells = [f"training {row[train]:.2f}x", f"inference {row[infer]:.2f}x"]
            if row[1].startswith("compiled"):
                cells = [
                    f"{cell} ({'met' if value <= target else 'not met'})"
                    for cell, value in zip(cells, (row[train], row[infer]), strict=True)
                ]
            parts.append(f"{row[0]} {row[1]}: " + ", ".join(cells))
        return (
            f"Step time as a multiple of timm's; target for the compiled steps at most "
            f"{target:.2f}x. " + "; ".join(parts) + "."
        )

    return sentence


def layer_ops(table: Table) -> str:
    """Each implementation's operators, and those that compute, as a multiple of timm's
    layer's (a table from before the computing columns: the operators alone)."""
    forward, both = _column(table, "forward ops"), _column(table, "forward+backward ops")
    computing = "forward ops that compute" in table.columns
    if computing:
        forward_c = _column(table, "forward ops that compute")
        both_c = _column(table, "forward+backward ops that compute")
    timm = next((row for row in table.rows if row[0].startswith("timm")), None)
    if timm is None:
        return "timm's layer was not measured."
    parts = []
    for row in table.rows:
        if row is timm:
            continue
        part = (
            f"{row[0]} {row[forward] / timm[forward]:.1f}x forward, "
            f"{row[both] / timm[both]:.1f}x with the backward pass"
        )
        if computing:
            part += (
                f" (computing: {row[forward_c] / timm[forward_c]:.1f}x, "
                f"{row[both_c] / timm[both_c]:.1f}x)"
            )
        parts.append(part)
    return "Operators against timm's LambdaLayer: " + "; ".join(parts) + "."


def batch_norm_kernels(table: Table) -> str:
    """PyTorch's batch norm kernels against Keras' formula, on the maps that take them by
    default and on the others."""
    ratio, default = _column(table, "kernels x formula"), _column(table, "taken by default")
    taken = [row[ratio] for row in table.rows if row[default] == "PyTorch's kernels"]
    kept = [row[ratio] for row in table.rows if row[default] != "PyTorch's kernels"]
    parts = []
    if taken:
        parts.append(f"{_range(taken)} on the maps that take the kernels by default")
    if kept:
        parts.append(f"{_range(kept)} on the smaller maps, which keep Keras' formula")
    return f"Time through PyTorch's kernels as a multiple of Keras' formula's: {'; '.join(parts)}."


def kernel_share(table: Table) -> str:
    """Each profiled step's kernel time as a share of its wall time under the profiler."""
    wall, kernels, kernel = (
        _column(table, c) for c in ("wall ms (profiled)", "kernels", "kernel ms")
    )
    parts = [
        f"{row[0]} {row[1]} {row[2]} {row[kernel] / row[wall]:.0%} ({row[kernels]:.0f} kernels)"
        for row in table.rows
        if is_number(row[wall]) and row[wall] > 0 and is_number(row[kernel])
    ]
    return "Kernel time as a share of the profiled step: " + "; ".join(parts) + "."


def operator_split(table: Table) -> str:
    """Each profiled step's own time split into the convolutions and the rest, the rest against
    the first row's of the same model and step (timm's, run first)."""
    model, system, step = (_column(table, c) for c in ("model", "steps", "step"))
    operators, convolutions = _column(table, "operators ms"), _column(table, "convolutions ms")
    first: dict[tuple[str, str], tuple[str, float]] = {}  # (model, step): (system, the rest)
    parts = []
    for row in table.rows:
        if not (is_number(row[operators]) and is_number(row[convolutions])):
            continue
        key, rest = (row[model], row[step]), row[operators] - row[convolutions]
        part = f"{row[model]} {row[system]} {row[step]}: convolutions "
        part += f"{row[convolutions]:.0f} ms, the rest {rest:.0f} ms"
        if key in first and first[key][1] > 0:
            part += f" ({rest / first[key][1]:.2f}x {first[key][0]}'s)"
        first.setdefault(key, (row[system], rest))
        parts.append(part)
    return "The operators' own time per profiled step: " + "; ".join(parts) + "."


def spans(what: str):
    """Each value column's smallest and largest value over the rows, as counted."""

    def sentence(table: Table) -> str:
        parts = []
        for k, column in enumerate(table.columns):
            values = [row[k] for row in table.rows if is_number(row[k])]
            if table.kind_of(k) != "value" or not values:
                continue
            low, high = min(values), max(values)
            span = f"{low:,}" if low == high else f"{low:,}-{high:,}"
            parts.append(f"{plain(column)} {span}")
        counted = ", ".join(parts) if parts else "none counted"
        return f"{what[:1].upper()}{what[1:]}: {counted}."

    return sentence


def same_counts(reference: str, what: str):
    """Whether each other column counted what ``reference`` counted on every row."""

    def sentence(table: Table) -> str:
        ref = _column(table, reference)
        counts = " / ".join(f"{row[ref]:,}" for row in table.rows if is_number(row[ref]))
        parts = []
        for k, column in enumerate(table.columns):
            if table.kind_of(k) != "value" or k == ref:
                continue
            differ = [
                f"{row[0]} {row[k]:,}"
                for row in table.rows
                if is_number(row[k]) and is_number(row[ref]) and row[k] != row[ref]
            ]
            said = f"differs ({', '.join(differ)})" if differ else "the same"
            parts.append(f"{plain(column)} {said}")
        return f"{plain(reference)} kept {counts} {what}; " + ", ".join(parts) + "."

    return sentence


def stages_against(reference: str, stages: Sequence[str], whole: str, stage_label: int = 1):
    """Each other column's time in each of ``stages``, summed over the rows' first label (the
    photos), as a multiple of ``reference``'s: the stages where it spends more, and its
    ``whole`` row's multiple."""

    def summed(table: Table, column: int, stage: str) -> float | None:
        cells = [r[column] for r in table.rows if r[stage_label] == stage]
        return sum(cells) if cells and all(is_number(c) for c in cells) else None

    def sentence(table: Table) -> str:
        ref = _column(table, reference)
        parts = []
        for k, column in enumerate(table.columns):
            if table.kind_of(k) != "value" or k == ref:
                continue
            ratios = {}
            for stage in (*stages, whole):
                ours, theirs = summed(table, k, stage), summed(table, ref, stage)
                if ours is not None and theirs:
                    ratios[stage] = ours / theirs
            more = [f"{s} {ratios[s]:.2f}x" for s in stages if ratios.get(s, 0) > 1.0]
            said = f"{plain(column)} more in {', '.join(more) if more else 'no stage'}"
            if whole in ratios:
                said += f" ({whole} {ratios[whole]:.2f}x)"
            parts.append(said)
        lead = f"Against {plain(reference)}'s time per stage, summed over the photos: "
        return lead + "; ".join(parts) + "."

    return sentence


# Issue #58's targets for `detect` against torchvision's time per photo, on every CPU kind.
DETECT_TARGETS = {"tensorflow": 0.8, "jax": 1.0, "torch": 1.0}
detect_times = against_targets("torchvision", "time per photo", DETECT_TARGETS)

SUMMARIES: dict[str, Callable[[Table], str]] = {
    "layer_scaling/scaling_time": series("LambdaLayer global", "MultiHeadAttention", "time"),
    "layer_scaling/scaling_memory": series("LambdaLayer global", "MultiHeadAttention", "memory"),
    "layers/versus_timm": against("timm", "time"),
    "layers/layers": fastest_implementation,
    "layers/memory": memory_rows,
    "layers_sweep/sweep_summary": auto_over_sweep,
    "layers_sweep_jax_large/sweep_summary": auto_over_sweep,
    "layers_onednn/layers": ratio_by_label(
        2, "tensorflow_onednn_off", "tensorflow_onednn_on", "time"
    ),
    "train/train": rows_against(0, "tensorflow", ["train img/s", "inference img/s"], ignore=[3]),
    "detection/inference": detect_times,
    "detection_intel_xeon/inference": detect_times,
    "detection_intel_xeon/detections": same_counts("torchvision", "detections per photo"),
    "detection_intel_xeon_xla_emitter/inference": detect_times,
    "detection_intel_xeon_jax/inference": detect_times,
    "detection_intel_xeon_jax/page_faults": spans("minor page faults of one call per photo"),
    "detection_intel_xeon_xla_emitter/page_faults": spans(
        "minor page faults of one call per photo"
    ),
    "detection_ops_intel_xeon/ops": pairs(
        "time", ("tensorflow", "tf.image"), ("torch", "torchvision"), ("jax", "torchvision")
    ),
    "detection_ops_intel_xeon_xla_emitter/ops": pairs("time", ("jax", "torchvision")),
    "detection_stages_intel_xeon/stages": stages_against(
        "torchvision", DETECTION_STAGES, "whole call"
    ),
    "detection/training": detection_training,
    "detection/detections": same_counts("torchvision", "detections per photo"),
    "detection_host_paste/inference": against("torchvision", "time per photo"),
    "detection_repeat/inference": against("torchvision", "time per photo"),
    "detection_page_faults/inference": against("torchvision", "time per photo"),
    "detection_page_faults/page_faults": spans("minor page faults of one call per photo"),
    "detection_glibc_heap/inference": against("torchvision", "time per photo"),
    "detection_glibc_heap/page_faults": spans("minor page faults of one call per photo"),
    "detection_detect_heap/inference": against("torchvision", "time per photo"),
    "detection_detect_heap/page_faults": spans("minor page faults of one call per photo"),
    "detection_detect_heap_repeat/inference": against("torchvision", "time per photo"),
    "detection_detect_heap_repeat/page_faults": spans("minor page faults of one call per photo"),
    "detection_stages/stages": stages_against("torchvision", DETECTION_STAGES, "whole call"),
    "detection_ops/ops": pairs("time", ("tensorflow", "tf.image"), ("torch", "torchvision")),
    "build/build": ready_times,
    "backbones/backbones": rows_against(0, "resnet_rs101", ["step (s)", "peak memory (GB)"]),
    "backbones_onednn/backbones": rows_against(1, "on", ["step (s)", "peak memory (GB)"]),
    "timm_ports/timm_ports": against("timm (PyTorch)", "images/s"),
    "detection_equality/equality": equality,
    "xla_flags/steps": against("tensorflow", "time"),
    "xla_flags/compiled": compiled_markers,
    "xla_flags_intel_xeon/steps": against("tensorflow", "time"),
    "xla_flags_intel_xeon/compiled": compiled_markers,
    "detection_job/detection_job": detection_job,
    "main_job/main_job": main_job,
    "torch_steps_64/torch_steps": torch_steps(1.0),
    "torch_steps_64_repeat/torch_steps": torch_steps(1.0),
    "torch_steps_64_before_batch_norm/torch_steps": torch_steps(1.0),
    "torch_steps_224/torch_steps": torch_steps(1.0),
    "torch_steps_224_before_batch_norm/torch_steps": torch_steps(1.0),
    "torch_steps_224_profile/torch_steps": torch_steps(1.0),
    "torch_steps_224_profile/kernels": operator_split,
    "torch_steps_224_heap/torch_steps": torch_steps(1.0),
    "torch_steps_64_avx2/torch_steps": torch_steps(1.0),
    "torch_steps_224_avx2/torch_steps": torch_steps(1.0),
    "torch_steps_224_b16_avx2/torch_steps": torch_steps(1.0),
    "torch_steps_h100/torch_steps": torch_steps(1.25),
    "torch_steps_h100_cudagraphs/torch_steps": torch_steps(1.25),
    "torch_steps_h100_cudagraphs/kernels": kernel_share,
    "torch_steps_h200/torch_steps": torch_steps(1.25),
    "torch_steps_h200/kernels": kernel_share,
    "layer_ops/ops": layer_ops,
    "batch_norm/batch_norm": batch_norm_kernels,
    "batch_norm_eager/batch_norm_eager": batch_norm_kernels,
    "detection_h100/inference": against("torchvision", "time per photo"),
    "detection_h100_eager/inference": against("torchvision", "time per photo"),
}


def sentence(name: str, table: Table) -> str:
    """The sentence for ``name`` (``"<file>/<table>"``); an error if it has none."""
    if name not in SUMMARIES:
        raise SystemExit(f"benchmarks/summaries.py has no sentence for {name}: add one")
    return SUMMARIES[name](table)
