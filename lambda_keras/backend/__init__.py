"""Where the project meets the Keras backend and the machine: which device the backend computes
on (:mod:`.devices`), TensorFlow's oneDNN kernels (:mod:`.onednn`), checks that run inside a
TensorFlow graph (:mod:`.graph_checks`) and the one guard of the packages that need TensorFlow
(:mod:`.requirements`).

This package imports nothing itself: ``lambda_keras`` imports :mod:`.onednn` before Keras.
"""
