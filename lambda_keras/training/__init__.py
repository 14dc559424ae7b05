"""Training support: input pipelines (:mod:`.data`) and distribution strategies
(:mod:`.distribute`). The absl training scripts are being built on these."""
