"""``serving(model)``: a completions-endpoint ``respond`` for :class:`conftest.CompletionsServer`
that answers from a local classifier; shared by the API-classifier and runs tests."""

from __future__ import annotations

import math
import zlib

import numpy as np

WORDS = {"negative": " Negative", "positive": " positive"}  # label -> answer token (case and space vary)


def serving(model, *, logprobs: bool = True, distractor: bool = True):
    """``respond`` for CompletionsServer: the first prompt line is the text; answers from ``model``."""

    def respond(body):
        text = body["prompt"].split("\n")[0]
        p = model.predict_proba([text])[0]
        usage = {"prompt_tokens": len(body["prompt"].split()), "completion_tokens": 1}
        if "logprobs" in body:
            if not logprobs:
                return {"choices": [{"text": WORDS[model.labels[int(p.argmax())]]}], "usage": usage}
            top = {WORDS[lab]: math.log(max(q, 1e-300)) for lab, q in zip(model.labels, p)}
            if distractor:
                top[" The"] = math.log(0.3)  # a token that names no label
            return {"choices": [{"text": "", "logprobs": {"top_logprobs": [top]}}], "usage": usage}
        rng = np.random.default_rng(zlib.crc32(body["prompt"].encode()))
        draws = rng.choice(len(model.labels), size=body["n"], p=p)
        texts = [f"{WORDS[model.labels[k]]}." if i % 10 else " I am not sure" for i, k in enumerate(draws)]
        return {"choices": [{"text": t} for t in texts], "usage": usage}

    return respond
