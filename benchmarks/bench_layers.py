"""Micro-benchmark of the lambda layer: time and memory per position-lambda implementation.

Prints, for the paper's c4/c5 shapes at 224px (14x14 x 256 and 7x7 x 512 maps, batch 32,
|k|=16, |h|=4, scope 23, 7 and global), the forward and forward+backward time (ms, median of
``--repeats`` runs of a ``tf.function`` without XLA, training mode) and the peak resident
memory one step adds (MiB, each measured in a fresh process: works on every CPU) of every
implementation, of ``auto`` and,
when ``timm`` is installed, of timm's PyTorch ``LambdaLayer`` with the same configuration,
side by side. Then the peak memory of a global lambda layer at 64x64 next to
``keras.layers.MultiHeadAttention`` (8 heads) on the same input.

    python benchmarks/bench_layers.py                 # everything (several minutes)
    python benchmarks/bench_layers.py --quick         # batch 8, fewer repeats
    python benchmarks/bench_layers.py --sweep         # einsum vs conv over map/scope sizes
    python benchmarks/bench_layers.py --sweep --backend=jax   # the same on JAX (or torch)

With ``--backend`` the sweep runs each cell in a fresh process on that Keras backend
(:func:`lambda_keras.profiling.measure_layer_call`: compiled once, then one timed run) — how
``implementation="auto"``'s per-backend ratios were checked.

timm is optional (``pip install torch==2.14.1 torchvision==0.29.1 timm``).
"""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# timm is optional. PyTorch must be imported before TensorFlow: the other order segfaults in
# one process (seen with torch 2.14.1 and tensorflow-cpu 2.21.0).
if "--no-timm" not in sys.argv and "--sweep" not in sys.argv:
    try:
        import torch
        from timm.layers.lambda_layer import LambdaLayer as TimmLambdaLayer
    except ImportError:
        torch = TimmLambdaLayer = None
else:
    torch = TimmLambdaLayer = None

import keras
import numpy as np
import tensorflow as tf
from arguments import positive_int
from timing import median_seconds

from lambda_keras.layers import LambdaLayer
from lambda_keras.profiling import measure_layer_call

SHAPES = {"c4": (14, 256), "c5": (7, 512)}  # map side, channels at 224px
SCOPES = [23, 7, None]
IMPLEMENTATIONS = ["einsum", "conv", "depthwise", "auto"]


def median_ms(fn, repeats: int) -> float:
    return median_seconds(fn, repeats) * 1e3


def peak_mib(layer: keras.layers.Layer, shape, **options) -> float:
    """Peak resident memory (MiB) one call of ``layer`` adds, measured in a fresh process
    (:func:`lambda_keras.profiling.measure_layer_call`: any CPU, any backend)."""
    config = keras.saving.serialize_keras_object(layer)
    return measure_layer_call(config, tuple(shape), **options).peak_mib


def keras_steps(layer: keras.layers.Layer, x: np.ndarray):
    """(forward, forward+backward) callables of a built layer on input ``x``."""
    x = tf.constant(x)

    @tf.function(jit_compile=False)
    def forward():
        return layer(x, training=True)

    @tf.function(jit_compile=False)
    def forward_backward():
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(tf.cast(layer(x, training=True), "float32") ** 2)
        return tape.gradient(loss, [x, *layer.trainable_variables])

    def run_forward():
        forward().numpy()

    def run_forward_backward():
        for g in forward_backward():
            tf.convert_to_tensor(g).numpy()

    return run_forward, run_forward_backward


def timm_steps(side, channels, scope, batch):
    """(forward, forward+backward) callables of timm's LambdaLayer, or None without timm."""
    if TimmLambdaLayer is None:
        return None
    torch.set_num_threads(2)
    layer = TimmLambdaLayer(
        channels,
        channels,
        feat_size=(side, side) if scope is None else None,
        num_heads=4,
        dim_head=16,
        r=scope,
    ).train()
    x = torch.randn(batch, channels, side, side, requires_grad=True)

    def forward():
        with torch.no_grad():
            layer(x)

    def forward_backward():
        layer.zero_grad()
        x.grad = None
        (layer(x) ** 2).sum().backward()

    return forward, forward_backward


def fmt(value, width=9, digits=1):
    return f"{value:>{width}.{digits}f}" if isinstance(value, float) else f"{value:>{width}}"


