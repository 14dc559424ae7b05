"""Training support behind the absl scripts in ``scripts/``: input pipelines
([`data`][lambda_keras.training.data]), the paper's recipes
([`recipes`][lambda_keras.training.recipes]), distribution strategies
([`distribute`][lambda_keras.training.distribute]), one training run
([`trainer`][lambda_keras.training.trainer]), serving export
([`serving`][lambda_keras.training.serving]) and evaluation
([`evaluation`][lambda_keras.training.evaluation]).

Training runs with Keras on TensorFlow or JAX; on both, the input pipelines are ``tf.data``, so
TensorFlow must be installed (the ``[cpu]``, ``[jax]`` and ``[tpu]`` extras bring it).
"""

from lambda_keras.backend.requirements import require_tensorflow

require_tensorflow("lambda_keras.training", "reads its data with tf.data")
