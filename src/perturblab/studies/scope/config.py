"""Options of a shared-invariance study (defaults follow the SCoPE paper)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ...errors import InputError
from ...measures.scope import DEFAULT_CUTOFF, DEFAULT_TOLERANCE
from ...perturb.capabilities import CAPABILITIES
from ...perturb.goals import InvarianceGoal
from ...perturb.search import SearchOptions

#: the capabilities run on the samples fairness qualifies (App. C)
STAR_OF_FAIRNESS = ("synonym*", "typo*")


@dataclass
class ScopeOptions(SearchOptions):
    """Options of a shared-invariance study other than its models (defaults follow the SCoPE
    paper); the checkpoint study shares them."""

    capabilities: list[str] = field(default_factory=lambda: ["synonym", "typo"])
    data: str = "rotten_tomatoes"
    n: int | None = 500  # base samples per trial; None: the whole test split
    trials: int = 3
    seed: int = 0
    tolerance: float = DEFAULT_TOLERANCE
    cutoff: float = DEFAULT_CUTOFF
    test_size: float = 0.25
    perturb_field: int | None = 0  # the text of a pair the search changes: 0, 1, or None for both
    n_boot: int = 1000

    def search_options(self) -> dict[str, Any]:
        """The options a search result depends on (part of its content key)."""
        opts = {"loss": self.loss, "search": self.search, "max_words": self.max_words, "patience": self.patience,
                "max_candidates": self.max_candidates, "perturb_field": self.perturb_field, "seed": self.seed}
        if self.search == "beam":
            opts["beam_width"] = self.beam_width
        return opts

    def capability_plan(self) -> list[str]:
        """The capabilities in the order they run: fairness first, then its starred companions
        (SCoPE App. C: compared on the same base samples)."""
        caps = list(dict.fromkeys(self.capabilities))
        if "fairness" in caps:
            caps = ["fairness"] + [c for c in caps if c != "fairness"]
            caps += [c for c in STAR_OF_FAIRNESS if c not in caps]
        return caps


@dataclass(kw_only=True)
class ScopeConfig(ScopeOptions):
    """Options of a shared-invariance study: the reference m1, the targets m2 and the
    :class:`ScopeOptions`."""

    reference: str
    targets: list[str]

    def validate(self) -> None:
        if not self.targets:
            raise InputError("give at least one target model (--targets)")
        if (self.n is not None and self.n < 1) or self.trials < 1:
            raise InputError(f"n and trials must be >= 1, got n={self.n}, trials={self.trials}")
        for c in self.capabilities:
            base = c.rstrip("*")
            if base not in CAPABILITIES:
                CAPABILITIES.get(c)  # raises UnknownNameError listing the known ones
        InvarianceGoal(self.loss)

    def options(self) -> dict[str, Any]:
        """The options as a JSON-able dict."""
        return asdict(self)
