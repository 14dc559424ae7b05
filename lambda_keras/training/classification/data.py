"""Input pipelines: image classification sources and ImageNet-style preprocessing in ``tf.data``.

Sources yield ``(image uint8 [h, w, 3], label int32)`` pairs:

* [`digits_source`][lambda_keras.training.classification.data.digits_source] — scikit-learn's 1,797
real 8x8
  handwritten digits (shipped inside the scikit-learn wheel: no download), upsampled so the models'
  /32 downsampling fits;
* [`folder_source`][lambda_keras.training.classification.data.folder_source] —
``root/<class>/*.jpg|png`` (class
  names sorted);
* [`tfds_source`][lambda_keras.training.classification.data.tfds_source] — any TFDS
image-classification builder by
  name, with ``data_dir`` and ``manual_dir`` (ImageNet needs its archives in ``manual_dir``).

[`make_dataset`][lambda_keras.training.classification.data.make_dataset] turns a source into
batches for
``model.fit``: random-resized crop and flip (training) or centre crop (evaluation), optional
RandAugment, ImageNet normalisation, one-hot labels, optional MixUp/CutMix, batching by the global
batch size, ``AUTOTUNE`` parallelism and
prefetch. Every augmentation runs in ``tf.data``, never in the model (TPUs cannot compile it).
"""

from __future__ import annotations

import dataclasses
import difflib
import os
from collections.abc import Callable

import keras
import numpy as np
import tensorflow as tf

from lambda_keras import _validation as v
from lambda_keras import zoo
from lambda_keras.image_files import is_damaged_image
from lambda_keras.preprocessing import check_crop_fraction, eval_image, normalize
from lambda_keras.training.classification.config import ClassificationConfig, flips
from lambda_keras.training.classification.recipes import Recipe

__all__ = [
    "Inputs",
    "Source",
    "digits_source",
    "folder_source",
    "is_damaged_image",
    "load_source",
    "make_dataset",
    "make_inputs",
    "pad_batches",
    "randaugment_factor",
    "tfds_source",
]

AUTOTUNE = tf.data.AUTOTUNE
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".gif")


@dataclasses.dataclass
class Source:
    """A split of an image classification data set.

    Attributes:
        dataset: ``tf.data.Dataset`` of ``(image uint8 [h, w, 3], label int32)``.
        num_examples: Number of examples.
        class_names: Names of the classes, index = label.
        skipped: Files of the split left out because they are damaged or truncated (folder
            sources); ``num_examples`` counts the others.
    """

    dataset: tf.data.Dataset
    num_examples: int
    class_names: list[str]
    skipped: tuple[str, ...] = ()

    @property
    def num_classes(self) -> int:
        return len(self.class_names)


