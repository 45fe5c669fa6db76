"""*Perturbation learnability* (the learnability paper): Algorithm 1, learnability@p curves for any
``fit(texts, labels, seed)`` (:mod:`.algorithm`), the study of learnability, robustness and
post-augmentation gain over models and perturbations, Tables 2-3 (:mod:`.study`), and its
figures (:mod:`.plots`)."""
