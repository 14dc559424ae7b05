"""Models whose ``fit``, ``evaluate``, ``predict`` and ``*_on_batch`` steps compile on PyTorch.

[`CompiledSteps`][lambda_keras.backend.compiled_steps.CompiledSteps] goes before
``keras.Model`` in a model class's bases; the zoo's models have it
([`lambda_keras.zoo.ZooModel`][lambda_keras.zoo.applications.ZooModel]), and
[`MaskRCNN`][lambda_keras.detection.MaskRCNN]. On Keras' PyTorch
backend their step functions are
[`CompiledStep`][lambda_keras.backend.torch_compiled_step.CompiledStep]s (one compiled graph per
step) unless ``model.compile(jit_compile=False)``,
``run_eagerly=True`` or ``LAMBDA_KERAS_TORCH_COMPILE=0``; ``jit_compile="auto"`` (Keras'
default, eager on PyTorch) means compiled for them where ``LAMBDA_KERAS_TORCH_COMPILE`` says
(by default on a GPU), ``jit_compile=True`` compiled on every device. On TensorFlow and JAX
nothing changes.
"""

from __future__ import annotations

import keras

from lambda_keras.backend import torch_compiled_step

__all__ = ["CompiledSteps"]


class CompiledSteps:
    """A ``keras.Model`` mixin: each step compiled as one graph on Keras' PyTorch backend.

    The step functions (``model.train_function`` and the others, made by ``fit`` and
    ``train_on_batch``) are [`CompiledStep`][lambda_keras.backend.torch_compiled_step.CompiledStep]s
    that keep their compiled graphs; ``step.compiles`` and ``step.compile_seconds`` say what
        the first step of each input signature cost. A model class with its own ``train_step``,
    ``test_step`` or ``predict_step`` keeps Keras' step functions (eager unless
    ``jit_compile=True``, Keras' own ``torch.compile``), as does ``steps_per_execution`` above 1
    (which Keras' PyTorch trainer refuses).

    Examples:
        >>> import keras
        >>> from lambda_keras.backend.compiled_steps import CompiledSteps
        >>> class Classifier(CompiledSteps, keras.Model):
        ...     pass
        >>> inputs = keras.Input((32, 32, 3))
        >>> outputs = keras.layers.Dense(10)(keras.layers.Flatten()(inputs))
        >>> model = Classifier(inputs, outputs)
        >>> model.compile("sgd", "sparse_categorical_crossentropy")
        >>> isinstance(model, keras.Model)
        True
    """

    def _resolve_auto_jit_compile(self):
        if keras.backend.backend() == "torch":
            from keras.src.trainers.trainer import model_supports_jit

            on = torch_compiled_step.compile_mode() is not None
            kinds = torch_compiled_step.KINDS
            own_steps = any(_overrides(type(self), f"{kind}_step") for kind in kinds)
            return on and not own_steps and model_supports_jit(self)
        return super()._resolve_auto_jit_compile()

    def compiled_step_mode(self, kind: str) -> str | None:
        """The ``torch.compile`` mode of this model's ``kind`` step (``"train"``, ``"test"`` or
        ``"predict"``), or None where Keras' own step runs: compiled on PyTorch with
        ``jit_compile`` (``"auto"``: on a GPU; ``True``: on every device), one batch a step,
        Keras' own ``<kind>_step``, unless ``LAMBDA_KERAS_TORCH_COMPILE=0``."""
        if kind not in torch_compiled_step.KINDS:
            raise ValueError(
                f"`kind` must be one of {', '.join(torch_compiled_step.KINDS)}; received {kind!r}."
            )
        if keras.backend.backend() != "torch" or self.run_eagerly or not self.jit_compile:
            return None
        if self.steps_per_execution != 1 or _overrides(type(self), f"{kind}_step"):
            return None  # Keras' trainer refuses the first; a model's own step is its own
        # jit_compile=True on a CPU was asked for ("auto" resolves to False there).
        return torch_compiled_step.compile_mode(jit_compile=True)

    def make_train_function(self, force=False):
        return self._make_step("train", force, super().make_train_function, self._eager_train)

    def make_test_function(self, force=False):
        return self._make_step("test", force, super().make_test_function, self._eager_test)

    def make_predict_function(self, force=False):
        return self._make_step(
            "predict", force, super().make_predict_function, self._eager_predict
        )

    def _make_step(self, kind: str, force: bool, keras_make, eager):
        """``self.<kind>_function``: a compiled step, or Keras' own (``keras_make``)."""
        attribute = f"{kind}_function"
        if getattr(self, attribute) is not None and not force:
            return getattr(self, attribute)
        mode = self.compiled_step_mode(kind)
        if mode is None:
            return keras_make(force)
        setattr(self, attribute, torch_compiled_step.CompiledStep(self, kind, eager, mode))
        return getattr(self, attribute)

    def _eager_train(self, data):
        return self.train_step(data[0])

    def _eager_test(self, data):
        import torch

        with torch.no_grad():
            return self.test_step(data[0])

    def _eager_predict(self, data):
        import torch

        with torch.no_grad():
            return self.predict_step(data[0])


def _overrides(cls: type, name: str) -> bool:
    """Whether ``cls`` defines ``name`` itself rather than inheriting Keras' PyTorch trainer's."""
    from keras.src.backend.torch.trainer import TorchTrainer

    return getattr(cls, name) is not getattr(TorchTrainer, name)
