"""Measures: pure functions over arrays, each citing its paper and equation."""

from .scope import (METRICS, accuracy, change_distance, gap_iid_accuracy, hard_scope,
                    iid_agreement, linear_decay, ood_agreement, scope_metrics, soft_scope)
from .stats import bootstrap_ci, mean_se, pearson, sample_complexity, spearman

__all__ = ["METRICS", "accuracy", "bootstrap_ci", "change_distance", "gap_iid_accuracy",
           "hard_scope", "iid_agreement", "linear_decay", "mean_se", "ood_agreement",
           "pearson", "sample_complexity", "scope_metrics", "soft_scope", "spearman"]
