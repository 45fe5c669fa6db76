"""What a language model can do, and checking it before a study does any work.

A :class:`~.lm.LanguageModel` backend may lack some of the protocol's methods: an
OpenAI-compatible completions API gives per-token log-probs of a text and generations, but no
full next-token distributions over the vocabulary and no local tokenizer
(:mod:`.api_lm`). A model says what it can do in ``capabilities`` (a frozenset of
:data:`CAPABILITIES` keys; :class:`~.lm.HFCausalLM` has them all); studies declare which
capabilities each metric calls and check every model with :func:`check_metric_capabilities`
(or one model with :func:`require`) before sending a single input.
"""

from __future__ import annotations

from typing import Any, Collection, Mapping, Sequence

from ..errors import CapabilityError

#: What a language model can do (its protocol methods, and ``tokenizer``: the tokenizer object),
#: with the words error messages use for each.
CAPABILITIES: dict[str, str] = {
    "encode": "a local tokenizer", "decode": "a local tokenizer",
    "tokenizer": "the tokenizer object (to tokenize pieces of a text separately)",
    "token_logprobs": "per-token log-probabilities of a text",
    "next_token_logprobs": "full next-token distributions over the vocabulary",
    "span_logprobs": "full next-token distributions at every position of a span",
    "generate": "text generation"}
ALL_CAPABILITIES: frozenset[str] = frozenset(CAPABILITIES)


def capabilities_of(model: Any) -> frozenset[str]:
    """``model.capabilities`` when it has one, else the :data:`CAPABILITIES` it has attributes for."""
    caps = getattr(model, "capabilities", None)
    if caps is not None:
        return frozenset(caps)
    return frozenset(c for c in CAPABILITIES if getattr(model, c, None) is not None)


def describe_capabilities(names: Collection[str]) -> str:
    """The words for ``names`` (duplicates merged), e.g. for an error message."""
    return " and ".join(dict.fromkeys(CAPABILITIES.get(n, n) for n in sorted(names)))


def require(model: Any, needed: Collection[str], *, purpose: str, instead: str = "") -> None:
    """Raise :class:`CapabilityError` unless ``model`` has every capability in ``needed``.

    ``purpose`` says what they are for ("the long-range context metric"); ``instead`` what to
    do otherwise.
    """
    missing = set(needed) - capabilities_of(model)
    if missing:
        name = getattr(model, "name", type(model).__name__)
        raise CapabilityError(f"{name} cannot be used for {purpose}: it does not give "
                              f"{describe_capabilities(missing)}" + (f"; {instead}" if instead else ""))


def check_metric_capabilities(models: Mapping[str, Collection[str]], needs: Mapping[str, Collection[str]],
                              requested: Sequence[str], *, study: str, hint: str = "") -> None:
    """One :class:`CapabilityError` listing every model × requested metric that cannot run.

    ``models`` maps model names to their capabilities and ``needs`` every metric of the study
    to the capabilities it calls; each model's line also names the metrics it supports.
    """
    lines = []
    for name, caps in models.items():
        have = set(caps)
        groups: dict[str, list[str]] = {}  # what is missing -> the metrics that need it
        for m in dict.fromkeys(requested):
            if not set(needs[m]) <= have:
                groups.setdefault(describe_capabilities(set(needs[m]) - have), []).append(repr(m))
        if groups:
            why = "; ".join(f"{', '.join(ms)} (needs {d})" for d, ms in groups.items())
            ok = [m for m in needs if set(needs[m]) <= have]
            lines.append(f"{name} cannot compute {why}; metrics it supports: {', '.join(ok) or 'none'}")
    if lines:
        raise CapabilityError(f"{study} cannot run as configured:\n  " + "\n  ".join(lines)
                              + (f"\n{hint}" if hint else ""))
