"""The influence map of a local and a global lambda layer, for docs/images/influence_maps.png.

How much each input position moves the output at the centre of a 21 x 21 map (the magnitude of
the gradient, summed over channels) for a position-only lambda layer (``content=False``): the
local layer's influence ends at its 7 x 7 scope, the global layer's covers the map. Runs on the
TensorFlow backend (the gradient is TensorFlow's).

    python pictures/influence_maps.py [--output=docs/images/influence_maps.png]
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

os.environ["KERAS_BACKEND"] = "tensorflow"
ROOT = Path(__file__).resolve().parents[1]
SIDE = 21


def influence(scope_size: int | None, seed: int = 1) -> np.ndarray:
    """``[SIDE, SIDE]``: |d centre output / d input| summed over channels."""
    import keras
    import tensorflow as tf

    from lambda_keras.layers import LambdaLayer

    keras.utils.set_random_seed(seed)
    layer = LambdaLayer(dim_out=32, key_dim=8, num_heads=4, scope_size=scope_size, content=False)
    x = tf.constant(np.random.default_rng(seed).normal(size=(1, SIDE, SIDE, 32)), "float32")
    with tf.GradientTape() as tape:
        tape.watch(x)
        centre = tf.reduce_sum(layer(x, training=False)[0, SIDE // 2, SIDE // 2])
    return tf.reduce_sum(tf.abs(tape.gradient(centre, x)), axis=-1)[0].numpy()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=str(ROOT / "docs" / "images" / "influence_maps.png"))
    args = parser.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(8, 4))
    for axis, (title, scope) in zip(
        axes, [("local scope 7 x 7", 7), ("global", None)], strict=True
    ):
        axis.imshow(influence(scope), cmap="magma")
        axis.set_title(f"influence on the centre output:\n{title}", fontsize=10)
        axis.axis("off")
    figure.tight_layout()
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(args.output, dpi=80)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
