"""What the tests share besides their fixtures (those are in ``tests/conftest.py``): small
deterministic models and data sets that need no download, a completions endpoint and a
PostgreSQL server to test against, and checks of what a run did.

``tests/`` is on ``sys.path`` (the ``pythonpath`` of pyproject.toml's pytest section), so a test
imports them as ``from helpers.tiny_lm import tiny_lm``; a process a test starts puts
:data:`TESTS` on its path first.

* :mod:`helpers.tiny_bert`, :mod:`helpers.tiny_classifier`, :mod:`helpers.tiny_lm`: tiny
  Hugging Face models built from a config;
* :mod:`helpers.lexicon`: a word-lexicon classifier and toy sentiment splits with known answers;
* :mod:`helpers.marker_data`, :mod:`helpers.pair_data`: toy labelled CSV files;
* :mod:`helpers.completions`: a completions endpoint in a thread, answering from a local model;
* :mod:`helpers.pg_server`: a throwaway PostgreSQL server;
* :mod:`helpers.compare`: compare's options, estimates made by hand, and tiny sizes;
* :mod:`helpers.observe`: the calls of a method and the cells of a results store;
* :mod:`helpers.installed`: skips for the offline assets and packaged models ./setup.sh installs.
"""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]  # tests/: on sys.path, holding this package
ROOT = TESTS.parent  # the repository: docs/, scripts/, reproductions/
