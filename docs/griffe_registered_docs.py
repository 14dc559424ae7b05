"""A griffe extension for the API reference (mkdocs.yml loads it; the site leaves it out).

- The zoo's builders document their arguments in a docstring that
  [register_model][lambda_keras.zoo.register_model] completes when the module is imported (one
  arguments table for a family, its Table 20 defaults filled in). griffe reads the source, so
  each registered builder gets the docstring it has at run time.
- A docstring may document several arguments in one row (``key_dim, num_heads: ...``); griffe
  finds no parameter of that name and the table would say "required" with no type. The row gets
  the arguments' types and defaults from the signature instead.
"""

from __future__ import annotations

import inspect
from typing import Any

import griffe


def _runtime_docstring(path: str) -> str | None:
    """The docstring ``register_model`` gave the zoo builder at ``path``, if it is one."""
    from lambda_keras import zoo

    for name in zoo.list_models():
        builder = zoo.model_builder(name)
        if f"{builder.__module__}.{builder.__name__}" == path:
            return inspect.cleandoc(builder.__doc__)
    return None


def _grouped(row: griffe.DocstringParameter, parameters: griffe.Parameters) -> None:
    """Fill a ``"a, b"`` row's type and default from the parameters ``a`` and ``b``."""
    names = [name.strip() for name in row.name.split(",")]
    if len(names) < 2 or not all(name in parameters for name in names):
        return
    found = [parameters[name] for name in names]
    if all(p.annotation is not None for p in found):
        row.annotation = ", ".join(str(p.annotation) for p in found)
    if all(p.default is not None for p in found):
        row.value = ", ".join(str(p.default) for p in found)


def _complete_rows(obj: griffe.Object, parameters: griffe.Parameters) -> None:
    if obj.docstring is None:
        return
    for section in obj.docstring.parsed:
        if section.kind is griffe.DocstringSectionKind.parameters:
            for row in section.value:
                _grouped(row, parameters)


class RegisteredDocstrings(griffe.Extension):
    """The zoo builders' run-time docstrings; grouped argument rows with types and defaults."""

    def on_function_instance(self, *, func: griffe.Function, **kwargs: Any) -> None:
        if func.path.startswith("lambda_keras.zoo.") and func.docstring is not None:
            docstring = _runtime_docstring(func.path)
            if docstring is not None:
                func.docstring.value = docstring
        _complete_rows(func, func.parameters)

    def on_class_members(self, *, cls: griffe.Class, **kwargs: Any) -> None:
        init = cls.members.get("__init__")
        if isinstance(init, griffe.Function):
            _complete_rows(cls, init.parameters)
