"""Checks of sizes that are known only when a TensorFlow graph runs.

JAX traces and PyTorch runs with concrete shapes, so the layers check every size in Python
(a ``ValueError`` before anything is built). Only TensorFlow builds graphs in which a dimension
can be a tensor (a model with inputs ``[None, None, None, 3]`` under ``tf.function``); a size
such a dimension breaks is checked when the graph runs, by the assertion here. ``keras.ops`` has
no assertion op, so this is the one place where the layers reach TensorFlow itself, and only
when they were handed a TensorFlow tensor.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["is_dynamic", "assert_when_run", "after_checks"]


def is_dynamic(size) -> bool:
    """Whether ``size`` (an entry of ``keras.ops.shape``) is known only when the graph runs."""
    return not isinstance(size, int) and hasattr(size, "dtype")


def assert_when_run(condition, message: str, sizes: Sequence):
    """A TensorFlow assertion that fails with ``message`` and the values of ``sizes``.

    Returns:
        The assertion op inside a graph, None when run eagerly (where it has already run).
    """
    import tensorflow as tf

    sizes = tf.stack([tf.cast(size, tf.int32) for size in sizes])
    # No quotes in the message: TensorFlow escapes them in the error.
    return tf.debugging.Assert(condition, [message, sizes])


def after_checks(x, checks: list):
    """``x``, computed only once every check in ``checks`` has passed."""
    checks = [check for check in checks if check is not None]
    if not checks:
        return x
    import tensorflow as tf

    with tf.control_dependencies(checks):
        return tf.identity(x)
