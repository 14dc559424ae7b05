"""Micro-benchmark of the lambda layer on every Keras backend: each implementation of the position
lambdas, side by side, in one table.

For the paper's c4/c5 shapes at 224px (14x14 x 256 and 7x7 x 512 maps, batch 32, |k|=16,
|h|=4, scopes 23, 7 and global): the forward+backward time (ms, training mode, median of
``--repeats`` runs after one warm-up run) of ``einsum``, ``conv``, ``depthwise`` and ``auto``
(with what it chose) on each backend, and of timm's PyTorch ``LambdaLayer`` with the same
configuration when timm is installed. Every backend runs in its own child process, one after
the other (``profiling.layer_step``: a ``tf.function`` without XLA on
TensorFlow, ``jax.jit`` on JAX, eager PyTorch). Below the table, the targets: ``auto`` within
1.2x of the backend's fastest implementation at each shape, JAX's fastest against TensorFlow's.
A cell whose warm-up run takes longer than ``--max-seconds`` is that one run (marked ``*``).

    python benchmarks/bench_layers.py                         # every installed backend, timm
    python benchmarks/bench_layers.py --backends=tensorflow,jax --no-timm
    python benchmarks/bench_layers.py --quick                 # batch 8, 3 repeats
    python benchmarks/bench_layers.py --sweep --backends=jax  # where einsum/conv break even
    python benchmarks/bench_layers.py --backends=tensorflow,tensorflow_onednn_off
    python benchmarks/bench_layers.py --scaling=8,16,32,48,64  # time, memory vs map size

``--output=benchmarks/results/<name>.json`` also writes the tables (``benchmarks/results.py``).

``tensorflow`` is TensorFlow as ``import lambda_keras`` sets it up (oneDNN on unless
``TF_ENABLE_ONEDNN_OPTS`` is set); ``tensorflow_onednn_off`` and ``tensorflow_onednn_on`` set
``TF_ENABLE_ONEDNN_OPTS=0`` / ``1``: TensorFlow's own default turns oneDNN on only on CPUs with
AVX-512 (VNNI/BF16) or AMX, so the two compare both kinds of CPU on one machine.

``--sweep`` times einsum and conv (``--implementations``) over 7x7...28x28 maps and 3x3...23x23
scopes (d=256; ``--sweep-sides``, ``--sweep-scopes``) at each of ``--sweep-batches``: one table per
backend and batch with ``auto``'s choice and its time against the faster, a summary table (the
worst and mean over the cells, target 1.1x), and, for each ratio R, how far the rule "einsum when
the map holds at most R x as many positions as the scope window" lands from the faster: how
``lambda_keras.layers.implementation_choice.CPU_EINSUM_MAX_POSITIONS_PER_WINDOW`` was set.

    python benchmarks/bench_layers.py --sweep --sweep-batches=8,32 \\
        --output=benchmarks/results/layers_sweep.json

The implementations of one shape are timed in turn (one warm-up each, then ``--repeats`` rounds
of each once), so a change in the machine's load falls on all of them alike.

Then (unless ``--skip-memory``) the peak resident memory of a global lambda layer at 64x64 next
to ``keras.layers.MultiHeadAttention`` (8 heads) on the same input, on TensorFlow.

timm is optional (``pip install torch==2.14.1 torchvision==0.29.1 timm``); so are JAX
(``pip install -e ".[jax]"``) and PyTorch for Keras (``pip install torch``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time

from arguments import names, positive_int, sizes
from results import Table, add_output_argument, write

SHAPES = {"c4": (14, 256), "c5": (7, 512)}  # map side, channels at 224px
SCOPES = [23, 7, None]
IMPLEMENTATIONS = ("einsum", "conv", "depthwise")
SWEEP_SIDES = (7, 10, 14, 20, 28)
SWEEP_SCOPES = (3, 5, 7, 11, 15, 23)
SWEEP_RATIOS = (1, 1.5, 2, 4, 8, 16, 32, 64, 96, 128)
AUTO_TARGET = 1.1
# Keras backend and environment of each column: "tensorflow" as lambda_keras sets it up (oneDNN on
# unless TF_ENABLE_ONEDNN_OPTS is set), the two variants with oneDNN set explicitly.
BACKENDS = {
    "tensorflow": ("tensorflow", {}),
    "tensorflow_onednn_on": ("tensorflow", {"TF_ENABLE_ONEDNN_OPTS": "1"}),
    "tensorflow_onednn_off": ("tensorflow", {"TF_ENABLE_ONEDNN_OPTS": "0"}),
    "jax": ("jax", {}),
    "torch": ("torch", {}),
}
TIMM = "timm"
REQUIRED_MODULES = {"tensorflow": ("tensorflow",), "jax": ("jax",), "torch": ("torch",)}


def installed(keras_backend: str) -> bool:
    return all(importlib.util.find_spec(m) for m in REQUIRED_MODULES[keras_backend])


# ---------------------------------------------------------------------------------------------
# In a child process: time cells on one backend, one JSON line per cell.


def timed_in_turn(runs: dict, repeats: int, max_seconds: float) -> dict[str, tuple[float, bool]]:
    """``{name: (median ms, whether only the warm-up ran)}`` of the callables ``runs``: one
    warm-up run each, then ``repeats`` rounds that call each in turn, so that a change in the
    machine's load falls on every implementation of a shape alike. A callable whose warm-up run
    takes longer than ``max_seconds`` is that one run."""
    first = {}
    for name, run in runs.items():
        start = time.perf_counter()
        run()
        first[name] = time.perf_counter() - start
    timed = {name: [] for name in runs if first[name] <= max_seconds}
    for _ in range(repeats):
        for name, times in timed.items():
            start = time.perf_counter()
            runs[name]()
            times.append(time.perf_counter() - start)
    return {
        name: (statistics.median(timed[name]) * 1e3, False)
        if name in timed
        else (first[name] * 1e3, True)
        for name in runs
    }


def keras_run(cell: dict, batch: int):
    """(``run``, the fields of the cell's row) for one cell on this process's Keras backend."""
    import keras
    from profiling import layer_step

    from lambda_keras.backend import devices as _devices
    from lambda_keras.layers import LambdaLayer
    from lambda_keras.layers.implementation_choice import choose_implementation, cpu_ratio

    side, channels, scope = cell["side"], cell["channels"], cell["scope"]
    keras.utils.set_random_seed(0)
    layer = LambdaLayer(channels, scope_size=scope, implementation=cell["impl"])
    prepare, run = layer_step(
        keras.saving.serialize_keras_object(layer),
        (batch, side, side, channels),
        training=True,
        backward=True,
    )
    prepare()
    auto = choose_implementation(
        "auto", (side, side), scope_size=scope, intra_depth=1, masked=False, batch=batch
    )
    fields = {
        "resolved": layer.resolve_implementation((side, side), batch),
        "auto": auto,
        "ratio": None if _devices.has_accelerator() else cpu_ratio(batch),
        "cpu": _devices.cpu_kind(),
    }
    return run, fields


def timm_run(cell: dict, batch: int):
    """(``run``, the fields of the cell's row) for timm's ``LambdaLayer`` at one cell."""
    import torch
    from timm.layers.lambda_layer import LambdaLayer

    torch.set_num_threads(os.cpu_count())
    side, channels, scope = cell["side"], cell["channels"], cell["scope"]
    torch.manual_seed(0)
    layer = LambdaLayer(
        channels,
        channels,
        feat_size=(side, side) if scope is None else None,
        num_heads=4,
        dim_head=16,
        r=scope,
    ).train()
    x = torch.randn(batch, channels, side, side, requires_grad=True)

    def run():
        layer.zero_grad()
        x.grad = None
        (layer(x) ** 2).sum().backward()

    return run, {"resolved": None, "cpu": f"torch {torch.__version__}"}


def shape_groups(cells: list[dict]) -> list[list[dict]]:
    """Consecutive cells that differ only in ``impl``: one shape's implementations."""
    groups: list[list[dict]] = []
    for cell in cells:
        shape = {k: v for k, v in cell.items() if k != "impl"}
        if groups and {k: v for k, v in groups[-1][0].items() if k != "impl"} == shape:
            groups[-1].append(cell)
        else:
            groups.append([cell])
    return groups


def time_group(group: list[dict], prepare, batch: int, repeats: int, max_seconds: float):
    """The rows of one shape's cells, timed in turn; a cell that fails to build (e.g. out of
    memory) is a row with its error and does not end the others."""
    rows, runs = {}, {}
    for i, cell in enumerate(group):
        try:
            runs[i], fields = prepare(cell, batch)
            rows[i] = {**cell, **fields}
        except Exception as err:
            rows[i] = {**cell, "error": f"{type(err).__name__}: {str(err)[:300]}"}
    try:
        for i, (ms, one_run) in timed_in_turn(runs, repeats, max_seconds).items():
            rows[i].update(ms=ms, one_run=one_run)
    except Exception as err:
        for i in runs:
            rows[i] = {**group[i], "error": f"{type(err).__name__}: {str(err)[:300]}"}
    return [rows[i] for i in range(len(group))]


def child(kind: str, batch: int, repeats: int, max_seconds: float) -> None:
    if kind != TIMM:
        # Before Keras imports TensorFlow: what a user importing lambda_keras first gets (oneDNN
        # on unless TF_ENABLE_ONEDNN_OPTS says otherwise, lambda_keras/backend/onednn.py).
        import lambda_keras  # noqa: F401
    prepare = timm_run if kind == TIMM else keras_run
    for group in shape_groups(json.loads(sys.stdin.read())):
        for row in time_group(group, prepare, batch, repeats, max_seconds):
            print(json.dumps(row), flush=True)


# ---------------------------------------------------------------------------------------------
# In the parent: one child per backend, then the tables.


def run_child(column: str, cells: list[dict], args, batch: int | None = None) -> list[dict]:
    """Times ``cells`` in a fresh process for ``column`` (a backend or timm), at ``batch``
    (default ``--batch``)."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    if column != TIMM:
        keras_backend, extra = BACKENDS[column]
        env.update(extra, KERAS_BACKEND=keras_backend)
    command = [
        sys.executable,
        os.path.abspath(__file__),
        f"--child={column}",
        f"--batch={batch or args.batch}",
        f"--repeats={args.repeats}",
        f"--max-seconds={args.max_seconds}",
    ]
    print(f"timing {len(cells)} cells on {column} ...", file=sys.stderr, flush=True)
    done = subprocess.run(
        command, input=json.dumps(cells), capture_output=True, text=True, env=env, check=False
    )
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    for row in rows:
        if "error" in row:
            print(f"{column}, {row}: failed", file=sys.stderr, flush=True)
    rows = [row for row in rows if "error" not in row]
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        print(f"{column} failed after {len(rows)} cells: {last}", file=sys.stderr, flush=True)
    return rows


def fmt_ms(row: dict | None) -> str:
    if row is None:
        return "-"
    return f"{row['ms']:,.1f}{'*' if row['one_run'] else ''}"


def ms_cell(row: dict | None) -> float | str | None:
    """A number for the results file, or the marked text of a one-run cell."""
    if row is None:
        return None
    return fmt_ms(row) if row["one_run"] else row["ms"]


def scope_name(scope: int | None) -> str:
    return "global" if scope is None else f"{scope}x{scope}"


def layer_cells() -> list[dict]:
    return [
        {"stage": stage, "side": side, "channels": channels, "scope": scope, "impl": impl}
        for stage, (side, channels) in SHAPES.items()
        for scope in SCOPES
        for impl in (*IMPLEMENTATIONS, "auto")
    ]


def layer_table(args) -> list[Table]:
    cells = layer_cells()
    results = {column: run_child(column, cells, args) for column in args.backends}
    if args.timm:
        shapes = [cell for cell in cells if cell["impl"] == "auto"]
        results[TIMM] = run_child(TIMM, [{**c, "impl": TIMM} for c in shapes], args)
    table = {
        (r["stage"], r["scope"], r["impl"], column): r
        for column, rows in results.items()
        for r in rows
    }
    for column in args.backends:
        kinds = sorted({r["cpu"] for r in results[column]})
        print(f"- {column}: `auto` sees the CPU as {', '.join(kinds) or 'n/a (failed)'}")
    columns = [*args.backends, *([TIMM] if args.timm else [])]
    layers = Table(
        "layers",
        f"Lambda layer, forward+backward ms, batch {args.batch}, |k|=16, |h|=4, training mode "
        f"(median of {args.repeats}; * one run), {os.cpu_count()} CPU cores",
        ["stage", "scope", "implementation", *columns],
        digits=[0, 0, 0, *(1 for _ in columns)],
        labels=3,
    )
    layers.print_header()
    for stage, (side, channels) in SHAPES.items():
        for scope in SCOPES:
            where = (f"{stage} {side}x{side}x{channels}", scope_name(scope))
            for impl in IMPLEMENTATIONS:
                values = [ms_cell(table.get((stage, scope, impl, c))) for c in args.backends]
                layers.add(*where, impl, *values, *([None] if args.timm else []))
            autos = [table.get((stage, scope, "auto", c)) for c in args.backends]
            values = [fmt_ms(a) + (f" ({a['resolved']})" if a else "") for a in autos]
            if args.timm:
                values.append(fmt_ms(table.get((stage, scope, TIMM, TIMM))))
            layers.add(*where, "auto (timm: its `LambdaLayer`)", *values)
            ratios = []
            for column in args.backends:
                ratio, best = choice_ratio(table, stage, scope, column)
                ratios.append("-" if ratio is None else f"{ratio:.2f} ({best})")
            if args.timm:
                ratios.append(timm_ratio(table, stage, scope, args.backends))
            layers.add(*where, "auto's choice / fastest (timm: auto / timm)", *ratios)
    print_targets(table, args.backends)
    return [layers, *([versus_timm(table, args)] if args.timm else [])]


def versus_timm(table: dict, args) -> Table:
    """``auto`` on each backend beside timm's ``LambdaLayer``, shape by shape."""
    versus = Table(
        "versus_timm",
        f"The lambda layer (implementation='auto') on each backend and timm's LambdaLayer, "
        f"forward+backward ms, batch {args.batch}",
        ["shape", *args.backends, TIMM],
        digits=[0, *(1 for _ in args.backends), 1],
    )
    versus.print_header()
    for stage, (side, channels) in SHAPES.items():
        for scope in SCOPES:
            rows = [table.get((stage, scope, "auto", c)) for c in args.backends]
            rows.append(table.get((stage, scope, TIMM, TIMM)))
            shape = f"{stage} {side}x{side}x{channels}, scope {scope_name(scope)}"
            versus.add(shape, *[None if r is None else r["ms"] for r in rows])
    return versus


def fastest(table: dict, stage: str, scope, column: str) -> dict | None:
    rows = [table.get((stage, scope, impl, column)) for impl in IMPLEMENTATIONS]
    rows = [r for r in rows if r is not None]
    return min(rows, key=lambda r: r["ms"]) if rows else None


def choice_ratio(table: dict, stage: str, scope, column: str) -> tuple[float | None, str]:
    """(time of the implementation ``auto`` chose / time of the fastest, the fastest's name).
    ``auto`` runs the implementation it resolves to, so this compares the rule's choice; the
    auto row's own time is a second measurement of that choice (run-to-run noise shows there)."""
    auto, best = table.get((stage, scope, "auto", column)), fastest(table, stage, scope, column)
    chosen = auto and table.get((stage, scope, auto["resolved"], column))
    if not chosen or best is None:
        return None, "-"
    return chosen["ms"] / best["ms"], best["impl"]


def timm_ratio(table: dict, stage: str, scope, columns: list[str]) -> str:
    """Each backend's ``auto`` against timm's layer at one shape."""
    timm = table.get((stage, scope, TIMM, TIMM))
    autos = [(c, table.get((stage, scope, "auto", c))) for c in columns]
    if timm is None:
        return "-"
    return ", ".join(f"{c} {a['ms'] / timm['ms']:.2f}" for c, a in autos if a)


def print_targets(table: dict, columns: list[str]) -> None:
    print(f"\nTargets: `auto`'s choice within {AUTO_TARGET}x of the backend's fastest everywhere:")
    for column in columns:
        ratios = [
            choice_ratio(table, stage, scope, column)[0] for stage in SHAPES for scope in SCOPES
        ]
        ratios = [r for r in ratios if r is not None]
        if ratios:
            verdict = "met" if max(ratios) <= AUTO_TARGET else "NOT met"
            print(
                f"- {column}: worst choice / fastest {max(ratios):.2f} over {len(ratios)} "
                f"shapes: {verdict}"
            )
    tensorflow = [c for c in columns if BACKENDS[c][0] == "tensorflow"]
    if "jax" not in columns or not tensorflow:
        return
    print("JAX's fastest against TensorFlow's at c4 (target <= 1.00):")
    for column in tensorflow:
        for scope in SCOPES:
            jax, tf = fastest(table, "c4", scope, "jax"), fastest(table, "c4", scope, column)
            if jax and tf:
                print(
                    f"- c4 {scope_name(scope)}: JAX {jax['impl']} {jax['ms']:,.1f} ms, {column} "
                    f"{tf['impl']} {tf['ms']:,.1f} ms: {jax['ms'] / tf['ms']:.2f}x"
                )


def sweep(args) -> list[Table]:
    """einsum against conv (``--implementations``) over the swept maps and scopes, per backend and
    batch: one table each, ``auto``'s choice against the fastest, and a summary table."""
    cells = [
        {"stage": "sweep", "side": side, "channels": 256, "scope": scope, "impl": impl}
        for side in args.sweep_sides
        for scope in args.sweep_scopes
        for impl in args.implementations
    ]
    summary = Table(
        "sweep_summary",
        f"`auto` over the sweep (einsum against conv, d=256, forward+backward, "
        f"{os.cpu_count()} CPU cores): its choice / the faster per cell",
        ["backend", "batch", "ratio", "cells", "worst", "mean", "best ratio (worst)"],
        digits=[0, 0, 0, 0, 2, 2, 0],
        labels=2,
        plot="none",
    )
    tables, scores = [], []
    for column in args.backends:
        for batch in args.sweep_batches:
            rows = run_child(column, cells, args, batch)
            table = {(r["side"], r["scope"], r["impl"]): r for r in rows}
            tables.append(sweep_table(column, batch, table, args))
            losses = auto_losses(table, args)
            if losses:
                ratio = "/".join(sorted({str(r["ratio"]) for r in rows if r.get("ratio")}))
                worst, mean = max(losses), statistics.mean(losses)
                best = best_ratio(table, args)
                scores.append((column, batch, ratio or "-", len(losses), worst, mean, best))
    print()
    summary.print_header()
    for score in scores:
        summary.add(*score)
    print_sweep_target(summary)
    return [*tables, summary]


def sweep_table(column: str, batch: int, table: dict, args) -> Table:
    """One backend's sweep at one batch: each implementation, ``auto``'s choice and its time
    against the fastest."""
    impls = args.implementations
    out = Table(
        f"sweep_{column}_b{batch}",
        f"{column}: forward+backward ms, batch {batch}, d=256, |k|=16, |h|=4 (median of "
        f"{args.repeats}, the implementations timed in turn; * one run)",
        ["map", "n", "scope", "n / window", *impls, "auto", "auto / fastest"],
        digits=[0, 0, 0, 2, *(1 for _ in impls), 0, 2],
        labels=3,
        plot="none",
    )
    print()
    out.print_header()
    for side in args.sweep_sides:
        for scope in args.sweep_scopes:
            got = {i: table.get((side, scope, i)) for i in impls}
            done = {i: r for i, r in got.items() if r is not None}
            auto = next((r["auto"] for r in done.values()), None)
            loss = auto_loss(done, auto)
            out.add(
                f"{side}x{side}",
                side * side,
                scope,
                side * side / window(side, scope),
                *[ms_cell(got[i]) for i in impls],
                auto or "-",
                loss,
            )
    if {"einsum", "conv"} <= set(impls):
        print_ratio_rules(table, args)
    return out


def auto_loss(rows: dict, auto: str | None) -> float | None:
    """Time of ``auto``'s choice / the fastest's, None when either was not timed."""
    if auto not in rows or not rows:
        return None
    return rows[auto]["ms"] / min(r["ms"] for r in rows.values())


def auto_losses(table: dict, args) -> list[float]:
    losses = []
    for side in args.sweep_sides:
        for scope in args.sweep_scopes:
            rows = {
                i: table[(side, scope, i)]
                for i in args.implementations
                if (side, scope, i) in table
            }
            auto = next((r["auto"] for r in rows.values()), None)
            loss = auto_loss(rows, auto)
            if loss is not None:
                losses.append(loss)
    return losses


def window(side: int, scope: int) -> int:
    return min(scope, 2 * side - 1) ** 2


def ratio_losses(table: dict, args, ratio: int) -> list[float]:
    """The rule "einsum when n <= ratio * window, else conv" against the faster of the two at
    every swept cell."""
    losses = []
    for side in args.sweep_sides:
        for scope in args.sweep_scopes:
            einsum, conv = table.get((side, scope, "einsum")), table.get((side, scope, "conv"))
            if einsum is None or conv is None:
                continue
            chosen = einsum if side * side <= ratio * window(side, scope) else conv
            losses.append(chosen["ms"] / min(einsum["ms"], conv["ms"]))
    return losses


def best_ratio(table: dict, args) -> str:
    """The ratio of ``SWEEP_RATIOS`` whose rule has the smallest worst case, and that case."""
    scored = [(max(losses), r) for r in SWEEP_RATIOS if (losses := ratio_losses(table, args, r))]
    if not scored:
        return "-"
    worst, ratio = min(scored)
    return f"{ratio} ({worst:.2f})"


def print_ratio_rules(table: dict, args) -> None:
    """For each ratio R: how far the rule "einsum when n <= R * window" lands from the faster."""
    print("\n| ratio R | worst rule / fastest | mean rule / fastest |")
    print("|---|---|---|")
    for ratio in SWEEP_RATIOS:
        losses = ratio_losses(table, args, ratio)
        if losses:
            print(f"| {ratio} | {max(losses):.2f} | {statistics.mean(losses):.2f} |")


def print_sweep_target(summary: Table) -> None:
    print(f"\nTarget: `auto`'s choice within {AUTO_TARGET}x of the faster at every swept cell:")
    for backend, batch, _, cells, worst, *_ in summary.rows:
        verdict = "met" if worst <= AUTO_TARGET else "NOT met"
        print(f"- {backend}, batch {batch}: worst {worst:.2f} over {cells} cells: {verdict}")


def peak(layer, shape, **options):
    """``measure_layer_call`` of ``layer`` on TensorFlow, in a fresh process."""
    import keras
    from profiling import measure_layer_call

    config = keras.saving.serialize_keras_object(layer)
    return measure_layer_call(config, shape, backend="tensorflow", **options)


def memory_table(side: int, batch: int, channels: int) -> Table:
    import keras

    from lambda_keras.layers import LambdaLayer

    table = Table(
        "memory",
        f"Memory: global lambda layer vs MultiHeadAttention, {side}x{side}x{channels} (peak "
        "resident memory one forward pass adds, each in a fresh TensorFlow process)",
        ["layer", "batch", "forward peak MiB", "note"],
        digits=[0, 0, 0, 0],
        labels=2,
    )
    table.print_header()
    layer = LambdaLayer(channels, scope_size=None, implementation="einsum")
    lam = peak(layer, (batch, side, side, channels)).peak_mib
    table.add("LambdaLayer global (einsum)", batch, lam, "measured")
    # The attention maps alone are batch * 8 * n^2 floats: too large to run at batch 32 on a
    # 24 GB host, so MHA is measured at batch 1 and 2 and extrapolated linearly.
    mha = keras.layers.MultiHeadAttention(num_heads=8, key_dim=channels // 8, attention_axes=(1, 2))
    peaks = {}
    for b in (1, 2):
        peaks[b] = peak(mha, (b, side, side, channels), inputs=2).peak_mib
        table.add("MultiHeadAttention (8 heads)", b, peaks[b], "measured")
    mha_full = peaks[1] + (peaks[2] - peaks[1]) * (batch - 1)
    table.add("MultiHeadAttention (8 heads)", batch, mha_full, "linear extrapolation")
    table.note(f"LambdaLayer / MultiHeadAttention at batch {batch}: 1/{mha_full / lam:.0f}")
    return table


def scaling_tables(sides: list[int], channels: int = 256) -> list[Table]:
    """The paper's argument: time and memory of one forward pass against the map size, a global
    lambda layer beside MultiHeadAttention (8 heads), batch 1, each in a fresh process."""
    import keras

    from lambda_keras.layers import LambdaLayer

    names = ("LambdaLayer global", "MultiHeadAttention")
    common = f"batch 1, {channels} channels, each in a fresh TensorFlow process"
    time_table = Table(
        "scaling_time",
        f"One forward pass (ms) against the map side, {common}",
        ["map side", *names],
        digits=[0, 1, 1],
        plot="lines",
    )
    memory = Table(
        "scaling_memory",
        f"Peak resident memory one forward pass adds (MiB) against the map side, {common}",
        ["map side", *names],
        digits=[0, 0, 0],
        plot="lines",
    )
    time_table.print_header()
    rows = []
    for side in sides:
        shape = (1, side, side, channels)
        lam = peak(LambdaLayer(channels, scope_size=None, implementation="einsum"), shape)
        mha = keras.layers.MultiHeadAttention(
            num_heads=8, key_dim=channels // 8, attention_axes=(1, 2)
        )
        att = peak(mha, shape, inputs=2)
        time_table.add(side, 1000 * lam.seconds, 1000 * att.seconds)
        rows.append((side, lam.peak_mib, att.peak_mib))
    memory.print_header()
    for row in rows:
        memory.add(*row)
    return [time_table, memory]


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--batch", type=positive_int, default=32)
    parser.add_argument("--repeats", type=positive_int, default=5)
    parser.add_argument("--quick", action="store_true", help="batch 8, 3 repeats")
    parser.add_argument(
        "--backends",
        type=names(BACKENDS),
        help="comma-separated columns (default: tensorflow, jax, torch, those installed)",
    )
    parser.add_argument("--no-timm", action="store_true", help="skip timm's LambdaLayer")
    parser.add_argument("--sweep", action="store_true", help="only the einsum/conv sweep")
    parser.add_argument(
        "--sweep-batches",
        type=sizes(1),
        default=None,
        metavar="BATCHES",
        help="--sweep: the batches swept, e.g. 8,32 (default --batch)",
    )
    for name, values, what in (
        ("sides", SWEEP_SIDES, "map sides"),
        ("scopes", SWEEP_SCOPES, "odd scopes"),
    ):
        parser.add_argument(
            f"--sweep-{name}",
            type=sizes(1),
            default=list(values),
            metavar=name.upper(),
            help=f"--sweep: the {what} (default {','.join(map(str, values))})",
        )
    parser.add_argument(
        "--implementations",
        type=names(IMPLEMENTATIONS),
        default=["einsum", "conv"],
        help="--sweep: the implementations timed (default einsum,conv)",
    )
    parser.add_argument(
        "--max-seconds",
        type=positive_int,
        default=30,
        help="a cell whose warm-up run takes longer is that one run (default 30)",
    )
    parser.add_argument("--skip-memory", action="store_true", help="no 64x64 memory table")
    parser.add_argument(
        "--scaling",
        type=sizes(1),
        default=None,
        metavar="SIDES",
        help="only time and memory against the map side, e.g. 8,16,32,64 (LambdaLayer vs MHA)",
    )
    add_output_argument(parser)
    parser.add_argument("--child", choices=(*BACKENDS, TIMM), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.batch, args.repeats = 8, 3
    args.sweep_batches = args.sweep_batches or [args.batch]
    if any(scope % 2 == 0 for scope in args.sweep_scopes):
        parser.error(f"--sweep-scopes: scope sizes are odd; received {args.sweep_scopes}")
    if args.child:
        return args
    if args.backends is None:
        args.backends = [b for b in ("tensorflow", "jax", "torch") if installed(b)]
    missing = [b for b in args.backends if not installed(BACKENDS[b][0])]
    if missing:
        parser.error(f"--backends: {', '.join(missing)} not installed in this Python")
    args.timm = (
        not args.no_timm
        and not args.sweep
        and all(importlib.util.find_spec(m) for m in ("torch", "timm"))
    )
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.child:
        child(args.child, args.batch, args.repeats, args.max_seconds)
        return
    print(
        f"{os.cpu_count()} CPU cores; columns: {', '.join(args.backends)}"
        + ("; timm" if args.timm else "")
    )
    if args.sweep:
        tables = sweep(args)
        write(args.output, "bench_layers", tables, batch=args.sweep_batches, repeats=args.repeats)
        return
    if args.scaling:
        tables = scaling_tables(args.scaling)
    else:
        tables = layer_table(args)
        if not args.skip_memory:
            tables.append(memory_table(64, args.batch, 256))
    write(
        args.output,
        "bench_layers",
        tables,
        batch=1 if args.scaling else args.batch,
        repeats=args.repeats,
    )


if __name__ == "__main__":
    main()
