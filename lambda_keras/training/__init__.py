"""Training support behind the absl scripts in ``training/``: input pipelines (:mod:`.data`),
the paper's recipes (:mod:`.recipes`), distribution strategies (:mod:`.distribute`), one training
run (:mod:`.trainer`), serving export (:mod:`.serving`) and evaluation (:mod:`.evaluation`).

Training runs with Keras on TensorFlow or JAX; on both, the input pipelines are ``tf.data``, so
TensorFlow must be installed (the ``[cpu]``, ``[jax]`` and ``[tpu]`` extras bring it).
"""

from lambda_keras.backend.requirements import require_tensorflow

require_tensorflow("lambda_keras.training", "reads its data with tf.data")
