"""A tiny deterministic training job for the multi-worker test.

``python multi_worker_job.py OUT``: with ``TF_CONFIG`` set, one worker of a
MultiWorkerMirroredStrategy cluster; without, a single worker. Trains a small lambda model (no
batch norm, whose statistics would be per replica) on fixed data with a global batch of 16 and
saves the final weights to ``OUT`` (``OUT.<worker index>`` for cluster workers).

A custom ``strategy.run`` loop, not ``model.fit``: Keras 3's ``fit`` fails under
MultiWorkerMirroredStrategy (keras-team/keras#20585, "Attempt to convert a value (PerReplica)").
"""

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from lambda_keras.layers import LambdaLayer  # noqa: E402
from lambda_keras.training.distribute import make_strategy  # noqa: E402

config = json.loads(os.environ.get("TF_CONFIG", "{}"))
strategy = make_strategy("multi_worker" if config else "auto")
rng = np.random.default_rng(0)
x = rng.normal(size=(64, 6, 6, 8)).astype("float32")
y = keras.utils.to_categorical(rng.integers(0, 3, 64), 3)
dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
options = tf.data.Options()
options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
dataset = dataset.with_options(options)

with strategy.scope():
    keras.utils.set_random_seed(0)
    inputs = keras.Input((6, 6, 8))
    h = LambdaLayer(8, key_dim=4, num_heads=2, scope_size=3, query_batch_norm=False,
                    value_batch_norm=False)(inputs)  # fmt: skip
    outputs = keras.layers.Dense(3, activation="softmax")(keras.layers.GlobalAveragePooling2D()(h))
    model = keras.Model(inputs, outputs)
    optimizer = keras.optimizers.SGD(0.5)


@tf.function
def train_step(batch):
    def replica_step(images, labels):
        with tf.GradientTape() as tape:
            per_example = keras.losses.categorical_crossentropy(labels, model(images))
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=16)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    return strategy.reduce("SUM", strategy.run(replica_step, args=batch), axis=None)


for _ in range(3):
    for batch in strategy.experimental_distribute_dataset(dataset):
        train_step(batch)
out = sys.argv[1] + (f".{config['task']['index']}" if config else "")
np.save(out, np.concatenate([w.ravel() for w in model.get_weights()]))
print("replicas", strategy.num_replicas_in_sync, "saved", out)
