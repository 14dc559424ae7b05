"""The project's keras-hub presets: registered ImageNet weights as keras-hub preset directories.

Every file of the weights registry with the ``"imagenet"`` alias whose architecture has a
keras-hub classifier ([`image_classifier`][lambda_keras.hub.image_classifier]) is a preset named
``<architecture>_imagenet`` (``list_presets()``: ``"lambda_resnet50ts_imagenet"``,
``"resnet_rs50_imagenet"``, ...). keras-hub keeps no table of presets from outside it, so the
name resolves here: the first call fetches the weights through the registry (checked by their
integrity rule and converted, exactly as ``get_model(name, weights="imagenet")`` does), builds
the classifier with the file's preprocessing, and saves it with keras-hub's ``save_to_preset``
into the project's folder of the Keras cache with a manifest (``manifest.json``): what it was
made from (the pin of the weights, their size, crop, normalisation and classes, the release and
preset format) and the SHA-256 of every file. Later calls check the manifest; a preset made
from anything else, or whose files changed, is made again (with a warning when a file was
damaged). The preset appears whole or not at all (a staging directory renamed), also when
several processes make it at once.

```python
import keras_hub
import lambda_keras.hub

directory = lambda_keras.hub.preset_directory("lambda_resnet50ts_imagenet")
classifier = keras_hub.models.ImageClassifier.from_preset(directory)
# or, with the project's classes, the name itself:
classifier = lambda_keras.hub.TimmLambdaResNetImageClassifier.from_preset(
    "lambda_resnet50ts_imagenet"
)
```

A preset directory also holds ``lambda_keras.json``: the preset format, the release that wrote
it and the files saved. The project's classes refuse a preset of a newer format or with a file
missing, and every loader meets the backbones' refusal of a saved configuration with arguments
this release does not know.
"""

from __future__ import annotations

import difflib
import errno
import inspect
import json
import os
import shutil
import uuid
from collections.abc import Callable

import lambda_keras
from lambda_keras.zoo import weights as weights_lib
from lambda_keras.zoo.integrity import file_sha256
from lambda_keras.zoo.weights_spec import WeightsSpec

__all__ = [
    "FORMAT_FILE",
    "MANIFEST",
    "PRESET_FORMAT",
    "check_format",
    "check_saved_arguments",
    "list_presets",
    "preset_directory",
    "preset_weights",
    "project_presets",
    "register_preset_builder",
    "resolve",
    "write_format",
]

PRESET_FORMAT = 1
"""The format of the presets this release writes; a preset of a newer format is refused."""
FORMAT_FILE = "lambda_keras.json"
"""The file of a preset directory that names its format and the release that wrote it."""
MANIFEST = "manifest.json"
"""The file of a cached preset that records what it was made from and its files' SHA-256."""
ALIAS = "imagenet"
# Zoo architecture -> the function that builds its keras-hub classifier holding the registered
# weights `spec` (filled by lambda_keras.hub.image_classifier when it is imported).
_BUILDERS: dict[str, Callable[[WeightsSpec], object]] = {}


def register_preset_builder(architecture: str, build: Callable[[WeightsSpec], object]) -> None:
    """Register how the presets of ``architecture`` are made: ``build(spec)`` returns the
    keras-hub classifier holding the registered weights ``spec``, ready for
    ``save_to_preset``."""
    _BUILDERS[architecture] = build


def list_presets() -> list[str]:
    """The project's preset names, one per registered ImageNet weights file with a keras-hub
    classifier (``"lambda_resnet50ts_imagenet"``, ``"resnet_rs50_imagenet"``, ...).

    Examples:
        >>> import lambda_keras.hub
        >>> lambda_keras.hub.list_presets()[:4]
        ... # doctest: +NORMALIZE_WHITESPACE
        ['lambda_resnet26rpt_256_imagenet', 'lambda_resnet26t_imagenet',
         'lambda_resnet50ts_imagenet', 'resnet_rs101_imagenet']
    """
    return sorted(_presets())


def _presets() -> dict[str, WeightsSpec]:
    specs = weights_lib.registered_weights().values()
    return {
        f"{spec.architecture}_{ALIAS}": spec
        for spec in specs
        if ALIAS in spec.aliases and spec.architecture in _BUILDERS
    }


