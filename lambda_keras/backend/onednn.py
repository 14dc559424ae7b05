"""TensorFlow's oneDNN CPU kernels: on by default when ``lambda_keras`` is imported first.

TensorFlow turns oneDNN on by default only on x86 CPUs with AVX-512 (VNNI/BF16) or AMX. Without
it, on AVX2-only CPUs, its 3-D and depthwise convolutions, the lambda convolution's
``implementation="conv"`` and ``"depthwise"``, are 3-13x slower, and a LambdaResNet pyramid
backbone, which runs the lambda convolution on every map, 4.7x slower (docs/backends.md,
"TensorFlow on CPUs without AVX-512: oneDNN").
TensorFlow reads ``TF_ENABLE_ONEDNN_OPTS`` once, when it is imported, so the package sets it
before it imports Keras, unless the variable is set (the user's choice wins) or TensorFlow is
already imported; in that last case the lambda layer warns once when it runs a convolution
without oneDNN. This module imports neither Keras nor TensorFlow.
"""

from __future__ import annotations

import os
import platform
import sys
import warnings
from collections.abc import MutableMapping
from functools import cache

__all__ = ["VARIABLE", "prefer_onednn", "warn_slow_convolutions"]

VARIABLE = "TF_ENABLE_ONEDNN_OPTS"
"""The environment variable TensorFlow reads once, on import, to turn oneDNN on (`1`) or off
(`0`)."""
X86 = ("x86_64", "amd64", "i386", "i686")


def prefer_onednn(
    environ: MutableMapping[str, str] = os.environ,
    modules: dict | None = None,
    machine: str | None = None,
) -> bool:
    """Sets ``TF_ENABLE_ONEDNN_OPTS=1`` if it is unset, TensorFlow is not imported yet and the
    CPU is x86 (where it was measured). Returns whether it set the variable."""
    modules = sys.modules if modules is None else modules
    machine = (platform.machine() if machine is None else machine).lower()
    if VARIABLE in environ or "tensorflow" in modules or machine not in X86:
        return False
    environ[VARIABLE] = "1"
    return True


@cache
def warn_slow_convolutions() -> None:
    """Warns, once per process, that TensorFlow runs the lambda convolution without oneDNN."""
    warnings.warn(
        "TensorFlow runs without oneDNN on this CPU (its default without AVX-512), where the "
        "lambda convolution (implementation='conv' or 'depthwise', as in the pyramid "
        f"backbones) is 3-13x slower. Set {VARIABLE}=1 before TensorFlow is imported (importing "
        f"lambda_keras first does it unless {VARIABLE} is set), or use implementation='einsum' "
        "where its memory fits.",
        RuntimeWarning,
        stacklevel=3,
    )
