"""argparse types shared by the benchmark scripts: a bad value is one line of ``error: argument
--name: ...`` and exit status 2 before anything is built, never a traceback minutes later."""

from __future__ import annotations

import argparse
import importlib.util
from collections.abc import Callable, Iterable, Sequence


def positive_int(text: str) -> int:
    """An integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer; received {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer; received {value}")
    return value


def sizes(multiple: int) -> Callable[[str], list[int]]:
    """A comma-separated list of image sides, each a positive multiple of ``multiple``."""

    def parse(text: str) -> list[int]:
        values = []
        for item in _items(text):
            try:
                value = int(item)
            except ValueError:
                value = -1
            if value < multiple or value % multiple:
                raise argparse.ArgumentTypeError(
                    f"must be comma-separated multiples of {multiple}; received {text!r}"
                )
            values.append(value)
        return values

    return parse


def names(allowed: Iterable[str], pattern: str | None = None) -> Callable[[str], list[str]]:
    """A comma-separated list of names, each one of ``allowed`` (described by ``pattern``)."""
    allowed = tuple(allowed)

    def parse(text: str) -> list[str]:
        values = _items(text)
        for value in values:
            if value not in allowed:
                raise argparse.ArgumentTypeError(
                    f"{value!r} is not one of {pattern or ', '.join(allowed)}"
                )
        return values

    return parse


def add_backends_argument(parser: argparse.ArgumentParser, backends: Sequence[str]) -> None:
    """``--backends``: a comma-separated list of ``backends``, by default those installed."""
    installed = [b for b in backends if importlib.util.find_spec(b) is not None]
    parser.add_argument("--backends", type=names(backends), default=installed)


def _items(text: str) -> list[str]:
    items = [item.strip() for item in text.split(",")]
    if not all(items):
        raise argparse.ArgumentTypeError(f"must be a comma-separated list; received {text!r}")
    return items
