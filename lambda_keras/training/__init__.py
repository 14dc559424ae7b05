"""Training support behind the absl scripts in ``training/``: input pipelines (:mod:`.data`),
the paper's recipes (:mod:`.recipes`), distribution strategies (:mod:`.distribute`), one training
run (:mod:`.trainer`), serving export (:mod:`.serving`) and evaluation (:mod:`.evaluation`)."""
