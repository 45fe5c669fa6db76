"""The vocabulary of a comparison, shared by its plan, verdicts and checks: the two kinds of
models, the headline keys each study of the plan gives, which of them are paired findings of a
target against the reference, and the range each measure lies in (for the gates' values)."""

from __future__ import annotations

import math
from typing import Sequence

from ...errors import InputError

CLASSIFIER, LANGUAGE_MODEL = "classifier", "language model"
#: keys whose estimate is a share kept (the rate of changed behaviour is 1 − it) and keys whose
#: estimate is a signed gap, target − reference (the rate is −gap)
SHARES, GAPS = ("hard_scope", "agreement"), ("accuracy_gap", "relative_robustness_gap")


def family(study: str) -> str:
    """The study a plan's folder runs (``layers-<target>`` is ``layers``)."""
    return "layers" if study.startswith("layers") else study


#: the headline keys each study of the plan gives (their first part), for checking the gates
#: before anything runs
KEYS_OF = {"invariances": ("hard_scope", "soft_scope", "agreement", "accuracy_gap"),
           "lm-invariances": ("hard_scope", "soft_scope", "agreement", "accuracy_gap"),
           "robustness": ("relative_robustness", "relative_robustness_gap", "accuracy", "accuracy_gap"),
           "layers": ("linear_cka",),
           "selfcheck": ("negation_sensitivity", "negation_normalised", "negation_benign_abs", "negation_ppl_drops",
                         "toxicity_generation", "toxicity_next_token",
                         "long_range", "word_order", "tokenization", "next_token_entropy", "token_entropy")}
#: the self-supervised scores' paired gaps (target − reference on the same texts)
KEYS_OF["selfcheck"] += tuple(f"{k}_gap" for k in KEYS_OF["selfcheck"])
#: the range of each measure a threshold is checked against (a value outside is refused, except
#: one just past the top, which can never pass: every check of it fails, and the command says so)
RANGES = {"hard_scope": (0.0, 1.0), "soft_scope": (0.0, 1.0), "agreement": (0.0, 1.0), "accuracy": (0.0, 1.0),
          "linear_cka": (0.0, 1.0), "accuracy_gap": (-1.0, 1.0), "relative_robustness": (0.0, math.inf),
          "relative_robustness_gap": (-math.inf, math.inf)}
#: how far past the top of its range a --fail-under value is still taken (a gate meant to fail)
PAST_TOP = 0.05
#: the measures --equivalent takes: target against reference, on the same examples
EQUIVALENCE_KEYS = SHARES + GAPS + KEYS_OF["selfcheck"]


def check_range(metric: str, value: float, option: str = "--fail-under") -> str:
    """Refuse a threshold outside ``metric``'s range (a percentage for a share, most often);
    a value up to :data:`PAST_TOP` past the top is taken, with the note returned (else "")."""
    first = metric.split(":", 1)[0]
    low, high = RANGES.get(first, (-math.inf, math.inf))
    if low <= value <= high:
        return ""
    if option == "--fail-under" and high < value <= high + PAST_TOP:
        return (f"note: --fail-under {metric}={value:g} is above the largest {first} ({high:g}): every check of it "
                "fails")
    hint = f"; for {value:g} % give {value / 100:g}" if high == 1.0 and 1 < value <= 100 else ""
    raise InputError(f"{option} {metric}={value:g}: {first} lies in [{low:g}, {high:g}]{hint}")


def check_margin(metric: str, margin: float) -> None:
    """Refuse an ``--equivalent`` metric that is no paired difference, or a margin that is not
    in (0, 1] for a share or a gap of shares."""
    first = metric.split(":", 1)[0]
    if first not in EQUIVALENCE_KEYS:
        raise InputError(f"--equivalent {metric}: equivalence is of a target against the reference; give one of "
                         f"{', '.join(EQUIVALENCE_KEYS)}")
    if not margin > 0:
        raise InputError(f"--equivalent {metric}={margin:g}: the margin must be above 0")
    if first in SHARES + ("accuracy_gap",) and margin > 1:
        hint = f"; for {margin:g} points give {margin / 100:g}" if margin <= 100 else ""
        raise InputError(f"--equivalent {metric}={margin:g}: a margin of a share lies in (0, 1]{hint}")


def check_metrics(metrics: Sequence[str], studies: Sequence[str], option: str = "--fail-under") -> None:
    """Refuse a gate's metric that no planned study gives, naming those they give."""
    known = {k for s in studies for k in KEYS_OF.get(family(s), ())}
    for m in metrics:
        if m.split(":", 1)[0] not in known:
            raise InputError(f"{option} {m}: no study of this comparison gives {m.split(':', 1)[0]!r}; "
                             f"give one of {', '.join(sorted(known))} (with :CAPABILITY or :PERTURBATION to "
                             "check one)")