def digits_split(split: str, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's digits, ``split`` ``"train"`` (80%) or ``"test"`` (20%), fixed shuffle.

    Returns:
        ``images`` float64 ``[n, 8, 8]`` with values 0..16, ``labels`` int32 ``[n]``.
    """
    if split not in ("train", "test"):
        raise ValueError(f"`split` must be 'train' or 'test'; received split={split!r}.")
    try:
        from sklearn.datasets import load_digits
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            "The digits data set needs scikit-learn: pip install scikit-learn"
        ) from err
    digits = load_digits()
    order = np.random.default_rng(seed).permutation(len(digits.images))
    cut = int(0.8 * len(order))
    index = order[:cut] if split == "train" else order[cut:]
    return digits.images[index], digits.target[index].astype("int32")


def digits_source(split: str, image_size: int = 32, seed: int = 0) -> Source:
    """[`digits_split`][lambda_keras.training.classification.data.digits_split] as a source: the
    8x8 images (values
    0..16) scaled to 0..255, upsampled to ``image_size`` (nearest neighbour) and repeated over 3
    channels."""
    v.positive_int("image_size", image_size)
    images, labels = digits_split(split, seed)
    images = np.round(images * (255.0 / 16.0)).astype("uint8")
    images = tf.image.resize(images[..., None], (image_size, image_size), "nearest")
    images = tf.cast(tf.tile(images, [1, 1, 1, 3]), tf.uint8)
    dataset = tf.data.Dataset.from_tensor_slices((images, labels))
    return Source(dataset, len(labels), [str(d) for d in range(10)])


def folder_source(root: str) -> Source:
    """Images under ``root/<class name>/``; labels are the sorted class names' indices."""
    if not os.path.isdir(root):
        raise ValueError(f"The image folder {root!r} does not exist.")
    class_names = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    paths, labels = [], []
    for label, name in enumerate(class_names):
        for file in sorted(os.listdir(os.path.join(root, name))):
            if file.lower().endswith(IMAGE_EXTENSIONS):
                paths.append(os.path.join(root, name, file))
                labels.append(label)
    if not paths:
        raise ValueError(
            f"No images ({', '.join(IMAGE_EXTENSIONS)}) found in {root!r}: the layout is "
            "root/<class name>/<image>."
        )
    if len(class_names) < 2:
        raise ValueError(
            f"The image folder {root!r} has {len(class_names)} class folder(s) "
            f"({class_names}); classification needs at least 2 (root/<class name>/<image>)."
        )
    damaged = [path for path in paths if is_damaged_image(path)]
    if damaged:
        keep = [i for i, path in enumerate(paths) if path not in set(damaged)]
        paths, labels = [paths[i] for i in keep], [labels[i] for i in keep]
        shown = "\n  ".join(damaged[:10]) + ("\n  ..." if len(damaged) > 10 else "")
        print(
            f"Skipped {len(damaged)} damaged or truncated image file(s) of {root!r} "
            f"(kept {len(paths)}):\n  {shown}"
        )

    def load(path, label):
        image = tf.io.decode_image(tf.io.read_file(path), channels=3, expand_animations=False)
        return image, label

    dataset = tf.data.Dataset.from_tensor_slices((paths, np.array(labels, "int32")))
    dataset = dataset.map(load, num_parallel_calls=AUTOTUNE)
    return Source(dataset, len(paths), class_names, tuple(damaged))


def tfds_source(
    name: str, split: str, data_dir: str | None = None, manual_dir: str | None = None
) -> Source:
    """A TFDS image-classification split (``as_supervised``), prepared on first use.

    Args:
        name: a TFDS builder whose supervised keys are an ``Image`` and a ``ClassLabel``
            (``imagenet2012``, ``imagenette/160px``, ``cifar10``, ``mnist``, ...).
        split: a split or split expression (``"train"``, ``"train[:90%]"``).
        data_dir: TFDS data directory (default ``~/tensorflow_datasets``).
        manual_dir: where data sets that cannot be downloaded (``imagenet2012``) find their
            archives.

    Raises:
        ValueError: an unknown name, a builder that is not image classification (checked
            before anything is downloaded), a missing manual directory, an unknown split.
    """
    try:
        import tensorflow_datasets as tfds
    except ImportError as err:
        raise ValueError(
            f"--dataset={name!r} is neither 'digits' nor 'folder:<root>', so it would be a "
            "TensorFlow Datasets name, and tensorflow-datasets is not installed (pip install "
            '"lambda-keras[tfds]"). Check the name, or install TFDS.'
        ) from err
    try:
        builder = tfds.builder(name, data_dir=data_dir)
    except tfds.core.registered.DatasetNotFoundError as err:
        close = difflib.get_close_matches(name, tfds.list_builders(), n=3)
        raise ValueError(
            f"--dataset={name!r} is neither 'digits', 'folder:<root>' nor a TFDS data set"
            + (f"; did you mean {', '.join(close)}?" if close else ".")
        ) from err
    keys = builder.info.supervised_keys
    features = builder.info.features
    if not (
        isinstance(keys, tuple)
        and len(keys) == 2
        and isinstance(features[keys[0]], tfds.features.Image)
        and isinstance(features[keys[1]], tfds.features.ClassLabel)
    ):
        raise ValueError(
            f"--dataset={name!r} is not an image classification data set: its supervised keys "
            f"are {keys!r}; an (Image, ClassLabel) pair is needed."
        )
    try:
        builder.download_and_prepare(
            download_config=tfds.download.DownloadConfig(manual_dir=manual_dir)
        )
    except AssertionError as err:  # TFDS asserts on a missing manual_dir
        raise ValueError(f"--manual_dir={manual_dir!r}: {err}") from err
    available = sorted(builder.info.splits.keys())
    if available and split.split("[")[0] not in available:
        raise ValueError(f"--dataset={name!r} has splits {available}; received {split!r}.")
    dataset = builder.as_dataset(split=split, as_supervised=True, shuffle_files=False)
    try:  # split expressions such as "train[:90%]" included
        num_examples = builder.info.splits[split].num_examples
    except KeyError:  # no split metadata (e.g. tfds.testing.mock_data): count
        num_examples = int(dataset.cardinality())
        if num_examples < 0:
            num_examples = int(dataset.reduce(0, lambda count, _: count + 1))
    dataset = dataset.map(lambda image, y: (_three_channels(image), tf.cast(y, tf.int32)))
    return Source(dataset, num_examples, list(features[keys[1]].names))


def load_source(
    dataset: str,
    split: str,
    *,
    image_size: int = 32,
    seed: int = 0,
    data_dir: str | None = None,
    manual_dir: str | None = None,
) -> Source:
    """A split of ``digits``, ``folder:<root>`` (``<root>/<split>/<class>/...``) or a TFDS name.

    ``image_size`` and ``seed`` apply to the digits (upsampling, train/test split);
    ``data_dir`` and ``manual_dir`` to TFDS.
    """
    if not isinstance(dataset, str):
        raise TypeError(
            "`dataset` must be 'digits', 'folder:<root>' or a TFDS name; received "
            f"{type(dataset).__name__}."
        )
    if dataset == "digits":
        return digits_source(split, image_size=image_size, seed=seed)
    if dataset.startswith("folder:"):
        return folder_source(os.path.join(dataset.removeprefix("folder:"), split))
    return tfds_source(dataset, split, data_dir, manual_dir)


def _three_channels(image):
    return tf.image.grayscale_to_rgb(image) if image.shape[-1] == 1 else image


def randaugment_factor(magnitude: float) -> float:
    """Keras ``RandAugment`` factor for a paper magnitude on RandAugment's 0..30 scale."""
    return float(np.clip(magnitude / 30.0, 0.0, 1.0))


def random_resized_crop(image, size: int, seed, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)):
    """Inception-style crop: a random area fraction ``scale`` and aspect ``ratio``, resized."""
    begin, extent, _ = tf.image.stateless_sample_distorted_bounding_box(
        tf.shape(image),
        bounding_boxes=tf.constant([[[0.0, 0.0, 1.0, 1.0]]]),
        seed=seed,
        min_object_covered=0.0,
        aspect_ratio_range=ratio,
        area_range=scale,
        max_attempts=10,
        use_image_if_no_bounding_boxes=True,
    )
    crop = tf.slice(image, begin, extent)
    crop.set_shape([None, None, image.shape[-1]])
    return tf.image.resize(crop, (size, size), method="bicubic", antialias=True)