def preset_weights(name: str) -> WeightsSpec:
    """The registered weights the preset ``name`` holds.

    Raises:
        ValueError: ``name`` is not one of ``list_presets()`` (the message suggests close
            names).
    """
    presets = _presets()
    if isinstance(name, str) and name in presets:
        return presets[name]
    close = difflib.get_close_matches(name, presets, n=3) if isinstance(name, str) else []
    hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
    raise ValueError(
        f"Unknown preset {name!r}.{hint} The project's presets: {', '.join(sorted(presets))} "
        "(or pass a preset directory, or a keras-hub handle such as 'hf://...')."
    )


def preset_directory(name: str) -> str:
    """The directory of the preset ``name``, made on the first call (module docstring) and
    checked against its manifest on every call.

    Raises:
        ValueError: an unknown name, or the weights fail their check (nothing is saved).
    """
    spec = preset_weights(name)
    folder = os.path.join(weights_lib.cache_folder(), "presets", name)
    if not _preset_holds(folder, spec):
        _make(spec, folder)
        if not _preset_holds(folder, spec):
            raise ValueError(
                f"The preset {folder!r} could not be made: a folder there that is not this "
                "preset could not be removed (permissions?). Remove it, or set KERAS_HOME."
            )
    return folder


def _recipe(spec: WeightsSpec) -> dict:
    """What a cached preset was made from: the weights' pin, what the classifier takes from
    the spec, and the release and preset format that made it (another one makes it again)."""
    return {
        **weights_lib.pin(spec),
        "architecture": spec.architecture,
        "input_size": spec.input_size,
        "crop_fraction": spec.crop_fraction,
        "preprocessing": spec.preprocessing,
        "classes": spec.classes,
        "lambda_keras_version": lambda_keras.__version__,
        "preset_format": PRESET_FORMAT,
    }


def _make(spec: WeightsSpec, folder: str) -> None:
    """Build the classifier of ``spec`` and save it as a preset in ``folder``, its manifest
    inside, through a staging directory renamed at the end: ``folder`` is whole or absent. A
    process that finds ``folder`` made meanwhile (by another process) keeps that one."""
    classifier = _BUILDERS[spec.architecture](spec)
    parent = os.path.dirname(folder)
    os.makedirs(parent, exist_ok=True)
    # os.mkdir applies the umask (mkdtemp's 0700 would keep a shared cache's other users out)
    staging = os.path.join(parent, f".staging-{uuid.uuid4().hex}")
    os.mkdir(staging)
    try:
        classifier.save_to_preset(staging)
        files = {
            name: file_sha256(os.path.join(staging, name)) for name in sorted(os.listdir(staging))
        }
        manifest = {"pin": _recipe(spec), "weights": spec.name, "files": files}
        with open(os.path.join(staging, MANIFEST), "w") as f:
            json.dump(manifest, f, indent=1)
        try:
            os.replace(staging, folder)
        except OSError as error:  # made meanwhile by another process: checked by the caller
            if error.errno not in (errno.ENOTEMPTY, errno.EEXIST) or not os.path.isdir(folder):
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _preset_holds(folder: str, spec: WeightsSpec) -> bool:
    """Whether the cached preset was made from ``_recipe(spec)`` and its files are those its
    manifest records; one that is not is removed (with a warning when a file was damaged),
    to be made again."""
    if not os.path.isdir(folder):
        return False

    def intact(manifest: dict) -> bool:
        files = manifest["files"]
        return sorted(os.listdir(folder)) == sorted([*files, MANIFEST]) and all(
            file_sha256(os.path.join(folder, name)) == digest for name, digest in files.items()
        )

    return weights_lib.manifest_holds(
        os.path.join(folder, MANIFEST),
        _recipe(spec),
        intact=intact,
        remove=lambda: shutil.rmtree(folder, ignore_errors=True),
        damaged=f"The preset {folder!r} does not hold the files its manifest records (a file "
        "was changed, added or removed): removed, and made again from the checked weights.",
    )


