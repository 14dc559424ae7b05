"""The record of one published weights file:
[WeightsSpec][lambda_keras.zoo.weights_spec.WeightsSpec], what it may hold
([METRICS][lambda_keras.zoo.weights_spec.METRICS]) and its checks. The registry of such records
is [lambda_keras.zoo.weights][lambda_keras.zoo.weights]."""

from __future__ import annotations

import dataclasses

from lambda_keras.zoo.integrity import INTEGRITY_RULES, is_commit, is_sha256

__all__ = ["HUB_WEB", "METRICS", "PREPROCESSING_MODES", "SOURCE_FORMATS", "WeightsSpec"]

PREPROCESSING_MODES = ("torch", "tf", "caffe")
"""How a weights file expects its inputs: `torch` (ImageNet mean/std on `[0, 1]`), `tf` (`[-1,
1]`) or `caffe` (BGR, mean subtracted)."""
# A Keras .weights.h5 is loaded as it is; timm's and torchvision's checkpoints are converted once
# (register_converter).
SOURCE_FORMATS = ("keras", "timm", "torchvision")
"""The formats a registered file may come in: a Keras `.weights.h5`, a timm checkpoint or a
torchvision checkpoint (converted when loaded)."""
METRICS = {
    "imagenet_top1": "ImageNet-1k top-1 (%)",
    "imagenet_top5": "ImageNet-1k top-5 (%)",
    "coco_box_ap": "COCO val2017 box AP",
    "coco_mask_ap": "COCO val2017 mask AP",
}
"""The metrics a spec may carry: key -> what it is."""
# The Hub's public address, for the files' addresses shown to people.
HUB_WEB = "https://huggingface.co"
"""The Hugging Face Hub's web address: the pages that registered files and their digests are
read on."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class WeightsSpec:
    """A published weights file.

    Attributes:
        name: Registry name, passed as ``weights=name`` to a builder.
        architecture: The architecture the builder checks: the registry name of the model
            (see [list_models][lambda_keras.zoo.list_models]), for ``ResNet50`` with its
            layout and intra-depth (``"resnet50_ccll"``, ``"resnet50_llll_u4"``).
        input_size: Image side the weights are evaluated at: the builders' default input size
            with these weights, the export script's serving size and the metrics' resolution.
        url: Where the file is (``https://``, ``file://``, ...), or None for a Hub file.
        hub_repo: A Hugging Face Hub repository (``timm/<model>.<tag>``) holding the file.
        hub_filename: The file in ``hub_repo``.
        hub_revision: The Hub revision to fetch: a commit (40 hex digits, or a short id of 7 or
            more, resolved on the repository's commit list), or ``"main"``.
        integrity: How the file is checked, one of
            [INTEGRITY_RULES][lambda_keras.zoo.integrity.INTEGRITY_RULES]: ``"sha256"``
            (``sha256`` is the file's whole digest), ``"hub_commit"`` (the Hub's digest of the
            file at ``hub_revision``) or ``"hub_latest"`` (the Hub's digest on main).
        sha256: The file's SHA-256 (64 hex digits), with ``integrity="sha256"``.
        source: Where the digest or the commit was read (a URL), shown beside it.
        source_title: What ``source`` is, in a few words, shown instead of the rule's title
            where that does not say it (e.g. a whole digest read in third-party code, checked
            against the prefix its publisher gives).
        metrics: Measured quality of the weights, keys from
            [METRICS][lambda_keras.zoo.weights_spec.METRICS] (ImageNet top-1/top-5 at
            ``input_size`` and ``crop_fraction``, COCO AP).
        metrics_source: Where the metrics were read (a URL).
        preprocessing: ``keras.applications.imagenet_utils.preprocess_input`` mode the weights
            expect: ``"torch"`` (ImageNet mean/std, default), ``"tf"`` or ``"caffe"``.
        classes: Number of classes of the classifier the file holds.
        crop_fraction: Centre-crop fraction of the evaluation the weights were measured with.
        source_format: ``"keras"`` (a ``.weights.h5``), ``"timm"`` (timm's
            ``model.safetensors``) or ``"torchvision"`` (a ``.pth``), the last two converted
            on first use.
        aliases: Other names that select these weights for their architecture only, e.g.
            ``("imagenet",)``: ``weights="imagenet"``.
        license: The terms of the weights as their publisher states them, in a few words.
        license_source: Where those terms are stated (a URL).
    """

    name: str
    architecture: str
    input_size: int
    url: str | None = None
    hub_repo: str | None = None
    hub_filename: str = "model.safetensors"
    hub_revision: str | None = None
    integrity: str = "sha256"
    sha256: str | None = None
    source: str | None = None
    metrics: dict = dataclasses.field(default_factory=dict, hash=False)
    metrics_source: str | None = None
    preprocessing: str = "torch"
    classes: int = 1000
    crop_fraction: float = 0.875
    source_format: str = "keras"
    aliases: tuple[str, ...] = ()
    source_title: str | None = None
    license: str | None = None
    license_source: str | None = None

    def __post_init__(self):
        _check_choice("source_format", self.source_format, SOURCE_FORMATS)
        _check_choice("preprocessing", self.preprocessing, PREPROCESSING_MODES)
        _check_choice("integrity", self.integrity, tuple(INTEGRITY_RULES))
        if (self.url is None) == (self.hub_repo is None):
            raise ValueError(
                f"Weights {self.name!r} need exactly one of `url` and `hub_repo`; received "
                f"url={self.url!r}, hub_repo={self.hub_repo!r}."
            )
        self._check_rule()
        if (self.license is None) != (self.license_source is None):
            raise ValueError(
                f"Weights {self.name!r} need `license` and `license_source` together (the "
                f"terms and where they are stated); received license={self.license!r}, "
                f"license_source={self.license_source!r}."
            )
        unknown = sorted(set(self.metrics) - set(METRICS))
        if unknown or not all(isinstance(v, (int, float)) for v in self.metrics.values()):
            raise ValueError(
                f"`metrics` of {self.name!r} must map names from {sorted(METRICS)} to numbers; "
                f"received {self.metrics!r}."
            )

    def _check_rule(self) -> None:
        if self.integrity == "sha256" and not is_sha256(self.sha256):
            raise ValueError(
                "With integrity='sha256', `sha256` must be the file's whole SHA-256 (64 "
                f"lower-case hex digits); received {self.sha256!r} for weights {self.name!r}."
            )
        if self.integrity != "sha256" and self.sha256 is not None:
            raise ValueError(
                f"`sha256` goes with integrity='sha256'; weights {self.name!r} use "
                f"{self.integrity!r}, whose digest is the Hub's."
            )
        if self.hub_repo is None:
            if self.integrity != "sha256":
                raise ValueError(
                    f"integrity={self.integrity!r} checks a Hub file: weights {self.name!r} "
                    "need `hub_repo` (a file at a URL is checked by integrity='sha256')."
                )
            return
        revision = self.hub_revision
        allowed = {"hub_commit": is_commit(revision), "hub_latest": revision == "main"}
        allowed["sha256"] = revision == "main" or is_commit(revision)
        if not allowed[self.integrity]:
            what = {"hub_latest": "'main'", "hub_commit": "a commit (7-40 hex digits)"}
            raise ValueError(
                f"`hub_revision` of weights {self.name!r} must be "
                f"{what.get(self.integrity, 'a commit or main')} with integrity="
                f"{self.integrity!r}; received {revision!r}."
            )

    @property
    def origin(self) -> str:
        """Where the file is: its URL, or its Hub address and revision."""
        if self.url is not None:
            return self.url
        return f"{HUB_WEB}/{self.hub_repo}/blob/{self.hub_revision}/{self.hub_filename}"


def _check_choice(name: str, value, allowed: tuple) -> None:
    if value not in allowed:
        raise ValueError(f"`{name}` must be one of {allowed}; received {value!r}.")
