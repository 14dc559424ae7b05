"""The lambda layer in about a minute: ``python scripts/demo.py``.

Trains a small lambda network (a convolution stem, a local and a global lambda layer) on
scikit-learn's 1,797 real 8x8 handwritten digits (they ship inside the scikit-learn wheel, so
nothing is downloaded), reports the test accuracy, checks that the three implementations of the
position lambdas give the same outputs with the trained weights, and saves the model as a
``.keras`` file and a SavedModel.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import numpy as np

from lambda_keras.layers import BatchNormalization, LambdaLayer
from lambda_keras.training.classification.data import digits_split


def load_digits_split(seed: int = 0):
    """scikit-learn's digits as ``[n, 8, 8, 1]`` float32 in [0, 1]: 80% train, 20% test."""
    try:
        splits = [digits_split(split, seed) for split in ("train", "test")]
    except ImportError as err:
        raise SystemExit(
            "The demo uses scikit-learn's digits: pip install 'lambda-keras[demo]'"
        ) from err
    return tuple(((x / 16.0).astype("float32")[..., None], y) for x, y in splits)


# Batch-norm momentum 0.9: with ~460 training steps, Keras' default 0.99 leaves the moving
# statistics behind the weights and inference-mode accuracy drops (seen with plain convolutions
# too).
BN_MOMENTUM = 0.9


def build_model(implementation: str = "auto") -> keras.Model:
    """Conv stem, a 5x5-scope lambda layer and a global one, then the classifier."""
    inputs = keras.Input((8, 8, 1), name="digits")
    x = keras.layers.Conv2D(32, 3, padding="same", use_bias=False)(inputs)
    x = BatchNormalization(momentum=BN_MOMENTUM)(x)
    x = keras.layers.ReLU()(x)
    for scope in (5, None):
        x = LambdaLayer(
            64,
            key_dim=16,
            num_heads=4,
            scope_size=scope,
            batch_norm_momentum=BN_MOMENTUM,
            implementation=implementation,
        )(x)
        x = BatchNormalization(momentum=BN_MOMENTUM)(x)
        x = keras.layers.ReLU()(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    x = keras.layers.Dropout(0.3)(x)
    outputs = keras.layers.Dense(10, activation="softmax", name="probabilities")(x)
    return keras.Model(inputs, outputs, name="lambda_digits")


def main(argv=None) -> float:
    """Train the demo model on the digits from the command line; returns the test accuracy."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--output_dir", default="lambda_keras_demo")
    args = parser.parse_args(argv)
    keras.utils.set_random_seed(0)

    (x_train, y_train), (x_test, y_test) = load_digits_split()
    print(f"digits: {len(x_train)} train / {len(x_test)} test images, 8x8, 10 classes")
    model = build_model()
    lambda_layers = [layer for layer in model.layers if isinstance(layer, LambdaLayer)]
    chosen = [layer.resolve_implementation((8, 8)) for layer in lambda_layers]
    print(f"model: {model.count_params():,} parameters; implementation='auto' chose {chosen}")
    steps = args.epochs * -(-len(x_train) // args.batch_size)
    model.compile(
        optimizer=keras.optimizers.AdamW(keras.optimizers.schedules.CosineDecay(3e-3, steps)),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    start = time.perf_counter()
    model.fit(x_train, y_train, batch_size=args.batch_size, epochs=args.epochs, verbose=2)
    _, accuracy = model.evaluate(x_test, y_test, verbose=0)
    print(f"test accuracy: {accuracy:.4f} (training took {time.perf_counter() - start:.0f} s)")

    reference = model.predict(x_test, verbose=0)
    for impl in ("einsum", "conv", "depthwise"):
        other = build_model(impl)
        other.set_weights(model.get_weights())
        diff = np.abs(other.predict(x_test, verbose=0) - reference).max()
        print(f"implementation={impl!r}: max |difference| of the probabilities {diff:.1e}")

    os.makedirs(args.output_dir, exist_ok=True)
    keras_path = os.path.join(args.output_dir, "lambda_digits.keras")
    model.save(keras_path)
    reloaded = keras.saving.load_model(keras_path)
    same = np.array_equal(reloaded.predict(x_test, verbose=0), reference)
    export_path = os.path.join(args.output_dir, "saved_model")
    model.export(export_path, format="tf_saved_model", verbose=False)
    print(f"saved {keras_path} (reloaded predictions identical: {same}) and {export_path}")
    return accuracy


if __name__ == "__main__":
    main()
