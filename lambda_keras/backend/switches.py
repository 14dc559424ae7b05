"""The project's on/off environment variables, read one way: ``1``, ``on`` or ``true`` turn a
switch on, ``0``, ``off`` or ``false`` turn it off (in any case, spaces around ignored), and
anything else is a ``ValueError`` that names the variable, the value and what is allowed.

The switches: ``LAMBDA_KERAS_TORCH_COMPILE``
([`torch_compiled_step`][lambda_keras.backend.torch_compiled_step], which also takes ``auto``
and ``torch.compile``'s modes), ``LAMBDA_KERAS_TORCH_CHANNELS_LAST``
([`torch_channels_last`][lambda_keras.backend.torch_channels_last]) and
``LAMBDA_KERAS_GLIBC_HEAP`` ([`glibc_heap`][lambda_keras.backend.glibc_heap]). This module
imports neither Keras nor PyTorch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["OFF", "ON", "read_switch"]

ON = ("1", "on", "true")
"""The values that turn a switch on."""

OFF = ("0", "off", "false")
"""The values that turn a switch off."""


def read_switch(
    environ: Mapping[str, str],
    variable: str,
    default: str,
    expected: str,
    names: Sequence[str] = (),
) -> bool | str:
    """Reads the switch ``variable`` from ``environ``.

    Args:
        environ: The environment to read.
        variable: The variable's name.
        default: Its value when unset: one of [`ON`][lambda_keras.backend.switches.ON],
            [`OFF`][lambda_keras.backend.switches.OFF] or ``names``.
        expected: What the variable takes, in words, for the error message.
        names: Further values the variable takes, lower case (a mode by name).

    Returns:
        True for a value of [`ON`][lambda_keras.backend.switches.ON], False for one of
        [`OFF`][lambda_keras.backend.switches.OFF], or the value of ``names`` given, lower case.

    Raises:
        ValueError: The variable holds something else.

    Examples:
        >>> environ = {"LAMBDA_KERAS_GLIBC_HEAP": "Off"}
        >>> read_switch(environ, "LAMBDA_KERAS_GLIBC_HEAP", "1", "1 or 0")
        False
        >>> read_switch({}, "LAMBDA_KERAS_TORCH_COMPILE", "auto", "...", ("auto",))
        'auto'
    """
    raw = environ.get(variable, default)
    value = raw.strip().lower()
    if value in ON:
        return True
    if value in OFF:
        return False
    if value in names:
        return value
    raise ValueError(f"{variable}={raw!r}: expected {expected}.")