def _check_dataset_arguments(
    *,
    image_size,
    global_batch_size,
    crop_fraction,
    crop_scale,
    randaugment_magnitude,
    mixup_alpha,
    cutmix_alpha,
    shuffle_buffer,
) -> None:
    """[`make_dataset`][lambda_keras.training.classification.data.make_dataset]'s arguments, before
    a pipeline is
    built (a bad value would fail in a map function at the first batch, or not at all)."""
    v.positive_int("image_size", image_size)
    v.positive_int("global_batch_size", global_batch_size)
    check_crop_fraction(crop_fraction)
    if not isinstance(crop_scale, (tuple, list)) or len(crop_scale) != 2:
        raise ValueError(
            f"`crop_scale` must be (min, max) area fractions; received crop_scale={crop_scale!r}."
        )
    low = v.number_in("crop_scale", crop_scale[0], 0.0, 1.0, low_open=True)
    if v.number_in("crop_scale", crop_scale[1], 0.0, 1.0, low_open=True) < low:
        raise ValueError(
            f"`crop_scale` must be (min, max) with min <= max; received crop_scale={crop_scale!r}."
        )
    if randaugment_magnitude is not None:
        v.number_in("randaugment_magnitude", randaugment_magnitude, 0.0, 30.0)
    v.number_in("mixup_alpha", mixup_alpha, 0.0, float("inf"), high_open=True)
    v.number_in("cutmix_alpha", cutmix_alpha, 0.0, float("inf"), high_open=True)
    v.positive_int("shuffle_buffer", shuffle_buffer)