def resolve(preset):
    """What keras-hub's ``from_preset`` is given for ``preset``: the directory of a project
    preset name, else ``preset`` itself (a directory, a keras-hub handle), after a local
    directory's format is checked (``check_format``)."""
    if isinstance(preset, str) and preset in _presets():
        return preset_directory(preset)
    if isinstance(preset, os.PathLike):
        preset = os.fspath(preset)  # keras-hub takes a str
    if isinstance(preset, str) and os.path.isdir(preset):
        check_format(preset)
    return preset


def check_format(directory: str) -> None:
    """Raise ``ValueError`` if the preset in ``directory`` was written in a newer format than
    this release reads, or lacks a file it was saved with (its ``lambda_keras.json``; a
    preset without one is keras-hub's own, left to keras-hub). keras-hub's own loader builds a
    classifier whose ``task.weights.h5`` is missing with a new, untrained head (its way to
    start a task from a backbone's preset): the project's classes refuse it instead."""
    path = os.path.join(directory, FORMAT_FILE)
    if not os.path.exists(path):
        return
    try:
        with open(path) as f:
            written = json.load(f)
        version = written.get("preset_format", PRESET_FORMAT)
        files = written.get("files", [])
        if not isinstance(version, int) or not isinstance(files, list):
            raise TypeError(f"preset_format {version!r}, files {files!r}")
    except (OSError, ValueError, TypeError, AttributeError) as error:
        raise ValueError(
            f"The preset file {path!r} is damaged ({error}): nothing was loaded. Save the preset "
            "again, or copy it whole."
        ) from error
    if version > PRESET_FORMAT:
        raise ValueError(
            f"The preset {directory!r} was written by lambda_keras "
            f"{written.get('lambda_keras_version', '?')} in preset format "
            f"{version}; lambda_keras {lambda_keras.__version__} reads format "
            f"{PRESET_FORMAT} and older. Upgrade: pip install -U lambda_keras."
        )
    missing = [name for name in files if not os.path.exists(os.path.join(directory, name))]
    if missing:
        raise ValueError(
            f"The preset {directory!r} lacks {missing}, saved with it: nothing was loaded. "
            "Copy the whole directory, or save the preset again."
        )


def write_format(directory: str) -> None:
    """Write ``lambda_keras.json`` into ``directory``: this release, its preset format and the
    files keras-hub saved there."""
    written = {
        "preset_format": PRESET_FORMAT,
        "lambda_keras_version": lambda_keras.__version__,
        "files": sorted(name for name in os.listdir(directory) if name != FORMAT_FILE),
    }
    with open(os.path.join(directory, FORMAT_FILE), "w") as f:
        json.dump(written, f, indent=1)


def check_saved_arguments(cls: type, config: dict) -> None:
    """Raise ``ValueError`` naming the arguments of a saved configuration that ``cls``'s
    constructor does not take (a preset saved by a newer release), before anything is built."""
    parameters = inspect.signature(cls.__init__).parameters
    known = set(parameters) | {"name", "trainable", "dtype"}
    unknown = sorted(set(config) - known)
    if unknown:
        raise ValueError(
            f"The saved configuration of {cls.__name__} has arguments that lambda_keras "
            f"{lambda_keras.__version__} does not know: {unknown}. It was probably saved by a "
            "newer release: pip install -U lambda_keras."
        )


def project_presets(cls: type) -> type:
    """Class decorator for the project's keras-hub classes: ``from_preset`` also takes the
    project's preset names (``list_presets()``, resolved to their checked directories) and
    checks a directory's format; ``save_to_preset`` writes ``lambda_keras.json`` beside
    keras-hub's files. The methods are set on ``cls`` itself (no mixin base), so that a
    classifier's direct base stays keras-hub's task class, the task keras-hub names in a
    preset's metadata."""

    def from_preset(klass, preset, load_weights: bool = True, **kwargs):
        """keras-hub's ``from_preset``, with the project's preset names (``list_presets()``)
        resolved to their checked directories first."""
        return super(cls, klass).from_preset(resolve(preset), load_weights=load_weights, **kwargs)

    def save_to_preset(self, preset_dir, **kwargs) -> None:
        """keras-hub's ``save_to_preset``, plus ``lambda_keras.json`` (module docstring)."""
        super(cls, self).save_to_preset(preset_dir, **kwargs)
        write_format(os.fspath(preset_dir))

    cls.from_preset = classmethod(from_preset)
    cls.save_to_preset = save_to_preset
    return cls
