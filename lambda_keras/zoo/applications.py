"""The keras.applications signature every zoo builder takes, its checks, and the shared builder
(input, body, classifier head, weights); ImageNet preprocessing and class names."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from pathlib import Path

import keras
import numpy as np

from lambda_keras import _validation as v
from lambda_keras.backend.compiled_steps import CompiledSteps
from lambda_keras.backend.host_initializers import initial_values_on_host
from lambda_keras.zoo import weights as weights_lib

POOLINGS = (None, "avg", "max")

# The keras.applications arguments, documented once for every builder's docstring.
APPLICATION_ARGS_DOC = """
    Args:
        include_top: Whether to include the classifier (global pooling, dropout, dense).
        weights: ``None`` (random initialisation), a registered weights name (see
            [`lambda_keras.zoo.weights.registered_weights`][lambda_keras.zoo.weights.registered_weights])
            or the path to a
            ``.weights.h5`` file.
        input_tensor: Optional Keras tensor to use as the image input.
        input_shape: ``(height, width, 3)``, at least 32x32; default ``(224, 224, 3)``.
        pooling: With ``include_top=False``: ``None`` (the final feature map
            ``[batch, h/32, w/32, channels]``), ``"avg"`` or ``"max"``.
        classes: Number of classes of the classifier.
        classifier_activation: Activation of the classifier (``None`` for logits).
        name: Model name."""

RETURNS_DOC = """
    Returns:
        A [`ZooModel`][lambda_keras.zoo.applications.ZooModel], a functional ``keras.Model``.