def make_dataset(
    source: Source,
    *,
    training: bool,
    image_size: int,
    global_batch_size: int,
    seed: int = 0,
    crop_fraction: float = 0.875,
    crop_scale: tuple[float, float] = (0.08, 1.0),
    horizontal_flip: bool = True,
    randaugment_magnitude: float | None = None,
    mixup_alpha: float = 0.0,
    cutmix_alpha: float = 0.0,
    shuffle_buffer: int = 10_000,
    deterministic: bool = False,
    repeat: bool = False,
    input_context: tf.distribute.InputContext | None = None,
) -> tf.data.Dataset:
    """Batches of ``(images float32 [b, s, s, 3] ImageNet-normalised, one-hot labels [b, c])``.

    Training: shuffle, random-resized crop (area fraction ``crop_scale``, aspect 3/4..4/3),
    horizontal flip, RandAugment (magnitude on the 0..30 scale, 2 ops), then per batch MixUp or
    CutMix when their alpha is > 0. Evaluation: centre crop with ``crop_fraction``. Training
    batches drop the remainder so every replica gets the same per-replica batch;
    ``global_batch_size`` = per-replica batch x replicas.

    ``input_context`` (from ``strategy.distribute_datasets_from_function``): one input pipeline
    of several (one per worker). Every pipeline draws the same seeded shuffle and per-example
    augmentation seeds, keeps every ``num_input_pipelines``-th example from its
    ``input_pipeline_id`` on and batches by the per-replica batch: each pipeline decodes and
    augments only its own examples, and the replicas' batches at one step together hold the
    global batch a single pipeline would have made (exactly, with ``deterministic=True``).
    """
    _check_dataset_arguments(
        image_size=image_size,
        global_batch_size=global_batch_size,
        crop_fraction=crop_fraction,
        crop_scale=crop_scale,
        randaugment_magnitude=randaugment_magnitude,
        mixup_alpha=mixup_alpha,
        cutmix_alpha=cutmix_alpha,
        shuffle_buffer=shuffle_buffer,
    )
    batch_size = global_batch_size
    if input_context is not None:
        batch_size = input_context.get_per_replica_batch_size(global_batch_size)
    options = tf.data.Options()
    options.deterministic = deterministic
    dataset = source.dataset.with_options(options)
    if training:
        dataset = _seeded_examples(dataset, source.num_examples, shuffle_buffer, seed, repeat)
        dataset = _shard(dataset, input_context)
        dataset = _augment(
            dataset,
            image_size,
            seed,
            crop_scale,
            horizontal_flip,
            randaugment_magnitude,
            deterministic,
        )
    else:
        dataset = dataset.map(
            lambda image, label: (eval_image(image, image_size, crop_fraction), label),
            num_parallel_calls=AUTOTUNE,
        )
    num_classes = source.num_classes

    def finish(image, label):
        image = normalize(image)
        return tf.ensure_shape(image, (image_size, image_size, 3)), tf.one_hot(label, num_classes)

    dataset = dataset.map(finish, num_parallel_calls=AUTOTUNE)
    dataset = dataset.batch(batch_size, drop_remainder=training)
    if training and (mixup_alpha > 0 or cutmix_alpha > 0):
        coins = tf.data.Dataset.random(seed=seed + 1)
        dataset = tf.data.Dataset.zip((dataset, coins)).map(
            _batch_mixer(mixup_alpha, cutmix_alpha, seed), num_parallel_calls=AUTOTUNE
        )
    return dataset.prefetch(AUTOTUNE)