def layer_table(batch: int, repeats: int, use_timm: bool, memory: bool):
    print(
        f"\n## Lambda layer, batch {batch}, |k|=16, |h|=4 (ms: median of {repeats}; "
        "MiB: peak resident memory the call adds, in a fresh process)"
    )
    print(
        "| stage | map | d | scope | implementation | fwd ms | fwd+bwd ms | fwd MiB | fwd+bwd MiB |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    for stage, (side, channels) in SHAPES.items():
        x = rng.normal(size=(batch, side, side, channels)).astype("float32")
        for scope in SCOPES:
            scope_name = "global" if scope is None else f"{scope}x{scope}"
            rows = {}
            for impl in IMPLEMENTATIONS:
                keras.utils.set_random_seed(0)
                layer = LambdaLayer(channels, scope_size=scope, implementation=impl)
                layer.build(x.shape)
                name = (
                    impl
                    if impl != "auto"
                    else f"auto ({layer.resolve_implementation((side, side))})"
                )
                fwd, fwd_bwd = keras_steps(layer, x)
                rows[name] = (
                    median_ms(fwd, repeats),
                    median_ms(fwd_bwd, repeats),
                    peak_mib(layer, x.shape, training=True) if memory else "-",
                    peak_mib(layer, x.shape, training=True, backward=True) if memory else "-",
                )
            if use_timm:
                steps = timm_steps(side, channels, scope, batch)
                if steps is not None:
                    rows["timm (PyTorch)"] = (
                        median_ms(steps[0], repeats),
                        median_ms(steps[1], repeats),
                        "n/a",
                        "n/a",
                    )
            for name, (f, fb, mf, mfb) in rows.items():
                print(
                    f"| {stage} | {side}x{side} | {channels} | {scope_name} | {name} |"
                    f"{fmt(f)} |{fmt(fb)} |{fmt(mf, 8, 0)} |{fmt(mfb, 8, 0)} |"
                )
            auto = next(v for k, v in rows.items() if k.startswith("auto"))
            if "timm (PyTorch)" in rows:
                ratio = auto[1] / rows["timm (PyTorch)"][1]
                print(f"|  |  |  |  | auto / timm, fwd+bwd | | {ratio:.2f}x | | |")
            sys.stdout.flush()


def memory_table(side: int, batch: int, channels: int):
    print(f"\n## Memory: global lambda layer vs MultiHeadAttention, {side}x{side}x{channels}")
    print("| layer | batch | forward peak MiB | note |")
    print("|---|---|---|---|")
    layer = LambdaLayer(channels, scope_size=None, implementation="einsum")
    lam = peak_mib(layer, (batch, side, side, channels))
    print(f"| LambdaLayer global (einsum) | {batch} | {lam:.0f} | measured |")
    # The attention maps alone are batch * 8 * n^2 floats: too large to run at batch 32 on a
    # 24 GB host, so MHA is measured at batch 1 and 2 and extrapolated linearly.
    mha = keras.layers.MultiHeadAttention(num_heads=8, key_dim=channels // 8, attention_axes=(1, 2))
    peaks = {}
    for b in (1, 2):
        peaks[b] = peak_mib(mha, (b, side, side, channels), inputs=2)
        print(f"| MultiHeadAttention (8 heads) | {b} | {peaks[b]:.0f} | measured |")
    slope = peaks[2] - peaks[1]
    mha_full = peaks[1] + slope * (batch - 1)
    print(f"| MultiHeadAttention (8 heads) | {batch} | {mha_full:.0f} | linear extrapolation |")
    print(f"\nLambdaLayer / MultiHeadAttention at batch {batch}: 1/{mha_full / lam:.0f}")


def sweep_cell_ms(x: np.ndarray, scope: int, impl: str, repeats: int, backend: str | None):
    """fwd+bwd ms of one sweep cell: in this process (TensorFlow, median of ``repeats``) or,
    with ``backend``, one run in a fresh process on that Keras backend."""
    layer = LambdaLayer(256, scope_size=scope, implementation=impl)
    if backend is None:
        layer.build(x.shape)
        return median_ms(keras_steps(layer, x)[1], repeats)
    config = keras.saving.serialize_keras_object(layer)
    measured = measure_layer_call(
        config, x.shape, training=True, backward=True, backend=backend, timeout=1800
    )
    return measured.seconds * 1e3


def sweep(batch: int, repeats: int, backend: str | None = None):
    where = "TensorFlow in process" if backend is None else f"{backend}, one run per process"
    print(f"\n## einsum vs conv vs depthwise, fwd+bwd ms, batch {batch}, d=256 ({where})")
    print("| map | n | scope | window | einsum | conv | depthwise | fastest |")
    print("|---|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    for side in (7, 10, 14, 20, 28):
        x = rng.normal(size=(batch, side, side, 256)).astype("float32")
        for scope in (3, 7, 15, 23):
            times = {}
            for impl in ("einsum", "conv", "depthwise"):
                times[impl] = sweep_cell_ms(x, scope, impl, repeats, backend)
            window = min(scope, 2 * side - 1) ** 2
            best = min(times, key=times.get)
            print(
                f"| {side}x{side} | {side * side} | {scope} | {window} | "
                + " | ".join(f"{times[i]:.1f}" for i in ("einsum", "conv", "depthwise"))
                + f" | {best} |"
            )
            sys.stdout.flush()


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--batch", type=positive_int, default=32)
    parser.add_argument("--repeats", type=positive_int, default=5)
    parser.add_argument("--quick", action="store_true", help="batch 8, 3 repeats")
    parser.add_argument("--no-timm", action="store_true", help="skip the timm comparison")
    parser.add_argument("--sweep", action="store_true", help="only the einsum/conv sweep")
    parser.add_argument(
        "--skip-memory", action="store_true", help="time only: no memory column, no 64x64 table"
    )
    parser.add_argument(
        "--backend",
        choices=("tensorflow", "jax", "torch"),
        help="--sweep only: measure on this Keras backend, each cell in a fresh process",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.batch, args.repeats = 8, 3
    timm = "not installed" if TimmLambdaLayer is None else f"timm with torch {torch.__version__}"
    print(f"TensorFlow {tf.__version__}, Keras {keras.__version__}, {os.cpu_count()} CPUs; {timm}")
    if args.backend and not args.sweep:
        parser.error("--backend applies to --sweep only")
    if args.sweep:
        sweep(args.batch, args.repeats, args.backend)
        return
    layer_table(args.batch, args.repeats, not args.no_timm, not args.skip_memory)
    if not args.skip_memory:
        memory_table(64, args.batch, 256)


if __name__ == "__main__":
    main()
