"""What the parts a detector takes as arguments have in common (its anchor generator, its input
transform): plain objects saved with the model through their config, equal when their configs
are."""

from __future__ import annotations

__all__ = ["ModelPart"]


class ModelPart:
    """A part of a model saved with it: ``get_config`` says everything it holds,
    ``from_config`` makes it again; two parts of one class with one config are equal."""

    def get_config(self) -> dict:
        raise NotImplementedError

    @classmethod
    def from_config(cls, config: dict) -> ModelPart:
        return cls(**config)

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and other.get_config() == self.get_config()

    __hash__ = None  # equal by config, which may change: no hash

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.get_config()})"
