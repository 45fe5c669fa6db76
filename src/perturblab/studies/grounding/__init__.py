"""The grounding paper (Ding et al. 2021): which representation similarity measures track the
functionality of the representations (:mod:`.study`)."""

from .config import MEASURES, PC_FRACTIONS, VARIANTS, GroundingArgs, SimilarityArgs
from .result import GroundingStudyResult, render_table
from .study import GroundingStudy, Member

__all__ = ["MEASURES", "PC_FRACTIONS", "VARIANTS", "GroundingArgs", "GroundingStudy", "GroundingStudyResult",
           "Member", "SimilarityArgs", "render_table"]