def pad_batches(dataset: tf.data.Dataset, batch_size: int) -> tf.data.Dataset:
    """Batches ``(images, labels)`` of at most ``batch_size`` padded to exactly ``batch_size``,
    with sample weights ``[batch_size]`` that are 0 on the padding: ``(images, labels, weights)``.

    ``keras.distribution.DataParallel`` splits every batch evenly over the devices (and, on
    several hosts, needs a static batch size to share it out), so the last, smaller batch of an
    evaluation split is padded; weighted metrics leave the padding out, and every real image is
    scored once. The padding repeats the batch's own examples (real inputs: no NaN that a weight
    of 0 would not hide).
    """
    v.positive_int("batch_size", batch_size)

    def pad(images, labels):
        count = tf.shape(images)[0]
        weights = tf.concat([tf.ones([count]), tf.zeros([batch_size - count])], axis=0)
        index = tf.range(batch_size) % count
        images, labels = tf.gather(images, index), tf.gather(labels, index)
        return (
            tf.ensure_shape(images, [batch_size, *images.shape[1:]]),
            tf.ensure_shape(labels, [batch_size, *labels.shape[1:]]),
            tf.ensure_shape(weights, [batch_size]),
        )

    return dataset.map(pad, num_parallel_calls=AUTOTUNE)


def _seeded_examples(dataset, num_examples: int, shuffle_buffer: int, seed: int, repeat: bool):
    """Shuffled (and repeated) examples, each paired with its own augmentation seed drawn from
    the dataset seed: ``((image, label), seed [2])``."""
    dataset = dataset.shuffle(
        min(shuffle_buffer, num_examples), seed=seed, reshuffle_each_iteration=True
    )
    if repeat:
        dataset = dataset.repeat()
    seeds = tf.data.Dataset.random(seed=seed).batch(2)
    return tf.data.Dataset.zip((dataset, seeds))


def _shard(dataset, input_context: tf.distribute.InputContext | None):
    """This input pipeline's share of the examples: every n-th from its id on."""
    if input_context is None or input_context.num_input_pipelines <= 1:
        return dataset
    return dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)


def _augment(
    dataset, image_size, seed, crop_scale, horizontal_flip, randaugment_magnitude, deterministic
):
    """Random-resized crop, flip and RandAugment of ``((image, label), seed)`` examples."""

    def crop_and_flip(example, pair_seed):
        image, label = example
        image = tf.cast(image, tf.float32)
        image = random_resized_crop(image, image_size, pair_seed, scale=crop_scale)
        if horizontal_flip:
            image = tf.image.stateless_random_flip_left_right(image, pair_seed + 1)
        return tf.clip_by_value(image, 0.0, 255.0), label

    dataset = dataset.map(crop_and_flip, num_parallel_calls=AUTOTUNE)
    if not randaugment_magnitude:
        return dataset
    augment = keras.layers.RandAugment(
        value_range=(0, 255),
        num_ops=2,
        factor=randaugment_factor(randaugment_magnitude),
        seed=seed,
    )
    # Keras' RandAugment draws from a stateful seed generator: in parallel calls the draws'
    # order varies, so deterministic pipelines apply it sequentially.
    return dataset.map(
        lambda image, label: (augment(image), label),
        num_parallel_calls=None if deterministic else AUTOTUNE,
    )


