"""Measures: pure functions over arrays, each citing its paper and equation."""

from .cka import MinibatchCKA, linear_cka_unbiased, minibatch_cka, rbf_cka
from .layerwise import PAIRWISE, resolve_measures, similarity_matrix
from .learnability import (learnability_from_predictions, learnability_from_probabilities, log_auc,
                           post_augmentation_delta, relative_robustness, robustness)
from .scope import (METRICS, accuracy, change_distance, gap_iid_accuracy, hard_scope,
                    iid_agreement, linear_decay, ood_agreement, scope_metrics, soft_scope)
from .similarity import (CCA_CONVENTIONS, INFO, MeasureInfo, cca_forced_count, cca_mean, linear_cka, procrustes_distance,
                         pwcca_distance, r2cca)
from .stats import bootstrap_ci, mean_se, pearson, sample_complexity, spearman
from .stir import StirResult, stir, stir_layers
from .task_metrics import TASK_METRICS, TaskMetric, f1_macro, get_task_metric, mcc, pearson_r, rouge_f, spearman_rho

__all__ = ["CCA_CONVENTIONS", "INFO", "cca_forced_count", "METRICS", "PAIRWISE", "MeasureInfo", "MinibatchCKA", "StirResult", "accuracy", "bootstrap_ci",
           "cca_mean", "change_distance", "gap_iid_accuracy", "hard_scope", "iid_agreement", "learnability_from_predictions",
           "learnability_from_probabilities", "linear_cka", "log_auc", "post_augmentation_delta", "relative_robustness",
           "robustness",
           "linear_cka_unbiased", "linear_decay", "mean_se", "minibatch_cka", "ood_agreement", "pearson",
           "procrustes_distance", "pwcca_distance", "r2cca", "rbf_cka", "resolve_measures", "sample_complexity",
           "scope_metrics", "similarity_matrix", "soft_scope", "spearman", "stir", "stir_layers",
           "TASK_METRICS", "TaskMetric", "f1_macro", "get_task_metric", "mcc", "pearson_r", "rouge_f", "spearman_rho"]
