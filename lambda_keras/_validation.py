"""Argument checks shared by the layers, the zoo and the training code.

Each check returns the value in its normalised form or raises an error that names the argument,
the value received and what is allowed, before anything is built.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet

import numpy as np

__all__ = [
    "Check",
    "boolean",
    "check_fields",
    "divisible",
    "extent",
    "implementation",
    "is_int",
    "is_number",
    "non_finite",
    "non_negative_int",
    "number_in",
    "number_or_none",
    "odd_window",
    "one_of",
    "optional",
    "positive_int",
    "positive_number",
    "scope",
    "sequence",
    "square_bool_mask",
]


Check = Callable[[str, object], object]
"""A check as this module writes them: ``check(name, value)`` returns the value, normalised, or
raises ``ValueError``/``TypeError`` naming ``name``."""


def optional(check: Check) -> Check:
    """``check``, with None allowed (an unset option: "the run's default")."""

    def check_or_none(name: str, value) -> object:
        return None if value is None else check(name, value)

    return check_or_none


def check_fields(obj: object, checks: Mapping[str, Check]) -> None:
    """Run ``checks[name](name, obj.name)`` for each name (a config's ``__post_init__``)."""
    for name, check in checks.items():
        check(name, getattr(obj, name))


def is_int(value) -> bool:
    """Whether ``value`` is an integer: an int (NumPy's too), not a bool (``2.0`` is not)."""
    return not isinstance(value, bool) and isinstance(value, (int, np.integer))


def non_finite(array: np.ndarray) -> tuple[tuple[int, ...], int] | None:
    """Where the first NaN or infinite value of a floating ``array`` is, and how many there
    are; None when every value is finite (the checks of host data name both)."""
    bad = ~np.isfinite(array)
    if not bad.any():
        return None
    return tuple(int(i) for i in np.argwhere(bad)[0]), int(bad.sum())


def is_number(value) -> bool:
    """Whether ``value`` is a real number: an int or float (NumPy's too), not a bool."""
    return not isinstance(value, bool) and isinstance(value, (int, float, np.integer, np.floating))


def boolean(name: str, value) -> bool:
    """Return ``value`` as a bool, or raise if it is not one (``"false"`` is not False)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"`{name}` must be True or False; received {name}={value!r}.")
    return bool(value)


def positive_int(name: str, value) -> int:
    """Return ``value`` as an int, or raise if it is not a positive integer."""
    if not is_int(value) or value < 1:
        raise ValueError(f"`{name}` must be a positive integer; received {name}={value!r}.")
    return int(value)


def non_negative_int(name: str, value) -> int:
    """Return ``value`` as an int, or raise if it is not an integer >= 0."""
    if not is_int(value) or value < 0:
        raise ValueError(f"`{name}` must be an integer >= 0; received {name}={value!r}.")
    return int(value)


def positive_number(name: str, value) -> float:
    """Return ``value`` as a float, or raise if it is not a finite number > 0."""
    if not (is_number(value) and math.isfinite(value) and value > 0):
        raise ValueError(f"`{name}` must be a positive number; received {name}={value!r}.")
    return float(value)


def number_in(
    name: str, value, low: float, high: float, *, low_open: bool = False, high_open: bool = False
) -> float:
    """Return ``value`` as a float, or raise if it is not a finite number in the interval
    ``[low, high]`` (``(`` / ``)`` where ``low_open`` / ``high_open``)."""
    ok = is_number(value) and math.isfinite(value)
    if ok:
        ok = (value > low if low_open else value >= low) and (
            value < high if high_open else value <= high
        )
    if not ok:
        interval = f"{'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
        raise ValueError(f"`{name}` must be a number in {interval}; received {name}={value!r}.")
    return float(value)


def number_or_none(name: str, value, none_means: str) -> float | None:
    """Return None, or ``value`` as a float, or raise if it is neither None nor a number
    (infinities allowed, NaN not); ``none_means`` says what None does, for the error."""
    if value is None:
        return None
    if not (is_number(value) and not math.isnan(value)):
        raise ValueError(
            f"`{name}` must be None ({none_means}) or a number; received {name}={value!r}."
        )
    return float(value)


def one_of(name: str, value, allowed: Sequence) -> object:
    """Return ``value`` if it is one of ``allowed``, else raise."""
    if value not in allowed:
        raise ValueError(
            f"`{name}` must be one of {', '.join(repr(a) for a in allowed)}; "
            f"received {name}={value!r}."
        )
    return value


def sequence(name: str, value, allowed: str, unordered: bool = False) -> tuple:
    """Return ``value`` as a tuple, or raise if it is not a list, a tuple or another sequence
    (a string, a scalar, None, or a set unless ``unordered`` allows one, is not). ``allowed``
    says what is, for the error (``"a list or tuple of block numbers"``); the items themselves
    are not checked."""
    is_array = isinstance(value, np.ndarray) and value.ndim == 1
    is_set = unordered and isinstance(value, AbstractSet)
    if isinstance(value, (str, bytes)) or not (isinstance(value, Sequence) or is_array or is_set):
        raise TypeError(
            f"`{name}` must be {allowed}; received {name}={value!r} ({type(value).__name__})."
        )
    return tuple(value)


def divisible(name: str, value: int, by_name: str, by: int) -> None:
    """Raise unless ``value`` (argument ``name``) is a multiple of ``by`` (argument ``by_name``)."""
    if value % by:
        raise ValueError(
            f"`{name}` must be divisible by `{by_name}` (the value depth is {name} / "
            f"{by_name}); received {name}={value}, {by_name}={by}."
        )


def odd_window(name: str, value: int | Sequence[int], rank: int) -> tuple[int, ...]:
    """Return a window extent as a ``rank``-tuple of positive odd ints, or raise.

    An int means the same extent on every axis.
    """
    values = tuple(value) if isinstance(value, (tuple, list)) else (value,) * rank
    ok = len(values) == rank and all(is_int(s) and s > 0 and s % 2 == 1 for s in values)
    if not ok:
        raise ValueError(
            f"`{name}` must be a positive odd integer (or {rank} of them, one per spatial axis) "
            f"so that the window is centred on the query; received {name}={value!r}."
        )
    return tuple(int(s) for s in values)


def _one_or_two(name: str, value, what: str) -> tuple:
    values = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    if len(values) not in (1, 2):
        raise ValueError(
            f"`{name}` must be {what} or a tuple of 1 or 2 of them; received {name}={value!r}."
        )
    return values


def scope(name: str, value) -> int | tuple[int, ...] | None:
    """A lambda layer's scope: ``None`` (global context), an odd int, or 1 or 2 odd ints.

    Returns ``None``, the int, or the tuple.
    """
    if value is None:
        return None
    values = _one_or_two(name, value, "an odd int")
    try:
        window = odd_window(name, values, len(values))
    except ValueError:
        raise ValueError(
            f"`{name}` must be None (global context), a positive odd integer or a pair of them; "
            f"received {name}={value!r}."
        ) from None
    return window[0] if not isinstance(value, (tuple, list)) else window


def extent(name: str, value) -> int | tuple[int, ...] | None:
    """``None``, a positive int, or 1 or 2 positive ints (a map size)."""
    if value is None:
        return None
    values = _one_or_two(name, value, "a positive int")
    values = tuple(positive_int(name, s) for s in values)
    return values[0] if not isinstance(value, (tuple, list)) else values


def square_bool_mask(name: str, mask) -> np.ndarray | None:
    """``None``, or a square ``[n, n]`` array of booleans / 0-1 values, returned as bool."""
    if mask is None:
        return None
    import keras

    mask = np.asarray(keras.ops.convert_to_numpy(mask))  # a tensor: from its device
    if mask.ndim != 2 or mask.shape[0] != mask.shape[1]:
        raise ValueError(
            f"`{name}` must be a square [n, n] array (query n, context position m); "
            f"received an array of shape {list(mask.shape)}."
        )
    if not np.isin(mask, (0, 1)).all():
        raise ValueError(f"`{name}` must hold booleans or 0/1 values.")
    return mask.astype(bool)


def implementation(value: str, allowed: Sequence[str], *, intra_depth: int) -> str:
    """A lambda layer's ``implementation``: one of ``allowed``, and able to compute
    ``intra_depth`` (the depthwise convolution cannot sum over it)."""
    one_of("implementation", value, allowed)
    if value == "depthwise" and intra_depth > 1:
        raise ValueError(
            "implementation='depthwise' cannot compute intra-depth > 1 (the paper defines "
            f"|u| > 1 for the einsum and the (n+1)-d convolution); received "
            f"intra_depth={intra_depth}. Use implementation='conv', 'einsum' or 'auto'."
        )
    return value
