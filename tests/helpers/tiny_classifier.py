"""A tiny BERT sentiment classifier (negative/positive) saved as a Hugging Face model directory,
built from a config (no download): the model of the command-line tests, shared with the tests of
the console, fingerprints, model specs, runs, the SCoPE study and llama.cpp."""

from __future__ import annotations

import transformers

from helpers.tiny_bert import word_tokenizer

WORDS = ["good", "great", "bad", "awful", "movie", "film", "story", "acting", "plot", "music",
         "terrible", "wonderful", "boring", "exciting", "director", "the", "a", "was", "."]


def tiny_model_dir(path, seed):
    tok = word_tokenizer(WORDS)
    cfg = transformers.BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2,
                                  num_attention_heads=2, intermediate_size=37, num_labels=2,
                                  id2label={0: "negative", 1: "positive"},
                                  label2id={"negative": 0, "positive": 1})
    import torch

    torch.manual_seed(seed)
    model = transformers.BertForSequenceClassification(cfg).eval()
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return str(path)
