"""Registry of pretrained weights: a name maps to a file, the rule that checks it, what it fits
and how well it does.

A [WeightsSpec][lambda_keras.zoo.weights_spec.WeightsSpec] is the one record of a published
file: where it is (a URL, or a Hugging Face Hub repository, file and revision), how it is checked
(``integrity``: one of [INTEGRITY_RULES][lambda_keras.zoo.integrity.INTEGRITY_RULES], with
the ``source`` of its digest or commit), what it fits (architecture, input size, classes) and
its ``metrics`` (ImageNet top-1/top-5 at its input size, COCO box/mask AP) with their source.
The docs' tables of models and weights are rendered from these records
(``docs/registry_tables.py``).

```python
register_weights(WeightsSpec(
    name="my_lambda_resnet50",
    url="https://example.org/lambda_resnet50.weights.h5",
    sha256="...", architecture="lambda_resnet50", input_size=224))
model = lambda_keras.zoo.LambdaResNet50(weights="my_lambda_resnet50")
```

A file is fetched once ([lambda_keras.zoo.downloads][lambda_keras.zoo.downloads]) into the
project's folder of the Keras cache and checked before anything reads it; a file that fails is
removed and nothing is loaded. A file in another format (timm's ``model.safetensors``,
torchvision's ``.pth``) is converted the first time by the function registered for its format
([register_converter][lambda_keras.zoo.weights.register_converter]) and the Keras
``.weights.h5`` cached beside a manifest: the digest and commit of the file it came from, and
its own SHA-256, checked on every later load (a converted file that fails, or that came from
another pin, is made again).
"""

from __future__ import annotations

import importlib.util
import json
import os
import tempfile
import warnings
from collections.abc import Callable

import keras

from lambda_keras.checkpoints import read_checkpoint
from lambda_keras.zoo import downloads, timm_checkpoint
from lambda_keras.zoo.integrity import file_sha256
from lambda_keras.zoo.weights_spec import METRICS, SOURCE_FORMATS, WeightsSpec

__all__ = [
    "METRICS",
    "WeightsSpec",
    "load_registered",
    "manifest_holds",
    "pin",
    "register_converter",
    "register_timm_weights",
    "register_weights",
    "registered_weights",
    "resolve_weights",
    "timm_family",
    "unregister_weights",
]

# What timm's README ("Licenses") says of the weights it trained itself on ImageNet-1k: assume
# the dataset's license applies to them (timm's code is Apache-2.0).
TIMM_LICENSE = "ImageNet-1k's terms, per timm"
TIMM_LICENSE_SOURCE = "https://github.com/huggingface/pytorch-image-models#licenses"
_REGISTRY: dict[str, WeightsSpec] = {}
# Source format -> the function that assigns a checkpoint file of that format to a built model,
# and the modules it needs (checked before anything is downloaded).
_CONVERTERS: dict[str, tuple[Callable[[keras.Model, str, WeightsSpec], None], tuple[str, ...]]] = {}
# Zoo architecture -> the timm model class its timm checkpoints come from
# ([`lambda_keras.zoo.timm_checkpoint.FAMILIES`][lambda_keras.zoo.timm_checkpoint.FAMILIES]).
_TIMM_FAMILIES: dict[str, str] = {}
# Where fetched files go: None is the Keras cache (``$KERAS_HOME``, default ``~/.keras``),
# under ``lambda_keras/``.
CACHE_DIR: str | None = None


def register_weights(spec: WeightsSpec, overwrite: bool = False) -> None:
    """Add ``spec`` to the registry (``overwrite=True`` to replace an existing name)."""
    if not isinstance(spec, WeightsSpec):
        raise TypeError(f"`spec` must be a WeightsSpec; received {type(spec).__name__}.")
    if spec.name in _REGISTRY and not overwrite:
        raise ValueError(f"Weights {spec.name!r} are already registered; pass overwrite=True.")
    _REGISTRY[spec.name] = spec


def register_converter(
    source_format: str,
    convert: Callable[[keras.Model, str, WeightsSpec], None],
    needs: tuple[str, ...] = (),
) -> None:
    """Register how a checkpoint file of ``source_format`` becomes a model's weights:
    ``convert(model, path, spec)`` assigns every weight of the built ``model`` from the file at
    ``path`` (or raises naming what does not fit). ``needs``: the modules it imports, checked
    before the checkpoint is downloaded (a missing one is an ``ImportError`` naming it)."""
    if source_format not in SOURCE_FORMATS or source_format == "keras":
        raise ValueError(
            f"`source_format` must be one of {sorted(set(SOURCE_FORMATS) - {'keras'})}; "
            f"received {source_format!r}."
        )
    _CONVERTERS[source_format] = (convert, tuple(needs))


