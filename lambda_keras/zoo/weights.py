"""Registry of pretrained weights: a name maps to a file, its checksum and what it fits.

No official LambdaResNet weights exist; the registry is how weights trained with this project
(or converted elsewhere) are published::

    register_weights(WeightsSpec(
        name="lambda_resnet50_imagenet", url="https://.../lambda_resnet50.weights.h5",
        sha256="...", architecture="lambda_resnet50", input_size=224))
    model = lambda_keras.zoo.LambdaResNet50(weights="lambda_resnet50_imagenet")

Files are fetched once with ``keras.utils.get_file`` into the Keras cache and verified against
their SHA-256 before anything is loaded. A file in timm's format (``source_format="timm"``, a
``model.safetensors`` on the Hugging Face Hub, registered with :func:`register_timm_weights` at
a pinned Hub revision) is fetched with ``huggingface_hub`` (the ``[timm]`` extra: its cache,
resumed downloads, ETag check), checked against the same SHA-256, converted the first time
(:mod:`lambda_keras.zoo.timm_checkpoint`) and the Keras ``.weights.h5`` cached under the Keras
cache. A torchvision ``.pth`` (``source_format="torchvision"``, e.g. the COCO Mask R-CNN that
:mod:`lambda_keras.detection` registers) goes the same way; torch.hub publishes only the first
hex digits of such a file's SHA-256, in its name, so its spec checks that prefix
(``hash_rule="torch_hub_prefix"``). A format other than Keras' is converted by the function
registered for it (:func:`register_converter`): timm's here, torchvision's by the detection
package.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import os
import tempfile
import warnings
from collections.abc import Callable

import keras

from lambda_keras.checkpoints import read_checkpoint
from lambda_keras.zoo import timm_checkpoint

__all__ = [
    "WeightsSpec",
    "fetch_weights",
    "register_converter",
    "register_timm_weights",
    "register_weights",
    "registered_weights",
    "require_pinned",
    "resolve_weights",
    "timm_family",
    "unregister_weights",
]

PREPROCESSING_MODES = ("torch", "tf", "caffe")
# The file each source format downloads to (its suffix): a Keras file is loaded as it is, the
# others are converted once (register_converter).
SOURCE_FORMATS = {"keras": ".weights.h5", "timm": ".safetensors", "torchvision": ".pth"}
# "sha256": the whole SHA-256; "torch_hub_prefix": its first hex digits (8 or more), as
# torch.hub names files <name>-<prefix>.pth and checks them with check_hash=True.
HASH_RULES = ("sha256", "torch_hub_prefix")


@dataclasses.dataclass(frozen=True)
class WeightsSpec:
    """A published weights file.

    Attributes:
        name: Registry name, passed as ``weights=name`` to a builder.
        url: Where the file is (``https://``, ``file://``, ...).
        sha256: SHA-256 of the file (hex), or None when it is not pinned yet: such weights
            are listed but never downloaded (the error says how to convert them by hand).
        architecture: The architecture the builder checks: the registry name of the model
            (see :func:`lambda_keras.zoo.list_models`), for ``ResNet50`` with its layout and
            intra-depth (``"resnet50_ccll"``, ``"resnet50_llll_u4"``).
        input_size: Image side the weights are evaluated at: the builders' default input size
            with these weights and the export script's serving size.
        preprocessing: ``keras.applications.imagenet_utils.preprocess_input`` mode the weights
            expect: ``"torch"`` (ImageNet mean/std, default), ``"tf"`` or ``"caffe"``.
        classes: Number of classes of the classifier the file holds.
        crop_fraction: Centre-crop fraction of the evaluation the weights were measured with.
        source_format: ``"keras"`` (a ``.weights.h5``), ``"timm"`` (timm's
            ``model.safetensors``) or ``"torchvision"`` (a ``.pth``), the last two converted
            on first use.
        hash_rule: ``"sha256"`` (``sha256`` is the whole digest) or ``"torch_hub_prefix"``
            (``sha256`` is its first 8 or more hex digits, torch.hub's rule).
        aliases: Other names that select these weights for their architecture only, e.g.
            ``("imagenet",)``: ``weights="imagenet"``.
        sha256_source: Where ``sha256`` comes from and can be checked (e.g. the Hub's LFS
            pointer at a named revision); required for the project's own timm registrations.
        hub_repo: A Hugging Face Hub repository (``timm/<model>.<tag>``) to fetch
            ``model.safetensors`` from with ``huggingface_hub`` instead of ``url``.
        hub_revision: The Hub commit (40 hex digits) the file is pinned at.
    """

    name: str
    url: str
    sha256: str | None
    architecture: str
    input_size: int
    preprocessing: str = "torch"
    classes: int = 1000
    crop_fraction: float = 0.875
    source_format: str = "keras"
    hash_rule: str = "sha256"
    aliases: tuple[str, ...] = ()
    sha256_source: str | None = None
    hub_repo: str | None = None
    hub_revision: str | None = None

    def __post_init__(self):
        if self.source_format not in SOURCE_FORMATS:
            raise ValueError(
                f"`source_format` must be one of {SOURCE_FORMATS}; received {self.source_format!r}."
            )
        if self.preprocessing not in PREPROCESSING_MODES:
            raise ValueError(
                f"`preprocessing` must be one of {PREPROCESSING_MODES}; received "
                f"{self.preprocessing!r}."
            )
        if self.hash_rule not in HASH_RULES:
            raise ValueError(
                f"`hash_rule` must be one of {HASH_RULES}; received {self.hash_rule!r}."
            )
        if self.sha256 is None:
            return
        hex_digits = all(c in "0123456789abcdef" for c in self.sha256.lower())
        if self.hash_rule == "sha256" and not (hex_digits and len(self.sha256) == 64):
            raise ValueError(f"`sha256` must be 64 hex digits; received {self.sha256!r}.")
        if self.hash_rule == "torch_hub_prefix" and not (hex_digits and len(self.sha256) >= 8):
            raise ValueError(
                "With hash_rule='torch_hub_prefix', `sha256` must be the first 8 or more hex "
                f"digits of the file's SHA-256; received {self.sha256!r}."
            )


_REGISTRY: dict[str, WeightsSpec] = {}
# Source format -> the function that assigns a checkpoint file of that format to a built model,
# and the modules it needs (checked before anything is downloaded).
_CONVERTERS: dict[str, tuple[Callable[[keras.Model, str, WeightsSpec], None], tuple[str, ...]]] = {}
# Zoo architecture -> the timm model class its timm checkpoints come from
# (:data:`lambda_keras.zoo.timm_checkpoint.FAMILIES`).
_TIMM_FAMILIES: dict[str, str] = {}
HUB = "https://huggingface.co"
# Where fetched files go: None is the Keras cache (``$KERAS_HOME``, default ``~/.keras``),
# under ``lambda_keras/``.
CACHE_DIR: str | None = None


def register_weights(spec: WeightsSpec, overwrite: bool = False) -> None:
    """Add ``spec`` to the registry (``overwrite=True`` to replace an existing name)."""
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
    sha256: str | None,
    sha256_source: str | None,
    input_size: int,
    crop_fraction: float,
    revision: str | None = None,
) -> WeightsSpec:
    """Register timm's ImageNet ``model.safetensors`` of ``hub_id`` (``timm/<model>.<tag>`` on
    the Hugging Face Hub) as ``weights="imagenet"`` of the zoo's ``architecture``, whose timm
    model class is ``family`` (``"byobnet"`` or ``"resnet"``); converted on first use.

    A pinned ``sha256`` must say where it can be checked (``sha256_source``) and the Hub
    ``revision`` (a commit) it belongs to, which the download asks for; without a hash the
    weights are listed and never downloaded unchecked."""
    if sha256 is not None and not sha256_source:
        raise ValueError(
            f"The SHA-256 pinned for {hub_id!r} needs its source (`sha256_source`: the Hub's LFS "
            "pointer at a named revision, or an upstream file that publishes it); a hash that "
            "cannot be cited is left unpinned (sha256=None)."
        )
    _check_revision(hub_id, sha256, revision)
    if family not in timm_checkpoint.FAMILIES:
        raise ValueError(
            f"`family` must be one of {timm_checkpoint.FAMILIES}; received {family!r}."
        )
    spec = WeightsSpec(
        name=hub_id.split("/", 1)[1],
        url=f"{HUB}/{hub_id}/resolve/{revision or 'main'}/model.safetensors",
        sha256=sha256,
        architecture=architecture,
        input_size=input_size,
        crop_fraction=crop_fraction,
        source_format="timm",
        aliases=("imagenet",),
        sha256_source=sha256_source,
        hub_repo=hub_id,
        hub_revision=revision,
    )
    register_weights(spec)
    _TIMM_FAMILIES[architecture] = family
    return spec


def _check_revision(hub_id: str, sha256: str | None, revision: str | None) -> None:
    """A pinned file is pinned at a Hub commit: the hash alone could name a file that ``main``
    no longer serves."""
    if sha256 is not None and revision is None:
        raise ValueError(
            f"The SHA-256 pinned for {hub_id!r} needs the Hub revision it was read at "
            "(`revision`: a commit, 40 hex digits)."
        )
    if revision is not None and (
        len(revision) != 40 or any(c not in "0123456789abcdef" for c in revision)
    ):
        raise ValueError(
            f"`revision` must be a Hub commit (40 lowercase hex digits); received {revision!r}."
        )


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


def require_pinned(spec: WeightsSpec) -> None:
    """Raise ``ValueError`` unless the registered file's SHA-256 is pinned (nothing unpinned is
    downloaded): callers check it before other work, :func:`fetch_weights` before fetching."""
    if spec.sha256 is None:
        raise ValueError(
            f"The SHA-256 of the weights {spec.name!r} ({spec.url}) is not pinned in "
            "lambda_keras yet, so they are not downloaded unchecked. Download the file "
            "yourself, check it, and pass its path as `weights=` (a timm checkpoint: convert "
            f"it first with python -m lambda_keras.zoo.convert_timm --model={spec.architecture} "
            "--checkpoint=model.safetensors --output=model.weights.h5)."
        )


def fetch_weights(spec: WeightsSpec) -> str:
    """Download (once) and verify a registered file; returns its local path.

    Raises:
        ValueError: the file's SHA-256 is not pinned, or differs from the registered one
            (nothing is loaded).
    """
    require_pinned(spec)
    if spec.hub_repo is not None:
        return _fetch_from_hub(spec)
    filename = f"{spec.name}{SOURCE_FORMATS[spec.source_format]}"
    if CACHE_DIR is not None:
        os.makedirs(CACHE_DIR, exist_ok=True)  # Keras falls back to /tmp/.keras otherwise
    whole = spec.hash_rule == "sha256"  # Keras' get_file checks whole digests only
    try:
        path = keras.utils.get_file(
            filename,
            origin=spec.url,
            file_hash=spec.sha256 if whole else None,
            hash_algorithm="sha256",
            cache_subdir="lambda_keras",
            cache_dir=CACHE_DIR,
        )
    except ValueError as err:
        raise ValueError(
            f"Checksum mismatch for weights {spec.name!r} from {spec.url}: expected SHA-256 "
            f"{spec.sha256}. Nothing was loaded. ({err})"
        ) from err
    if not whole:
        check_sha256(path, spec)
    return path


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_sha256(path: str, spec: WeightsSpec) -> None:
    """Raise ``ValueError`` (and remove the file, so that the next call downloads it again)
    unless the file's SHA-256 is ``spec.sha256`` (its start, by ``torch_hub_prefix``)."""
    digest = _sha256(path)
    expected = spec.sha256.lower()
    if digest == expected or (spec.hash_rule == "torch_hub_prefix" and digest.startswith(expected)):
        return
    os.remove(path)
    raise ValueError(
        f"Checksum mismatch for weights {spec.name!r} from {spec.url}: {path!r} has SHA-256 "
        f"{digest[:16]}..., not the {expected!r}... registered ({spec.hash_rule}): a corrupt "
        "or different download (removed; call again to retry). Nothing was loaded."
    )


