"""Study configs (YAML) and the runner behind ``perturblab run``, ``resume`` and ``status``."""
