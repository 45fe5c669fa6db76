"""``perturblab compare``: how a model differs from the one you trust, as one run of the studies
the models support, with verdicts and thresholds for CI above the studies' own sections."""