def register_timm_weights(
    *,
    architecture: str,
    family: str,
    hub_id: str,
    integrity: str,
    revision: str,
    source: str,
    input_size: int,
    crop_fraction: float,
    imagenet_top: tuple[float, float],
    sha256: str | None = None,
    license: str = TIMM_LICENSE,
    license_source: str = TIMM_LICENSE_SOURCE,
) -> WeightsSpec:
    """Register timm's ImageNet ``model.safetensors`` of ``hub_id`` (``timm/<model>.<tag>`` on
    the Hugging Face Hub) as ``weights="imagenet"`` of the zoo's ``architecture``, whose timm
    model class is ``family`` (``"byobnet"`` or ``"resnet"``); converted on first use.

    ``integrity`` is the rule that checks the file (``"sha256"`` with the published ``sha256``,
    ``"hub_commit"`` at the commit ``revision``, or ``"hub_latest"`` with ``revision="main"``);
    ``source`` is where the digest or commit was read, required: a pin that cannot be cited is
    not a pin. ``imagenet_top``: timm's top-1 and top-5 (%) of the weights at ``input_size``
    and ``crop_fraction``
    (``lambda_keras.zoo.timm_checkpoint.TIMM_RESULTS``). ``license``: the file's terms as its
    publisher states them, ``license_source`` where (default: timm's, for weights timm
    trained)."""
    if not source:
        raise ValueError(
            f"The pin of {hub_id!r} needs its `source`: the page its digest or commit was read on."
        )
    if family not in timm_checkpoint.FAMILIES:
        raise ValueError(
            f"`family` must be one of {timm_checkpoint.FAMILIES}; received {family!r}."
        )
    spec = WeightsSpec(
        name=hub_id.split("/", 1)[1],
        architecture=architecture,
        input_size=input_size,
        hub_repo=hub_id,
        hub_revision=revision,
        integrity=integrity,
        sha256=sha256,
        source=source,
        metrics={"imagenet_top1": imagenet_top[0], "imagenet_top5": imagenet_top[1]},
        metrics_source=timm_checkpoint.TIMM_RESULTS,
        crop_fraction=crop_fraction,
        source_format="timm",
        aliases=("imagenet",),
        license=license,
        license_source=license_source,
    )
    register_weights(spec)
    _TIMM_FAMILIES[architecture] = family
    return spec


def timm_family(architecture: str) -> str:
    """The timm model class (``"byobnet"`` or ``"resnet"``) of ``architecture``'s checkpoints."""
    if architecture not in _TIMM_FAMILIES:
        raise ValueError(
            f"No timm checkpoint layout is known for {architecture!r}; timm ports: "
            f"{sorted(_TIMM_FAMILIES)}."
        )
    return _TIMM_FAMILIES[architecture]


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
        ``None``, a [`WeightsSpec`][lambda_keras.zoo.weights.WeightsSpec] (a registered name) or a
        path to an existing file.

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
    aliased = [s for s in _REGISTRY.values() if s.architecture == architecture]
    aliased = [s for s in aliased if weights in s.aliases]
    if aliased:
        return aliased[0]
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


def cache_folder() -> str:
    """The project's folder of the Keras cache (``CACHE_DIR``, or ``$KERAS_HOME``, default
    ``~/.keras``, under ``lambda_keras/``), created if needed."""
    base = CACHE_DIR or os.environ.get("KERAS_HOME", os.path.join("~", ".keras"))
    folder = os.path.join(os.path.expanduser(base), "lambda_keras")
    os.makedirs(folder, exist_ok=True)
    return folder


def load_registered(model: keras.Model, spec: WeightsSpec) -> None:
    """Load registered weights into the built ``model``: a Keras file as fetched and checked;
    another format from its converted ``.weights.h5`` in the cache when that file's manifest
    holds its SHA-256 and the pin of the file it came from, else fetched, checked, converted
    once ([register_converter][lambda_keras.zoo.weights.register_converter]) and cached.

    Raises:
        ValueError: the file fails its check (it is removed; nothing is loaded), or its
            weights do not fit ``model``.
    """
    if spec.source_format == "keras":
        load_into(model, downloads.fetch(spec, cache_folder()).path, spec.architecture)
        return
    converted = os.path.join(cache_folder(), f"{spec.name}.weights.h5")
    if _converted_file_holds(converted, spec):
        load_into(model, converted, spec.architecture)
        return
    convert = _converter(spec, converted)
    fetched = downloads.fetch(spec, cache_folder())
    convert(model, fetched.path, spec)
    save_weights_atomically(model, converted)
    _write_manifest(converted, spec, fetched)