"""


@keras.saving.register_keras_serializable(package="lambda_keras")
class ZooModel(CompiledSteps, keras.Model):
    """The zoo's functional models: a ``keras.Model`` whose ``fit``, ``evaluate`` and
    ``predict`` steps compile as one graph each on Keras' PyTorch backend
    ([`CompiledSteps`][lambda_keras.backend.compiled_steps.CompiledSteps]); on TensorFlow and
    JAX exactly a ``keras.Model``. Saved and loaded as itself.

    Examples:
        >>> from lambda_keras import zoo
        >>> model = zoo.LambdaResNet26T(
        ...     weights=None, input_shape=(64, 64, 3), classes=10
        ... )
        >>> isinstance(model, zoo.ZooModel)
        True
    """

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """Keras' functional ``from_config`` (``keras.saving.load_model`` builds the model
        with it, then loads the weights), its layers initialised on the host on JAX
        ([`initial_values_on_host`][lambda_keras.backend.host_initializers.initial_values_on_host]:
        Keras' distributions, no compile per weight shape), as the zoo's builders do."""
        with initial_values_on_host():
            return super().from_config(config, custom_objects=custom_objects)


@dataclasses.dataclass(frozen=True)
class ApplicationArgs:
    """The ``keras.applications`` arguments every builder takes, in their usual order."""

    include_top: bool = True
    weights: str | None = None
    input_tensor: object = None
    input_shape: tuple | None = None
    pooling: str | None = None
    classes: int = 1000
    classifier_activation: object = "softmax"
    name: str | None = None


def check_arguments(
    args: ApplicationArgs, *, architecture: str, default_size: int, min_size: int
) -> tuple[weights_lib.WeightsSpec | str | None, tuple]:
    """Validate the keras.applications arguments before anything is built.

    Returns:
        ``(resolved_weights, input_shape)`` with the input shape completed to
        ``(height, width, channels)``.
    """
    v.boolean("include_top", args.include_top)
    if args.name is not None and not isinstance(args.name, str):
        raise TypeError(f"`name` must be a string or None; received name={args.name!r}.")
    if args.include_top:
        try:
            keras.activations.get(args.classifier_activation)
        except ValueError as err:
            raise ValueError(
                "`classifier_activation` must be None, 'softmax' or another Keras activation; "
                f"received classifier_activation={args.classifier_activation!r}."
            ) from err
    resolved = weights_lib.resolve_weights(args.weights, architecture)
    if args.pooling not in POOLINGS:
        raise ValueError(
            f"`pooling` must be one of None, 'avg' or 'max'; received pooling={args.pooling!r}."
        )
    classes = args.classes
    if isinstance(classes, bool) or not isinstance(classes, (int, np.integer)) or classes < 1:
        raise ValueError(f"`classes` must be a positive integer; received classes={classes!r}.")
    if isinstance(resolved, weights_lib.WeightsSpec) and args.include_top:
        _check_pretrained_head(args, resolved)
    if args.input_tensor is not None and not keras.backend.is_keras_tensor(args.input_tensor):
        raise TypeError(
            "`input_tensor` must be a Keras tensor (the output of keras.Input or of a layer); "
            f"received {type(args.input_tensor).__name__}."
        )
    input_shape = _input_shape(args, resolved, default_size)
    _check_input_shape(input_shape, resolved, architecture, min_size)
    return resolved, input_shape


def _check_pretrained_head(args: ApplicationArgs, spec: weights_lib.WeightsSpec) -> None:
    if args.classes != spec.classes:
        raise ValueError(
            f"With weights={args.weights!r} and include_top=True, `classes` must be "
            f"{spec.classes} (the classifier the weights hold); received classes={args.classes}."
        )
    if args.classifier_activation not in ("softmax", None):
        raise ValueError(
            "With pretrained weights and include_top=True, `classifier_activation` must be "
            f"'softmax' or None; received {args.classifier_activation!r}."
        )


def _input_shape(args: ApplicationArgs, resolved, default_size: int) -> tuple:
    """``input_shape``, else the input tensor's, else the weights' or the default size."""
    input_shape = args.input_shape
    if input_shape is not None and not isinstance(input_shape, (tuple, list)):
        raise TypeError(
            "`input_shape` must be a tuple (height, width, channels); received "
            f"input_shape={input_shape!r} ({type(input_shape).__name__})."
        )
    if input_shape is None and args.input_tensor is not None:
        input_shape = tuple(args.input_tensor.shape[1:])
    if input_shape is None:
        size = resolved.input_size if isinstance(resolved, weights_lib.WeightsSpec) else None
        input_shape = (size or default_size, size or default_size, 3)
    return tuple(input_shape)


def _check_input_shape(input_shape: tuple, resolved, architecture: str, min_size: int) -> None:
    sides_ok = all(
        side is None or (isinstance(side, (int, np.integer)) and not isinstance(side, bool))
        for side in input_shape
    )
    if len(input_shape) != 3 or not sides_ok:
        raise ValueError(
            "`input_shape` must be (height, width, channels) (channels last); received "
            f"input_shape={input_shape}."
        )
    height, width, channels = input_shape
    if channels is None:
        raise ValueError(f"The channel dimension of `input_shape` must be known: {input_shape}.")
    if resolved is not None and channels != 3:
        raise ValueError(
            f"Pretrained weights expect 3 input channels; received input_shape={input_shape}."
        )
    for side in (height, width):
        if side is not None and side < min_size:
            raise ValueError(
                f"`input_shape` must be at least {min_size}x{min_size} for {architecture!r}; "
                f"received input_shape={input_shape}."
            )


def build(
    args: ApplicationArgs,
    *,
    architecture: str,
    body: Callable[[keras.KerasTensor], keras.KerasTensor],
    dropout_rate: float,
    default_size: int = 224,
    min_size: int = 32,
) -> keras.Model:
    """Input, ``body`` (image -> final feature map), head, weights: one keras.applications model.

    The final feature map is the output of the layer named ``"features"``; with
    ``include_top=False`` and registered weights the full model is built, loaded and cut there.
    """
    v.number_in("dropout_rate", dropout_rate, 0.0, 1.0, high_open=True)
    resolved, input_shape = check_arguments(
        args, architecture=architecture, default_size=default_size, min_size=min_size
    )
    name = args.name or architecture
    if isinstance(resolved, weights_lib.WeightsSpec) and not args.include_top:
        full_args = dataclasses.replace(
            args,
            include_top=True,
            input_shape=input_shape,
            pooling=None,
            classes=resolved.classes,
            classifier_activation="softmax",
        )
        full = build(
            full_args,
            architecture=architecture,
            body=body,
            dropout_rate=dropout_rate,
            default_size=default_size,
            min_size=min_size,
        )
        features = _pool(full.get_layer("features").output, args.pooling)
        return ZooModel(full.input, features, name=name)

    inputs = args.input_tensor
    if inputs is None:
        inputs = keras.Input(input_shape, name="images")
    # On JAX, initial values from NumPy (no compile per shape); zeros where weights follow.
    with initial_values_on_host(overwritten=resolved is not None):
        x = body(inputs)
        x = _classifier(x, args, dropout_rate) if args.include_top else _pool(x, args.pooling)
    model = ZooModel(inputs, x, name=name)
    if isinstance(resolved, weights_lib.WeightsSpec):
        weights_lib.load_registered(model, resolved)
    elif resolved is not None:
        weights_lib.load_into(model, resolved, architecture)
    return model


def _classifier(x, args: ApplicationArgs, dropout_rate: float):
    """Global average pool, dropout, dense classifier."""
    x = keras.layers.GlobalAveragePooling2D(name="avg_pool")(x)
    if dropout_rate > 0:
        x = keras.layers.Dropout(dropout_rate, name="top_dropout")(x)
    return keras.layers.Dense(
        args.classes,
        activation=args.classifier_activation,
        kernel_initializer=keras.initializers.RandomNormal(stddev=0.01),
        # The classifier in full precision under mixed precision: float32 probabilities.
        dtype=keras.config.dtype_policy().variable_dtype,
        name="predictions",
    )(x)


def _pool(x, pooling):
    if pooling == "avg":
        return keras.layers.GlobalAveragePooling2D(name="avg_pool")(x)
    if pooling == "max":
        return keras.layers.GlobalMaxPooling2D(name="max_pool")(x)
    return x


def preprocess_input(x, data_format=None):
    """ImageNet preprocessing: RGB ``[0, 255]`` -> scaled to ``[0, 1]`` and normalised with the
    ImageNet mean and standard deviation (``keras.applications`` mode ``"torch"``).

    Args:
        x: ``[batch, height, width, 3]`` or ``[height, width, 3]`` array or tensor.
    """
    return keras.applications.imagenet_utils.preprocess_input(
        x, data_format=data_format, mode="torch"
    )


def decode_predictions(preds, top: int = 5) -> list[list[tuple[str, str, float]]]:
    """ImageNet class names of the ``top`` scores, as ``keras.applications`` returns them.

    Works offline: the 1,000 WordNet IDs and names (the first lemma of each synset, spaces as
    underscores, e.g. ``"golden_retriever"``) ship with the package.

    Args:
        preds: ``[batch, 1000]`` scores (probabilities or logits), finite real numbers.
        top: How many classes per image (at most all 1000).

    Returns:
        Per image, ``top`` tuples ``(wordnet_id, name, score)``, best first.

    Raises:
        ValueError: If ``preds`` is not of shape ``[batch, 1000]``, holds a score that is not
            a finite real number (NaN or infinite: no rank), or ``top`` is not a positive
            integer.
        TypeError: If ``preds`` does not hold numbers (strings, objects).
    """
    classes = imagenet_classes()
    preds = np.asarray(keras.ops.convert_to_numpy(preds))  # on the host, from any device
    if preds.ndim != 2 or preds.shape[1] != len(classes):
        raise ValueError(
            f"`preds` must be ImageNet scores of shape [batch, 1000]; received shape {preds.shape}."
        )
    if preds.dtype.kind not in "biuf":  # strings, objects: no scores at all
        raise TypeError(f"`preds` must hold real-valued scores; received dtype {preds.dtype}.")
    bad = v.non_finite(preds)
    if bad is not None:
        (row, column), count = bad
        raise ValueError(
            "`preds` must hold finite scores (NaN and infinities have no rank); received "
            f"{preds[row, column]} at preds[{row}, {column}] ({count} of {preds.size} scores "
            "not finite)."
        )
    top = min(v.positive_int("top", top), len(classes))  # all of them, best first
    results = []
    for row in preds:
        best = np.argsort(-row, kind="stable")[:top]
        results.append([(*classes[i], float(row[i])) for i in best])
    return results


@functools.cache
def imagenet_classes() -> tuple[tuple[str, str], ...]:
    """The 1,000 ImageNet-1k classes in model output order: ``(wordnet_id, name)``."""
    text = (Path(__file__).with_name("imagenet_classes.tsv")).read_text()
    return tuple(tuple(line.split("\t")) for line in text.splitlines() if line)
