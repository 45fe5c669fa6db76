"""SCoPE metrics for language models: our reading of SCoPE App. G.

App. G "treat[s] language modeling as a task in itself and define[s] linguistic-capabilities
w.r.t the pre-trained language models", and "use[s] cosine-similarity for computing
agreements as language models have a large vocabulary". It gives no formulas; this module
is how we read it. Notation as in Sec. 3.3: m(x) is the model's *next-token distribution*
after the text x (a probability vector over the vocabulary V, the "n unique
labels/vocabulary" of Sec. 3.3), y_m(x) = argmax_v m(x)_v its top-1 next token,
x' = C(x; m1) the perturbation found for the reference m1 (Eq. 1, L = L1 over V).

* **IID / OOD agreement** (Sec. 3.3.2 with App. G): the indicator 1[y_m1 = y_m2] is replaced
  by the cosine similarity of the two distributions, IID = E_x cos(m1(x), m2(x)) and
  OOD = E_x cos(m1(x'), m2(x')). Probabilities are non-negative, so cos ∈ [0, 1]. The
  literal top-1 agreements of Sec. 3.3.2 are reported too (``*_top1_agreement``).
* **Hard-SCoPE** (Eq. 2): y_m is the top-1 next token; the expectation runs over the samples
  on which the reference keeps its top-1 token, y_m1(x) = y_m1(x').
* **Soft-SCoPE** (Eq. 3): dist(Δm1, Δm2) = ||Δm1 − Δm2||_1 over the vocabulary (Δm = m(x') −
  m(x)) and the linear ``decay`` of :func:`perturblab.measures.scope.linear_decay`, on the
  same conditioned population. Since 0 ≤ decay ≤ 1, 0 ≤ Soft ≤ Hard for every sample.
  For general distributions ||Δm||_1 ≤ 2, so dist ≤ 4 (reached when the two models move all
  their mass in opposite directions). We keep the default ``cutoff = 2``
  (:data:`DEFAULT_LM_CUTOFF`): the search makes the reference (nearly) invariant, so
  Δm1 ≈ 0 and dist ≈ ||Δm2||_1 ∈ [0, 2]; a cutoff of 2 lets the decay span that range (0 at
  a target that moves all its mass, i.e. total variation 1) and keeps the numbers on the
  scale of the classification study. Distances above 2 get weight 0.
* **Gap in IID accuracy** (Sec. 3.3.1): with language modelling as the task, acc(m) is the
  teacher-forced top-1 next-token accuracy over the tokens of the base texts: for a text of
  tokens t_0 … t_{L-1}, the positions i = 1 … L-1 where argmax m(t_<i) = t_i (t_0 has no text
  before it and is not counted, whatever start token a model adds), micro-averaged over all
  tokens of all base texts. The gap |acc(m1) − acc(m2)| needs the same tokens for both models.

Comparing distributions over "the same tokens" requires one vocabulary:
:func:`check_shared_vocabulary` raises :class:`~perturblab.errors.InputError` otherwise.

Everything works on per-sample scalars (top-1 ids, cosines, L1 distances, token counts) so a
study can store them instead of full distributions (49,152 floats per row for SmolLM2).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ..errors import InputError
from .scope import DEFAULT_TOLERANCE, change_distance, linear_decay

#: Soft-SCoPE cutoff for language models (see the module docstring for why 2, not 4).
DEFAULT_LM_CUTOFF = 2.0
#: Largest possible ||Δm1 − Δm2||_1 between two changes of probability distributions.
MAX_CHANGE_DISTANCE = 4.0

LM_METRICS = ("gap_iid_acc", "iid_agreement", "ood_agreement", "iid_top1_agreement",
              "ood_top1_agreement", "hard_scope", "soft_scope")


def _rows(p: Any, what: str = "distributions") -> np.ndarray:
    a = np.asarray(p)
    if a.ndim != 2:
        raise InputError(f"expected {what} as an (n, vocab) array, got shape {a.shape}")
    return a


def _same_len(*arrays: Any) -> None:
    ns = {len(a) for a in arrays}
    if len(ns) > 1:
        raise InputError(f"per-sample arrays have different lengths: {sorted(ns)}")


def top1(p: Any) -> np.ndarray:
    """y_m(x) = argmax over the vocabulary of each row (probabilities or log-probabilities)."""
    return _rows(p).argmax(axis=1)


def cosine_terms(p1: Any, p2: Any) -> np.ndarray:
    """Per-row cosine similarity of two probability arrays (App. G agreement), in [0, 1].

    Takes probabilities; :func:`perturblab.measures.divergence.cosine` is the same on
    log-probabilities.
    """
    a, b = _rows(p1), _rows(p2)
    if a.shape != b.shape:
        raise InputError(f"distributions over different vocabularies: {a.shape} vs {b.shape}")
    a, b = a.astype(np.float64, copy=False), b.astype(np.float64, copy=False)
    den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return np.clip((a * b).sum(axis=1) / np.where(den > 0, den, 1.0), 0.0, 1.0)


def lm_sample_terms(p1_x: Any, p1_xp: Any, p2_x: Any, p2_xp: Any) -> dict[str, np.ndarray]:
    """The per-sample scalars every LM metric is computed from, for one reference/target pair.

    Returns arrays of length n: ``ref_top1_x``, ``ref_top1_xp``, ``top1_x``, ``top1_xp``
    (target), ``cos_x`` = cos(m1(x), m2(x)), ``cos_xp`` = cos(m1(x'), m2(x')) and
    ``change_l1`` = ||Δm1 − Δm2||_1 (Eq. 3's dist).
    """
    _same_len(p1_x, p1_xp, p2_x, p2_xp)
    return {"ref_top1_x": top1(p1_x), "ref_top1_xp": top1(p1_xp), "top1_x": top1(p2_x),
            "top1_xp": top1(p2_xp), "cos_x": cosine_terms(p1_x, p2_x),
            "cos_xp": cosine_terms(p1_xp, p2_xp),
            "change_l1": change_distance(p1_x, p1_xp, p2_x, p2_xp)}


def _cond_mean(terms: np.ndarray, cond: np.ndarray) -> float:
    return float(terms[cond].mean()) if cond.any() else math.nan


def hard_scope_lm_terms(top1_x: Any, top1_xp: Any) -> np.ndarray:
    """Per-sample terms 1[y_m2(x) = y_m2(x')] of Eq. 2 with top-1 next tokens (floats)."""
    _same_len(top1_x, top1_xp)
    return (np.asarray(top1_x) == np.asarray(top1_xp)).astype(np.float64)


def soft_scope_lm_terms(top1_x: Any, top1_xp: Any, change_l1: Any,
                        tolerance: float = DEFAULT_TOLERANCE,
                        cutoff: float = DEFAULT_LM_CUTOFF) -> np.ndarray:
    """Per-sample terms decay(||Δm1 − Δm2||_1) · 1[y_m2(x) = y_m2(x')] of Eq. 3."""
    _same_len(top1_x, change_l1)
    return linear_decay(np.asarray(change_l1, dtype=np.float64), tolerance, cutoff) \
        * hard_scope_lm_terms(top1_x, top1_xp)


def hard_scope_lm(ref_top1_x: Any, ref_top1_xp: Any, top1_x: Any, top1_xp: Any) -> float:
    """Hard-SCoPE(m2 | m1), Eq. 2, over the samples where the reference keeps its top-1 token.

    NaN when there is none.
    """
    _same_len(ref_top1_x, ref_top1_xp, top1_x, top1_xp)
    cond = np.asarray(ref_top1_x) == np.asarray(ref_top1_xp)
    return _cond_mean(hard_scope_lm_terms(top1_x, top1_xp), cond)


def soft_scope_lm(ref_top1_x: Any, ref_top1_xp: Any, top1_x: Any, top1_xp: Any, change_l1: Any,
                  tolerance: float = DEFAULT_TOLERANCE, cutoff: float = DEFAULT_LM_CUTOFF) -> float:
    """Soft-SCoPE(m2 | m1), Eq. 3, conditioned like :func:`hard_scope_lm`; NaN when undefined."""
    _same_len(ref_top1_x, ref_top1_xp, top1_x, top1_xp, change_l1)
    cond = np.asarray(ref_top1_x) == np.asarray(ref_top1_xp)
    return _cond_mean(soft_scope_lm_terms(top1_x, top1_xp, change_l1, tolerance, cutoff), cond)


def token_accuracy(correct: Any, total: Any) -> float:
    """acc(m) = Σ correct / Σ scored tokens (micro average over the base texts); NaN if none."""
    c, n = np.asarray(correct, dtype=np.float64), np.asarray(total, dtype=np.float64)
    _same_len(c, n)
    return float(c.sum() / n.sum()) if n.sum() > 0 else math.nan


def gap_iid_token_accuracy(correct1: Any, total1: Any, correct2: Any, total2: Any) -> float:
    """Gap in IID accuracy |acc(m1) − acc(m2)| (Sec. 3.3.1) with teacher-forced token accuracy."""
    if not np.array_equal(np.asarray(total1), np.asarray(total2)):
        raise InputError("the two models scored different numbers of tokens per text; the LM accuracy "
                         "gap needs one tokenizer (see check_shared_vocabulary)")
    return abs(token_accuracy(correct1, total1) - token_accuracy(correct2, total2))


def token_accuracy_counts(lm: Any, texts: Sequence[str], chunk: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """Per text: (top-1 correct predictions, scored tokens) under teacher forcing.

    Token t_i (i ≥ 1) counts as correct when argmax m(t_<i) = t_i; computed from
    ``lm.span_logprobs`` ``chunk`` texts at a time so only argmaxes are kept in memory.
    """
    texts = list(texts)
    correct, total = np.zeros(len(texts), np.int64), np.zeros(len(texts), np.int64)
    for s in range(0, len(texts), max(1, chunk)):
        part = texts[s:s + chunk]
        ids = [lm.encode(t) for t in part]
        for j, t in enumerate(part):
            if not ids[j]:
                raise InputError(f"text {t!r} has no tokens; drop empty texts first")
        spans = lm.span_logprobs(ids, [0] * len(part))  # the very ids compared below
        for j, (seq, lp) in enumerate(zip(ids, spans)):
            pred = np.asarray(lp).argmax(axis=1)[: len(seq) - 1]
            correct[s + j] = int((pred == np.asarray(seq[1:])).sum())
            total[s + j] = len(seq) - 1
    return correct, total


def _vocab(lm: Any) -> dict[str, int] | None:
    tok = getattr(lm, "tokenizer", None)
    get = getattr(tok, "get_vocab", None)
    return get() if callable(get) else None


def check_shared_vocabulary(m1: Any, m2: Any, texts: Sequence[str] = (),
                            names: tuple[str, str] = ("reference", "target")) -> None:
    """Raise :class:`InputError` unless ``m1`` and ``m2`` give distributions over the same tokens.

    Checks ``vocab_size``, the tokenizers' vocabularies (when both expose ``get_vocab``) and
    that both encode every text of ``texts`` to the same ids.
    """
    a, b = names
    if int(m1.vocab_size) != int(m2.vocab_size):
        raise InputError(f"{a} {getattr(m1, 'name', '?')!r} has a vocabulary of {m1.vocab_size} tokens but "
                         f"{b} {getattr(m2, 'name', '?')!r} has {m2.vocab_size}; SCoPE for language "
                         "models compares next-token distributions over the same tokens: pick models "
                         "that share a tokenizer")
    v1, v2 = _vocab(m1), _vocab(m2)
    if v1 is not None and v2 is not None and v1 != v2:
        raise InputError(f"{a} {getattr(m1, 'name', '?')!r} and {b} {getattr(m2, 'name', '?')!r} have "
                         f"vocabularies of equal size ({m1.vocab_size}) but different tokens; SCoPE for "
                         "language models needs one shared tokenizer")
    for t in texts:
        if m1.encode(t) != m2.encode(t):
            raise InputError(f"{a} and {b} tokenize {t[:60]!r} differently; SCoPE for language models "
                             "needs one shared tokenizer")


def lm_scope_metrics(p1_x: Any, p1_xp: Any, p2_x: Any, p2_xp: Any,
                     tolerance: float = DEFAULT_TOLERANCE,
                     cutoff: float = DEFAULT_LM_CUTOFF) -> dict[str, float]:
    """Agreement and SCoPE metrics from full next-token distributions of n perturbed samples.

    (The accuracy gap needs the models and is :func:`gap_iid_token_accuracy`.)
    """
    t = lm_sample_terms(p1_x, p1_xp, p2_x, p2_xp)
    n = len(t["cos_x"])
    mean = (lambda v: float(np.mean(v)) if n else math.nan)
    return {
        "iid_agreement": mean(t["cos_x"]), "ood_agreement": mean(t["cos_xp"]),
        "iid_top1_agreement": mean(t["ref_top1_x"] == t["top1_x"]),
        "ood_top1_agreement": mean(t["ref_top1_xp"] == t["top1_xp"]),
        "hard_scope": hard_scope_lm(t["ref_top1_x"], t["ref_top1_xp"], t["top1_x"], t["top1_xp"]),
        "soft_scope": soft_scope_lm(t["ref_top1_x"], t["ref_top1_xp"], t["top1_x"], t["top1_xp"],
                                    t["change_l1"], tolerance, cutoff),
    }
