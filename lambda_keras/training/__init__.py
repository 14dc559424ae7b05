"""Training, apart from the models: a shared core and one sub-package per task.

The core, the same for every task: where a run executes
([`distribute`][lambda_keras.training.distribute]: a frozen
[`PlacementConfig`][lambda_keras.training.distribute.PlacementConfig] that both tasks' configs
embed; ``tf.distribute`` on TensorFlow, ``keras.distribution`` on JAX
([`data_parallel`][lambda_keras.training.data_parallel]), one device on PyTorch), resuming a
killed run ([`resume`][lambda_keras.training.resume]), the ``strategy.run`` loop
([`custom_loop`][lambda_keras.training.custom_loop]), a finished run's files
([`export`][lambda_keras.training.export]: ``model.keras``, a SavedModel written by a TensorFlow
process, ``labels.json``) and the scripts' flag checks
([`flag_checks`][lambda_keras.training.flag_checks]).

The tasks, each in the same modules (``config``, ``recipes``, ``data``, ``model``, ``trainer``,
``evaluation``): [`classification`][lambda_keras.training.classification] and
[`detection`][lambda_keras.training.detection]. The scripts in ``scripts/`` map their flags onto
a task's config.

Training runs with Keras on TensorFlow, JAX or PyTorch; the input pipelines are ``tf.data`` on
all three, so TensorFlow must be installed (the ``[cpu]``, ``[jax]`` and ``[tpu]`` extras bring
it).
"""

from lambda_keras.backend.requirements import require_tensorflow

require_tensorflow("lambda_keras.training", "reads its data with tf.data")
