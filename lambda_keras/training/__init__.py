"""Training support behind the absl scripts in ``training/``: input pipelines (:mod:`.data`),
the paper's recipes (:mod:`.recipes`), distribution strategies (:mod:`.distribute`), one training
run (:mod:`.trainer`), serving export (:mod:`.serving`) and evaluation (:mod:`.evaluation`)."""

from lambda_keras._tensorflow_only import check_backend

check_backend("lambda_keras.training")
