"""This package's studies, in the order of the command list (the entry point ``perturblab`` of the
group ``perturblab.studies`` names :data:`STUDIES`; :mod:`.registry` reads it first)."""

from __future__ import annotations

from .compare.function import Compare, Demo
from .grounding.similarity import SimilarityStudy
from .grounding.study import GroundingStudy
from .learnability.study import LearnabilityStudy
from .robustness.finetuning.study import FinetuningStudy
from .robustness.generation import GenerationStudy
from .robustness.layer_probes.study import LayerProbeStudy
from .robustness.study import RobustnessStudy
from .scope.checkpoints import CheckpointStudy
from .scope.lm import LMScopeStudy
from .scope.study import ScopeStudy
from .selfcheck.study import SelfCheckStudy

#: the question users ask first (compare, and its demo), then the studies by paper: SCoPE,
#: learnability, self-supervised evaluation, robustness, grounding
STUDIES = [Compare, ScopeStudy, Demo, LMScopeStudy, CheckpointStudy, LearnabilityStudy, SelfCheckStudy,
           RobustnessStudy, GenerationStudy, FinetuningStudy, LayerProbeStudy, SimilarityStudy, GroundingStudy]