def _fetch_from_hub(spec: WeightsSpec) -> str:
    """``model.safetensors`` of ``spec.hub_repo`` at ``spec.hub_revision`` through
    ``huggingface_hub``'s cache, checked against ``spec.sha256``."""
    try:
        from huggingface_hub import hf_hub_download
    except ImportError as err:
        raise ImportError(
            f"Downloading the weights {spec.name!r} from the Hugging Face Hub needs "
            "huggingface_hub: pip install 'lambda-keras[timm]'."
        ) from err
    cache = None if CACHE_DIR is None else os.path.join(CACHE_DIR, "huggingface")
    path = hf_hub_download(
        repo_id=spec.hub_repo,
        filename="model.safetensors",
        revision=spec.hub_revision,
        cache_dir=cache,
    )
    digest = _sha256(path)
    if digest != spec.sha256:
        raise ValueError(
            f"Checksum mismatch for weights {spec.name!r} from {spec.url}: expected SHA-256 "
            f"{spec.sha256}, the file has {digest}. Nothing was loaded."
        )
    return path


def _keras_cache() -> str:
    """The project's folder of the Keras cache (``CACHE_DIR`` or ``$KERAS_HOME``)."""
    base = CACHE_DIR or os.environ.get("KERAS_HOME", os.path.join("~", ".keras"))
    folder = os.path.join(os.path.expanduser(base), "lambda_keras")
    os.makedirs(folder, exist_ok=True)
    return folder


def load_registered(model: keras.Model, spec: WeightsSpec) -> None:
    """Load registered weights into the built ``model``: a Keras file as fetched; another
    format from its converted ``.weights.h5`` in the Keras cache, or fetched, converted once
    (:func:`register_converter`) and cached there."""
    require_pinned(spec)  # before anything is written to the cache
    if spec.source_format == "keras":
        load_into(model, fetch_weights(spec), spec.architecture)
        return
    converted = os.path.join(_keras_cache(), f"{spec.name}.weights.h5")
    if os.path.exists(converted):
        load_into(model, converted, spec.architecture)
        return
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
    convert(model, fetch_weights(spec), spec)
    save_weights_atomically(model, converted)


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
