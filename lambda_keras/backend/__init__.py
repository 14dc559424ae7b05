"""Where the project meets the Keras backend and the machine: which device the backend computes on
([`devices`][lambda_keras.backend.devices]), TensorFlow's oneDNN kernels
([`onednn`][lambda_keras.backend.onednn]), PyTorch's Triton loaded before TensorFlow's LLVM
can crash it ([`triton_first`][lambda_keras.backend.triton_first]), Keras' PyTorch
convolution, pooling and batch norm without layout copies
([`torch_channels_last`][lambda_keras.backend.torch_channels_last]),
the zoo's and Mask R-CNN's training, evaluation and prediction steps as one compiled graph each on
PyTorch
([`torch_compiled_step`][lambda_keras.backend.torch_compiled_step], the steps it traces in
[`stateless_steps`][lambda_keras.backend.stateless_steps], and
[`compiled_steps`][lambda_keras.backend.compiled_steps] for the models, what compiling cost
printed during ``fit`` by [`compile_report`][lambda_keras.backend.compile_report], glibc's
large buffers kept between compiled steps on a CPU by
[`glibc_heap`][lambda_keras.backend.glibc_heap]; their on/off environment variables read by
[`switches`][lambda_keras.backend.switches]),
initial values from NumPy while the project builds a model on JAX
([`host_initializers`][lambda_keras.backend.host_initializers]),
checks that run inside a TensorFlow graph ([`graph_checks`][lambda_keras.backend.graph_checks])
and what the project needs installed: TensorFlow for the packages that use it, PyTorch's oldest
supported release on its backend ([`requirements`][lambda_keras.backend.requirements]).

This package imports nothing itself: ``lambda_keras`` imports
[`onednn`][lambda_keras.backend.onednn] and [`triton_first`][lambda_keras.backend.triton_first]
before Keras and installs
[`torch_channels_last`][lambda_keras.backend.torch_channels_last] after it.
"""
