"""Argument checks shared by the layers: each error names the argument, the value and the rule."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def positive_int(name: str, value) -> int:
    """Return ``value`` as an int, or raise if it is not a positive integer."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"`{name}` must be a positive integer; received {name}={value!r}.")
    return int(value)


def odd_window(name: str, value: int | Sequence[int], rank: int) -> tuple[int, ...]:
    """Return a window extent as a ``rank``-tuple of positive odd ints, or raise.

    An int means the same extent on every axis.
    """
    values = tuple(value) if isinstance(value, (tuple, list)) else (value,) * rank
    ok = len(values) == rank and all(
        not isinstance(s, bool) and isinstance(s, (int, np.integer)) and s > 0 and s % 2 == 1
        for s in values
    )
    if not ok:
        raise ValueError(
            f"`{name}` must be a positive odd integer (or {rank} of them, one per spatial axis) "
            f"so that the window is centred on the query; received {name}={value!r}."
        )
    return tuple(int(s) for s in values)


def one_of(name: str, value, allowed: Sequence[str]) -> str:
    """Return ``value`` if it is one of ``allowed``, else raise."""
    if value not in allowed:
        raise ValueError(
            f"`{name}` must be one of {', '.join(repr(a) for a in allowed)}; "
            f"received {name}={value!r}."
        )
    return value
