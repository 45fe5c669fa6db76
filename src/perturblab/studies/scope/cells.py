"""The cells of the SCoPE study: what runs on the executor (here, or in a Ray worker).

Two kinds of cell: a search cell (x' = C(x; m1), Eq. 1, for a chunk of base samples of one
capability and trial) and a prediction cell (one model's class probabilities on one list of
inputs: a trial's base samples, or what one capability's searches found).

A cell is a pure function of what it is given: it scores its inputs in batches made from them
alone. A model loaded by name is scored behind a prediction cache that lives for one cell
(repeated inputs are scored once, each call's new inputs in one batch), never one shared by the
cells a process ran before. A transformer's probabilities move in their last bits (about 1e-7)
with the batch a text is scored in, so a cache shared across cells would make a cell's numbers
depend on which cells ran before it in that process: on Ray, on which worker it ran. Scored from
its own inputs only, a cell gives the same bits wherever it runs, and a run on Ray writes the same
bytes as a run on the local executor.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...data.examples import Dataset
from ...models.base import Classifier
from ...perturb.capabilities import get_capability
from ...perturb.engine import run_searches
from ...perturb.goals import InvarianceGoal
from ...perturb.search import SearchProblem
from ...perturb.search_settings import SearchSettings
from ..remote import RemoteLoad


def to_json(x: Any) -> Any:
    """How a record holds an input: a text as itself, a text pair as the JSON list of its two
    texts (read back with :func:`from_json` and the example's number of fields)."""
    return json.dumps(list(x)) if isinstance(x, (tuple, list)) else x


def from_json(s: str | None, pair: bool) -> Any:
    """The input a search record holds: a pair when the example searched is a pair, else the
    text as stored, even one that reads as a JSON list (whether an input is a pair is known from
    the example, which is part of the record's key, never guessed from the stored string)."""
    if s is None or not pair:
        return s
    a, b = json.loads(s)
    return (a, b)


@dataclass(frozen=True)
class RemoteModel(RemoteLoad):
    """A model of the SCoPE study as a cell in another process gets it (:class:`~..remote.RemoteLoad`:
    loaded once per process, with its head trained on ``train``). ``cached``: the driver scores
    the model behind a float32 prediction cache (a model loaded by name), so each cell does too
    (:func:`cell_scorer`)."""

    cached: bool = True


#: the name this class had when it carried the reference only
RemoteReference = RemoteModel


def cell_scorer(model: Classifier | RemoteModel) -> Classifier:
    """What one cell scores with: a model the driver holds behind a prediction cache (one loaded
    by name) behind a fresh in-memory cache of its own, float32 as the driver's; a ready model as
    it is (the driver scores a given object unwrapped)."""
    from ...models.cache import CachedClassifier

    if isinstance(model, RemoteModel):
        loaded = model.load()
        return CachedClassifier(loaded) if model.cached else loaded
    if isinstance(model, CachedClassifier):
        return CachedClassifier(model.inner)
    return model


def remote_model(model: Classifier, spec: str, train: Dataset, seed: int, data: str, given: bool) -> RemoteModel:
    """The :class:`RemoteModel` of a model the driver holds: a ready model (``given``) travels
    as itself, without the driver's cache; one loaded by name is loaded again by its ``spec``."""
    from ...core.keys import model_fingerprint
    from ...models.cache import CachedClassifier

    cached = isinstance(model, CachedClassifier)
    inner = model.inner if cached else model
    return RemoteModel(spec, "classifier", model_fingerprint(model), inner if given else None, train=train, seed=seed,
                       data=data, cached=cached)


def search_group(reference: Classifier | RemoteModel, settings: SearchSettings, group: tuple[str, int],
                 chunk: list[tuple[int, tuple]]) -> list[dict[str, Any]]:
    """The phase function of the searches: ``group`` is (capability, trial)."""
    cap_name, trial = group
    return search_chunk(reference, settings, cap_name, trial, chunk)


def search_chunk(reference: Classifier | RemoteModel, settings: SearchSettings, cap_name: str,
                 trial: int, chunk: list[tuple[int, tuple]]) -> list[dict[str, Any]]:
    """One search cell: x' = C(x; m1) (Eq. 1) for each ``(sample id, fields)`` of ``chunk``, all
    searches in lock-step with one batched reference call per round. Each sample's random
    choices come from ``default_rng([seed, trial, sample id])``, so a result does not depend on
    how samples are chunked or where the cell runs. Returns JSON-able records (a text pair as
    the JSON list of its two texts)."""
    scorer = cell_scorer(reference)
    cap = get_capability(cap_name.rstrip("*"), alphabetic_only=settings.alphabetic_only)
    goal = InvarianceGoal(settings.loss)
    swap, checks = settings.synonym_setup(cap)
    problems = [SearchProblem(fields=fields, transformation=swap, constraints=cap.constraints, checks=checks,
                              goal=goal, rng=np.random.default_rng([settings.seed, trial, i]),
                              field_index=settings.perturb_field, max_candidates=settings.max_candidates,
                              max_positions=settings.max_positions)
                for i, fields in chunk]
    results = run_searches(problems, settings.search_method(), scorer, progress=False)
    return [{"capability": cap_name, "trial": trial, "sample_id": i, "original": to_json(r.original),
             "perturbed": to_json(r.perturbed), "changes": [list(c) for c in r.changes],
             "ref_loss": None if math.isnan(r.loss) else r.loss,
             "argmax_invariant": None if r.argmax_invariant is None else int(r.argmax_invariant),
             "status": r.status, "queries": r.queries,
             **({"positions_cut": r.positions_cut} if r.positions_cut else {})}  # only where the cap cut positions
            for (i, _), r in zip(chunk, results)]


def predict_cells(group: Any, payloads: list[tuple[Classifier | RemoteModel, list[Any]]]) -> list[dict[str, Any]]:
    """The phase function of the predictions: each payload is (model, inputs)."""
    return [predict_cell(model, inputs) for model, inputs in payloads]


def predict_cell(model: Classifier | RemoteModel, inputs: list[Any]) -> dict[str, Any]:
    """One prediction cell: the model's class probabilities on ``inputs`` (texts, or text pairs as
    lists), scored in one call, stored with their dtype and shape so that :func:`probabilities`
    reads back the array the model returned, bit for bit (a float32 value is exact as a JSON
    float, and so is a float64 one)."""
    xs = [x if isinstance(x, str) else tuple(x) for x in inputs]
    p = np.asarray(cell_scorer(model).predict_proba(xs))
    return {"dtype": p.dtype.str, "shape": list(p.shape), "probs": p.ravel().tolist()}


def probabilities(stored: dict[str, Any]) -> np.ndarray:
    """The array a :func:`predict_cell` scored, from its stored record."""
    return np.asarray(stored["probs"], dtype=np.dtype(stored["dtype"])).reshape(stored["shape"])
