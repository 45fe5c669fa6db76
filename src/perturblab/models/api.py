"""Black-box classifiers behind an OpenAI-compatible completions API (SCoPE paper, Sec. 5).

:class:`ApiClassifier` prompts the model with a template and reads its answer as one of the
label words. Probabilities come from one of two estimators:

* ``"logprobs"``: one request per input with ``max_tokens=1`` and ``logprobs=top_k``; each label's
  score is the probability of the top-k token that starts its label word (case and surrounding
  space ignored), normalised over the labels. A label whose first token is not among the top k
  gets 0; an input where no label appears gets the uniform distribution and is counted in
  :attr:`ApiClassifier.unmatched`.
* ``"sample"``: when the endpoint gives no log-probabilities (e.g. InstructGPT-era APIs for some
  models), ``n_samples`` completions at ``temperature`` are drawn and each answer is read as the
  first label word it contains; the probability vector is the label counts over the answers that
  name a label, so the mode's frequency is the predicted label's probability, as in the SCoPE
  paper (after Cheng et al., 2023). Answers naming no label are counted in ``unmatched``.
* ``"auto"`` (default): ``logprobs`` while the endpoint returns them, ``sample`` from the first
  answer that has none.

The transport (retries, timeouts, concurrency, usage and fault accounting, the API key) is
:class:`~.api_client.ApiClient`'s.
"""

from __future__ import annotations

import math
import re
from typing import Any, Literal, Sequence

import numpy as np

from ..errors import InputError
from .api_client import ApiClient, ApiError
from .base import TextInput, check_inputs, fingerprint_of

Mode = Literal["auto", "logprobs", "sample"]
DEFAULT_TEMPLATE = "{text}\nQuestion: Is the sentiment of this text {choices}?\nAnswer:"


def label_words_for(owner: str, words: Any, labels: Sequence[str]) -> list[str] | None:
    """The answer word of each of the data's ``labels``, in their order, from ``words``: None, a
    list in label order, or label -> word pairs (a mapping or a list of pairs). ``owner`` names
    the model in the error when a label has no word or the counts differ."""
    if words is None:
        return None
    labels = list(labels)
    if isinstance(words, dict) or (words and isinstance(words[0], tuple)):
        mapping = dict(words)
        missing = [lab for lab in labels if lab not in mapping]
        if missing:
            raise InputError(f"{owner}: label_words has no word for the data's labels {missing} (it names "
                             f"{list(mapping)}); the data's labels are {labels}")
        return [mapping[lab] for lab in labels]
    if len(words) != len(labels):
        raise InputError(f"{owner}: {len(words)} label_words for {len(labels)} labels {labels} (give them in that "
                         "order, or as label:word pairs)")
    return list(words)


def check_label_words(owner: str, words: Any, labels: Sequence[str], data: str = "the data") -> list[str]:
    """The answer words of ``labels`` (:func:`label_words_for`), refused as :class:`ApiClassifier`
    would refuse them, before it is made: ``data`` (named in the message) without class labels,
    a label without a word, a count that differs, two words that are one ignoring case. The fix
    names the data's labels."""
    labels = [str(x) for x in labels]
    if not labels:
        raise InputError(f"{owner}: label_words name class labels, but {data} has numeric targets (a regression "
                         "task); an API classifier needs a classification data set")
    example = "|".join(f"{lab}:{lab}" for lab in labels)
    try:
        chosen = [str(w) for w in label_words_for(owner, words, labels) or labels]
    except InputError as e:
        raise InputError(f"{e}; e.g. label_words={example}") from None
    if len({w.strip().lower() for w in chosen}) != len(chosen):
        raise InputError(f"{owner}: label words must differ (ignoring case), got {chosen}; give one word per label "
                         f"of {labels}, e.g. label_words={example}")
    return chosen


