"""Lower training and predict steps for TPUs and GPUs on this CPU (run with Keras on JAX).

``jax.export`` lowers a jitted step for other platforms without their devices: a step that
needs a host callback, a CPU-only custom call or a shape known only at run time fails here, as
it would on a TPU. Each model's ``train_step`` and ``predict_step`` (Keras' JAX trainer: pure
functions of the variables' values) is lowered for ``("tpu", "cuda")`` on one tiny batch; the
script prints one line per step and model, ``lowered <model> <step> <platforms> <inputs>``.

``python tests/backend/accelerator_lowering.py [MODEL ...]`` (all models when none is named).
"""

from __future__ import annotations

import os
import sys

os.environ["KERAS_BACKEND"] = "jax"

import jax  # noqa: E402
import keras  # noqa: E402
import numpy as np  # noqa: E402

PLATFORMS = ("tpu", "cuda")
# Each builder returns the model (compiled), a training batch (x, y) and a batch to predict on.
# Signs in the lowered module of a step that runs on the host, not the accelerator.
HOST_MARKERS = ("callback", "host_compute", "lapack", "ducc")


def zoo_classifier():
    from lambda_keras import zoo

    model = zoo.model_builder("lambda_resnet50")(
        input_shape=(32, 32, 3), classes=10, width_multiplier=0.125
    )
    model.compile(
        optimizer=keras.optimizers.SGD(0.1, momentum=0.9),
        loss=keras.losses.CategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, (2, 32, 32, 3)).astype("float32")
    y = np.eye(10, dtype="float32")[[1, 7]]
    return model, x, y, x


def _targets(batch, size):
    from tests.detection.tiny import synthetic_batch

    return synthetic_batch(batch=batch, size=size)


def lambda_resnet_maskrcnn():
    from lambda_keras import zoo
    from lambda_keras.detection import MaskRCNN
    from tests.detection.tiny import TINY_HEADS

    backbone = zoo.LambdaResNetBackbone(50, width_multiplier=0.125)
    model = MaskRCNN(backbone, num_classes=3, **TINY_HEADS)
    model.compile(optimizer=keras.optimizers.SGD(0.01, momentum=0.9))
    x, y = _targets(2, 64)
    return model, x, y, x


def torchvision_maskrcnn():
    from lambda_keras.detection import maskrcnn_resnet50_fpn

    model = maskrcnn_resnet50_fpn(None, num_classes=3, rpn_top_k=(100, 50, 50, 40))
    model.compile(optimizer=keras.optimizers.SGD(0.01, momentum=0.9))
    images, y = _targets(2, 64)
    # Trained on whole square images (as train_maskrcnn.py does); served on images of their own
    # sizes inside the batch, as torchvision's transform pads them.
    served = {"images": images, "image_sizes": np.array([[64, 64], [48, 64]], "int32")}
    return model, images, y, served


MODELS = {
    "lambda_resnet50": zoo_classifier,
    "maskrcnn_lambda_resnet50": lambda_resnet_maskrcnn,
    "maskrcnn_resnet50_fpn": torchvision_maskrcnn,
}


def lower(function, *args) -> jax.export.Exported:
    """``function`` jitted and lowered for ``PLATFORMS``; refused when a step would run on the
    host or its shapes are not static."""
    exported = jax.export.export(jax.jit(function), platforms=PLATFORMS)(*args)
    text = exported.mlir_module()
    found = [marker for marker in HOST_MARKERS if marker in text]
    if found:
        raise AssertionError(f"the lowered step runs on the host: {found}")
    for aval in (*exported.in_avals, *exported.out_avals):
        if not all(isinstance(d, int) for d in aval.shape):
            raise AssertionError(f"a shape is not static: {aval}")
    return exported


def lower_model(name: str) -> None:
    model, x, y, served = MODELS[name]()
    model._symbolic_build(data_batch=(x, y))  # optimizer and metric variables, as fit makes them
    trainable = [v.value for v in model.trainable_variables]
    non_trainable = [v.value for v in model.non_trainable_variables]
    optimizer = [v.value for v in model.optimizer.variables]
    metrics = [v.value for v in model.metrics_variables]
    state = (trainable, non_trainable, optimizer, metrics)
    train = lower(model.train_step, state, (x, y))
    print(f"lowered {name} train_step {','.join(PLATFORMS)} {len(train.in_avals)}")
    predict = lower(model.predict_step, (trainable, non_trainable), (served,))
    print(f"lowered {name} predict_step {','.join(PLATFORMS)} {len(predict.in_avals)}")


if __name__ == "__main__":
    for model_name in sys.argv[1:] or list(MODELS):
        lower_model(model_name)