def _batch_mixer(mixup_alpha: float, cutmix_alpha: float, seed: int):
    """MixUp and/or CutMix on whole batches (Keras layers; half the batches each when both)."""
    mixup = keras.layers.MixUp(alpha=mixup_alpha, seed=seed) if mixup_alpha > 0 else None
    cutmix = keras.layers.CutMix(factor=cutmix_alpha, seed=seed) if cutmix_alpha > 0 else None

    def apply(layer, images, labels):
        out = layer({"images": images, "labels": labels})
        return out["images"], out["labels"]

    def mix(batch, coin):
        images, labels = batch
        if mixup is None:
            return apply(cutmix, images, labels)
        if cutmix is None:
            return apply(mixup, images, labels)
        return tf.cond(
            coin % 2 == 0,
            lambda: apply(mixup, images, labels),
            lambda: apply(cutmix, images, labels),
        )

    return mix


@dataclasses.dataclass
class Inputs:
    """A run's data: the training source, its pipeline factory (called with a
    ``tf.distribute.InputContext`` by the custom loop, with nothing by ``fit``), the evaluation
    batches and the damaged files each split left out (``{split: count}``)."""

    train: Source
    train_dataset: Callable[[tf.distribute.InputContext | None], tf.data.Dataset]
    eval_dataset: tf.data.Dataset
    skipped: dict[str, int]


def _check_same_classes(config: ClassificationConfig, sources: dict[str, Source]) -> None:
    """A label means the same class in both splits: a folder data set labels each split by its
    own sorted class folders, so splits with other folders would be scored against the wrong
    classes."""
    train, evaluation = sources[config.train_split], sources[config.eval_split]
    if train.class_names == evaluation.class_names:
        return
    only = {
        split: sorted(set(source.class_names) - set(other.class_names))
        for split, source, other in (
            (config.train_split, train, evaluation),
            (config.eval_split, evaluation, train),
        )
    }
    raise ValueError(
        f"The splits {config.train_split!r} and {config.eval_split!r} of {config.dataset!r} "
        f"have other classes (only in {config.train_split!r}: {only[config.train_split]}; "
        f"only in {config.eval_split!r}: {only[config.eval_split]}): a label is the index of "
        "a class among its split's sorted class names, so it would name another class in the "
        "other split. Give both splits the same class folders."
    )


def make_inputs(config: ClassificationConfig, recipe: Recipe) -> Inputs:
    """The training and evaluation splits of ``config.dataset`` and their pipelines: the
    config's augmentation, the recipe's RandAugment magnitude for the model."""
    sources = {
        split: load_source(
            config.dataset,
            split,
            image_size=config.image_size,
            seed=config.seed,
            data_dir=config.data_dir,
            manual_dir=config.manual_dir,
        )
        for split in (config.train_split, config.eval_split)
    }
    _check_same_classes(config, sources)
    train_source = sources[config.train_split]
    flip = flips(config)
    magnitude = recipe.randaugment_magnitude(zoo.model_info(config.model), config.image_size)

    def train_dataset(input_context=None):
        return make_dataset(
            train_source,
            training=True,
            image_size=config.image_size,
            global_batch_size=config.batch_size,
            seed=config.seed,
            repeat=True,
            crop_scale=(config.crop_min_area, 1.0),
            horizontal_flip=flip,
            randaugment_magnitude=magnitude,
            mixup_alpha=config.mixup_alpha,
            cutmix_alpha=config.cutmix_alpha,
            deterministic=config.deterministic,
            input_context=input_context,
        )

    eval_dataset = make_dataset(
        sources[config.eval_split],
        training=False,
        image_size=config.image_size,
        global_batch_size=config.batch_size,
    )
    skipped = {split: len(source.skipped) for split, source in sources.items()}
    return Inputs(train_source, train_dataset, eval_dataset, skipped)
