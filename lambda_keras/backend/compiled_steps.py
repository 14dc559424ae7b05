"""Models whose ``fit``, ``evaluate``, ``predict`` and ``*_on_batch`` steps compile on PyTorch.

[`CompiledSteps`][lambda_keras.backend.compiled_steps.CompiledSteps] goes before
``keras.Model`` in a model class's bases; the zoo's models have it
([`lambda_keras.zoo.ZooModel`][lambda_keras.zoo.applications.ZooModel]). On Keras' PyTorch
backend their step functions are
[`CompiledStep`][lambda_keras.backend.torch_compiled_step.CompiledStep]s (one compiled graph per
step) unless ``model.compile(jit_compile=False)``,
``run_eagerly=True`` or ``LAMBDA_KERAS_TORCH_COMPILE=0``; ``jit_compile="auto"`` (Keras'
default, eager on PyTorch) means compiled for them. On TensorFlow and JAX nothing changes.
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
            kinds = ("train", "test", "predict")
            own_steps = any(_overrides(type(self), f"{kind}_step") for kind in kinds)
            return on and not own_steps and model_supports_jit(self)
        return super()._resolve_auto_jit_compile()

    def _compiled_mode(self, kind: str) -> str | None:
        """The ``torch.compile`` mode of this model's ``kind`` step, or None for Keras' own: on
        PyTorch with ``jit_compile``, one batch a step, and Keras' own ``<kind>_step``."""
        if keras.backend.backend() != "torch" or self.run_eagerly or not self.jit_compile:
            return None
        if self.steps_per_execution != 1 or _overrides(type(self), f"{kind}_step"):
            return None  # Keras' trainer refuses the first; a model's own step is its own
        return torch_compiled_step.compile_mode()

    def make_train_function(self, force=False):
        if self.train_function is not None and not force:
            return self.train_function
        mode = self._compiled_mode("train")
        if mode is None:
            return super().make_train_function(force)
        self.train_function = torch_compiled_step.CompiledStep(
            self, "train", lambda data: self.train_step(data[0]), mode
        )
        return self.train_function

    def make_test_function(self, force=False):
        if self.test_function is not None and not force:
            return self.test_function
        mode = self._compiled_mode("test")
        if mode is None:
            return super().make_test_function(force)
        self.test_function = torch_compiled_step.CompiledStep(self, "test", self._eager_test, mode)
        return self.test_function

    def make_predict_function(self, force=False):
        if self.predict_function is not None and not force:
            return self.predict_function
        mode = self._compiled_mode("predict")
        if mode is None:
            return super().make_predict_function(force)
        self.predict_function = torch_compiled_step.CompiledStep(
            self, "predict", self._eager_predict, mode
        )
        return self.predict_function

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
