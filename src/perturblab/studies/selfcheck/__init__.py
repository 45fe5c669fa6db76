"""Self-supervised evaluation of language models (the ``selfcheck`` command): the examples and the
resumable study (:mod:`.study`), the scoring of one unit of work (:mod:`.scoring`), the scores,
tables and files (:mod:`.result`) and the spider and ablation plots (:mod:`.plots`). The
transformations are in :mod:`perturblab.perturb.selfcheck`, the scores' formulas in
:mod:`perturblab.measures.selfcheck`."""
