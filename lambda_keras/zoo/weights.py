"""Registry of pretrained weights: a name maps to a file, its checksum and what it fits.

No official LambdaResNet weights exist; the registry is how weights trained with this project
(or converted elsewhere) are published::

    register_weights(WeightsSpec(
        name="lambda_resnet50_imagenet", url="https://.../lambda_resnet50.weights.h5",
        sha256="...", architecture="lambda_resnet50", input_size=224))
    model = lambda_keras.zoo.LambdaResNet50(weights="lambda_resnet50_imagenet")

Files are fetched once with ``keras.utils.get_file`` into the Keras cache and verified against
their SHA-256 before anything is loaded.
"""

from __future__ import annotations

import dataclasses
import os
import warnings

import keras

__all__ = [
    "WeightsSpec",
    "fetch_weights",
    "register_weights",
    "registered_weights",
    "resolve_weights",
    "unregister_weights",
]

PREPROCESSING_MODES = ("torch", "tf", "caffe")


@dataclasses.dataclass(frozen=True)
class WeightsSpec:
    """A published weights file.

    Attributes:
        name: Registry name, passed as ``weights=name`` to a builder.
        url: Where the ``.weights.h5`` file is (``https://``, ``file://``, ...).
        sha256: SHA-256 of the file (hex).
        architecture: The architecture the builder checks: the registry name of the model
            (see :func:`lambda_keras.zoo.list_models`), for ``ResNet50`` with its layout and
            intra-depth (``"resnet50_ccll"``, ``"resnet50_llll_u4"``).
        input_size: Image side the weights were trained at.
        preprocessing: ``keras.applications.imagenet_utils.preprocess_input`` mode the weights
            expect: ``"torch"`` (ImageNet mean/std, default), ``"tf"`` or ``"caffe"``.
        classes: Number of classes of the classifier the file holds.
    """

    name: str
    url: str
    sha256: str
    architecture: str
    input_size: int
    preprocessing: str = "torch"
    classes: int = 1000

    def __post_init__(self):
        if self.preprocessing not in PREPROCESSING_MODES:
            raise ValueError(
                f"`preprocessing` must be one of {PREPROCESSING_MODES}; received "
                f"{self.preprocessing!r}."
            )
        if len(self.sha256) != 64 or any(c not in "0123456789abcdef" for c in self.sha256.lower()):
            raise ValueError(f"`sha256` must be 64 hex digits; received {self.sha256!r}.")


_REGISTRY: dict[str, WeightsSpec] = {}
# Where fetched files go: None is the Keras cache (``$KERAS_HOME``, default ``~/.keras``),
# under ``lambda_keras/``.
CACHE_DIR: str | None = None


def register_weights(spec: WeightsSpec, overwrite: bool = False) -> None:
    """Add ``spec`` to the registry (``overwrite=True`` to replace an existing name)."""
    if spec.name in _REGISTRY and not overwrite:
        raise ValueError(f"Weights {spec.name!r} are already registered; pass overwrite=True.")
    _REGISTRY[spec.name] = spec


def unregister_weights(name: str) -> None:
    """Remove ``name`` from the registry."""
    _REGISTRY.pop(name, None)


def registered_weights(architecture: str | None = None) -> dict[str, WeightsSpec]:
    """Registered weights, optionally only those of one architecture."""
    return {
        name: spec
        for name, spec in sorted(_REGISTRY.items())
        if architecture is None or spec.architecture == architecture
    }


def resolve_weights(weights: str | None, architecture: str) -> WeightsSpec | str | None:
    """Check a builder's ``weights`` argument.

    Returns:
        ``None``, a :class:`WeightsSpec` (a registered name) or a path to an existing file.

    Raises:
        ValueError: unknown name (the message lists the known ones), weights registered for
            another architecture, or a path that does not exist.
    """
    if weights is None:
        return None
    if not isinstance(weights, (str, os.PathLike)):
        raise TypeError(
            "`weights` must be None, a registered name or the path to a .weights.h5 file; "
            f"received {type(weights).__name__}."
        )
    weights = os.fspath(weights)
    if weights in _REGISTRY:
        spec = _REGISTRY[weights]
        if spec.architecture != architecture:
            raise ValueError(
                f"Weights {weights!r} were trained for architecture {spec.architecture!r}, not "
                f"{architecture!r}. Weights for {architecture!r}: "
                f"{sorted(registered_weights(architecture)) or 'none registered'}."
            )
        return spec
    if os.path.exists(weights):
        return weights
    looks_like_path = os.sep in weights or weights.endswith((".h5", ".keras"))
    if looks_like_path:
        raise ValueError(f"The weights file {weights!r} does not exist.")
    raise ValueError(
        f"Unknown weights {weights!r}: pass None, the path to a .weights.h5 file or a "
        f"registered name. Registered for {architecture!r}: "
        f"{sorted(registered_weights(architecture)) or 'none'}; all registered: "
        f"{sorted(_REGISTRY) or 'none'}."
    )


def fetch_weights(spec: WeightsSpec) -> str:
    """Download (once) and verify a registered file; returns its local path.

    Raises:
        ValueError: the file's SHA-256 differs from the registered one (nothing is loaded).
    """
    filename = f"{spec.name}.weights.h5"
    if CACHE_DIR is not None:
        os.makedirs(CACHE_DIR, exist_ok=True)  # Keras falls back to /tmp/.keras otherwise
    try:
        return keras.utils.get_file(
            filename,
            origin=spec.url,
            file_hash=spec.sha256,
            hash_algorithm="sha256",
            cache_subdir="lambda_keras",
            cache_dir=CACHE_DIR,
        )
    except ValueError as err:
        raise ValueError(
            f"Checksum mismatch for weights {spec.name!r} from {spec.url}: expected SHA-256 "
            f"{spec.sha256}. Nothing was loaded. ({err})"
        ) from err


def load_into(model: keras.Model, path: str, architecture: str) -> None:
    """``model.load_weights(path)``, raising when anything did not fit.

    Keras only warns when parts of a file match no layer (those layers keep their random
    initialisation); here that is an error too, so a model is never returned half-loaded.
    """
    problem = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model.load_weights(path)
        except (ValueError, KeyError) as err:
            problem = str(err)
    skipped = [str(w.message) for w in caught if "freshly-initialized" in str(w.message)]
    if problem is None and skipped:
        problem = skipped[0]
    if problem is not None:
        raise ValueError(
            f"The weights in {path!r} do not fit {architecture!r} as built (another "
            f"architecture, depth or number of classes?): {problem}"
        )