class ApiClassifier:
    """A :class:`~.base.Classifier` answered by a completions endpoint (see the module docstring)."""

    def __init__(self, client: ApiClient, labels: Sequence[str], *, label_words: Sequence[str] | None = None,
                 template: str = DEFAULT_TEMPLATE, mode: Mode = "auto", top_logprobs: int = 20,
                 n_samples: int = 10, temperature: float = 1.0, max_tokens: int = 5,
                 name: str | None = None) -> None:
        self.client = client
        self.labels = [str(x) for x in labels]
        self.label_words = [str(w) for w in (label_words or self.labels)]
        if len(self.labels) < 2 or len(self.label_words) != len(self.labels):
            raise InputError(f"need >= 2 labels and one label word per label, got labels {self.labels} and "
                             f"label words {self.label_words}")
        if len({w.strip().lower() for w in self.label_words}) != len(self.label_words):
            raise InputError(f"label words must differ (ignoring case): {self.label_words}")
        if "{text}" not in template:
            raise InputError("template must contain {text} (where the input goes)")
        if mode not in ("auto", "logprobs", "sample"):
            raise InputError(f"mode must be auto, logprobs or sample, got {mode!r}")
        if n_samples < 1 or top_logprobs < 1 or max_tokens < 1 or temperature < 0:
            raise InputError("need n_samples, top_logprobs, max_tokens >= 1 and temperature >= 0")
        self.template, self.mode = template, mode
        self.top_logprobs, self.n_samples = int(top_logprobs), int(n_samples)
        self.temperature, self.max_tokens = float(temperature), int(max_tokens)
        self.name = name or f"api:{client.config.model or client.config.base_url}"
        client.name = client.name or self.name  # faults are reported under the model's name
        self.unmatched = 0
        self.fingerprint: str = fingerprint_of("ApiClassifier", client.config.base_url, client.config.model,
                                               self.template, self.labels, self.label_words, mode,
                                               self.top_logprobs, self.n_samples, self.temperature, self.max_tokens)
        self._patterns = [re.compile(rf"\b{re.escape(w.strip())}\b", re.IGNORECASE) for w in self.label_words]

    def __repr__(self) -> str:
        return f"ApiClassifier({self.name!r}, labels={self.labels}, mode={self.mode!r})"

    def prompt(self, x: TextInput) -> str:
        """The prompt sent for input ``x`` (a pair is joined with a newline)."""
        text = x if isinstance(x, str) else f"{x[0]}\n{x[1]}"
        choices = " or ".join(w.strip() for w in self.label_words)
        return self.template.replace("{text}", text).replace("{choices}", choices)

    def predict_proba(self, inputs: Sequence[TextInput]) -> np.ndarray:
        """(n, len(labels)) float64 probabilities, one API request per input."""
        items = check_inputs(inputs)
        if not items:
            return np.zeros((0, len(self.labels)))
        prompts = [self.prompt(x) for x in items]
        if self.mode in ("auto", "logprobs"):
            answers = self.client.post_many("completions", [
                {"prompt": p, "max_tokens": 1, "temperature": 0, "logprobs": self.top_logprobs} for p in prompts])
            rows = [self._from_logprobs(a) for a in answers]
            if all(r is not None for r in rows):
                return np.vstack(rows)
            if self.mode == "logprobs":
                raise ApiError(f"{self.name}: the endpoint returned no log-probabilities; use mode='sample'")
            self.mode = "sample"  # auto: this endpoint has none
        answers = self.client.post_many("completions", [
            {"prompt": p, "max_tokens": self.max_tokens, "temperature": self.temperature, "n": self.n_samples}
            for p in prompts])
        return np.vstack([self._from_samples(a) for a in answers])

    def _from_logprobs(self, answer: dict[str, Any]) -> np.ndarray | None:
        try:
            top = answer["choices"][0]["logprobs"]["top_logprobs"][0]
        except (KeyError, IndexError, TypeError):
            return None
        if not isinstance(top, dict):
            return None
        scores = np.zeros(len(self.labels))
        for token, lp in top.items():
            t = str(token).strip().lower()
            if not t:
                continue
            for j, w in enumerate(self.label_words):
                if w.strip().lower().startswith(t):
                    scores[j] = max(scores[j], math.exp(float(lp)))
        return self._normalise(scores)

    def _from_samples(self, answer: dict[str, Any]) -> np.ndarray:
        try:
            texts = [str(c.get("text", "")) for c in answer["choices"]]
        except (KeyError, TypeError, AttributeError):
            raise ApiError(f"{self.name}: completions answer without choices: {self.client.redact(answer, 200)}") from None
        counts = np.zeros(len(self.labels))
        for text in texts:
            hits = [(m.start(), j) for j, pat in enumerate(self._patterns) if (m := pat.search(text))]
            if hits:
                counts[min(hits)[1]] += 1
            else:
                self.unmatched += 1
        return self._normalise(counts, count_unmatched=False)

    def _normalise(self, scores: np.ndarray, count_unmatched: bool = True) -> np.ndarray:
        total = scores.sum()
        if total <= 0:
            if count_unmatched:
                self.unmatched += 1
            return np.full(len(self.labels), 1.0 / len(self.labels))
        return scores / total