def _converter(spec: WeightsSpec, converted: str) -> Callable:
    """The converter of ``spec``'s format, its modules checked before anything is fetched."""
    if spec.source_format not in _CONVERTERS:
        raise ValueError(
            f"No converter is registered for {spec.source_format!r} checkpoints (weights "
            f"{spec.name!r}): import the package that reads them (torchvision's: "
            "lambda_keras.detection)."
        )
    convert, needs = _CONVERTERS[spec.source_format]
    missing = [module for module in needs if importlib.util.find_spec(module) is None]
    if missing:
        raise ImportError(
            f"The weights {spec.name!r} are a {spec.source_format} checkpoint, converted once "
            f"and needing {', '.join(missing)} for it (pip install {' '.join(missing)}); later "
            f"calls read the converted file {converted!r}. Nothing was downloaded."
        )
    return convert


def pin(spec: WeightsSpec) -> dict:
    """What a file made from ``spec``'s download (a converted file, a keras-hub preset) must
    have come from: the spec's rule, digest, address and revision."""
    return {
        "integrity": spec.integrity,
        "sha256": spec.sha256,
        "url": spec.url,
        "hub_repo": spec.hub_repo,
        "hub_revision": spec.hub_revision,
    }


def _write_manifest(converted: str, spec: WeightsSpec, fetched: downloads.Fetched) -> None:
    manifest = {
        "pin": pin(spec),
        "source_sha256": fetched.sha256,
        "source_commit": fetched.commit,
        "converted_sha256": file_sha256(converted),
    }
    with open(f"{converted}.json", "w") as f:
        json.dump(manifest, f, indent=1)


def _converted_file_holds(converted: str, spec: WeightsSpec) -> bool:
    """Whether the cached conversion is of the file ``spec`` pins and intact; one that is
    not is removed (with a warning when it was damaged), to be made again."""
    if not os.path.exists(converted):
        return False

    def remove() -> None:
        for path in (converted, f"{converted}.json"):
            if os.path.exists(path):
                os.remove(path)

    return manifest_holds(
        f"{converted}.json",
        pin(spec),
        intact=lambda manifest: manifest["converted_sha256"] == file_sha256(converted),
        remove=remove,
        damaged=f"The converted weights {converted!r} do not have the SHA-256 recorded when "
        "they were converted: removed, and converted again from the checked download.",
    )


def manifest_holds(
    manifest_path: str,
    expected_pin: dict,
    *,
    intact: Callable[[dict], bool],
    remove: Callable[[], None],
    damaged: str,
) -> bool:
    """Whether what was made from a registered file's download and cached with the manifest
    at ``manifest_path`` (a converted file, a keras-hub preset) was made from what
    ``expected_pin`` records (the manifest's ``pin``: [`pin`][lambda_keras.zoo.weights.pin]
    of the file's spec, and what else it was made with) and is intact (``intact(manifest)``).
    What is not is removed (``remove()``) to be made again, with the warning ``damaged`` when
    its pin was right."""
    if not isinstance(expected_pin, dict):
        raise TypeError(
            f"`expected_pin` must be a dict (pin(spec), and what else the file was made with); "
            f"received {type(expected_pin).__name__}."
        )
    try:
        with open(manifest_path) as f:
            manifest = json.load(f)
        same_pin = manifest["pin"] == expected_pin
        whole = same_pin and intact(manifest)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        same_pin = whole = False
    if whole:
        return True
    if same_pin:
        warnings.warn(damaged, stacklevel=4)
    remove()
    return False


def _convert_timm(model: keras.Model, path: str, spec: WeightsSpec) -> None:
    timm_checkpoint.assign_checkpoint(
        model,
        read_checkpoint(path),
        timm_family(spec.architecture),
        spec.architecture,
    )


register_converter("timm", _convert_timm, needs=("safetensors",))


def save_weights_atomically(model: keras.Model, path: str) -> None:
    """``model.save_weights(path)`` through a temporary file: ``path`` is complete or absent."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, temporary = tempfile.mkstemp(suffix=".weights.h5", dir=directory)
    os.close(fd)
    try:
        model.save_weights(temporary, overwrite=True)
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


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
        except OSError as err:  # h5py: not an HDF5 file, truncated file, ...
            raise ValueError(
                f"The weights file {path!r} is damaged or truncated (not a readable "
                f".weights.h5 file): {err}"
            ) from err
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
