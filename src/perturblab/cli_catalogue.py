"""CLI commands that list what is available and check the offline assets: ``perturblab doctor``,
``assets``, ``capabilities``, ``models`` and ``datasets`` (registered by :mod:`perturblab.cli`)."""

from __future__ import annotations

import argparse
from typing import Callable


def add_parsers(sub: argparse._SubParsersAction) -> None:
    sub.add_parser("doctor", help="which offline assets are present and how to get the rest")
    a = sub.add_parser("assets", help="manage offline assets")
    a.add_argument("action", choices=["install"])
    a.add_argument("--force", action="store_true")
    sub.add_parser("capabilities", help="list registered capabilities and perturbations")
    sub.add_parser("models", help="list model presets")
    sub.add_parser("datasets", help="list data sets, GLUE task names and corpora")


def cmd_doctor(args) -> int:
    from .asset_checks import doctor
    from .assets import permission_warnings

    rows = doctor()  # loads every present asset
    required = [r for r in rows if not r.optional]
    for r in rows:
        mark = "ok " if r.ok else ("!! " if r.present else "-- ")
        tag = " (optional)" if r.optional else ""
        print(f"{mark} {r.name:38s} {r.kind:6s} {r.location if r.present else r.how}{tag}")
        if r.error:
            print(f"    {r.error}")
    missing = [r for r in required if not r.present]
    broken = [r for r in rows if r.present and not r.ok]
    print(f"\n{len(required) - len(missing)} of {len(required)} required assets present"
          + ("; run ./setup.sh to install the missing ones" if missing else "")
          + (f"; {len(broken)} present but not loading (fix above)" if broken else ""))
    for line in permission_warnings():
        print(line)
    # 1 when a required asset is missing or any present asset does not load, so scripts and CI can gate on it
    return 1 if missing or broken else 0


def cmd_assets(args) -> int:
    from .assets import install_assets

    install_assets(force=args.force)
    print("assets installed")
    return 0


def cmd_capabilities(args) -> int:
    from .perturb.capabilities import CAPABILITIES

    for name, doc in CAPABILITIES.describe().items():
        print(f"{name:12s} {doc}")
    from .perturb.catalogue import PERTURBATIONS

    print("\nperturbations (seeded, used without search: layer-probes):")
    for name, doc in PERTURBATIONS.describe().items():
        print(f"{name:22s} {doc}")
    return 0


def cmd_models(args) -> int:
    from .models.presets import PRESETS

    for name, doc in PRESETS.describe().items():
        print(f"{name:16s} {doc}")
    from .models.lm_presets import LM_PRESETS

    print("\nlanguage models (selfcheck, scope-lm; their decoder states in similarity):")
    for name, doc in LM_PRESETS.describe().items():
        print(f"{name:18s} {doc}")
    from .models.zoo import TRAINABLE

    print("\ntrainable models (learnability; robustness trains them on the training split):")
    for name, doc in TRAINABLE.describe().items():
        print(f"{name:18s} {doc}")
    print("\nAny local HF directory or hub id (when a hub is reachable) also works; language models also "
          "take a .gguf file.")
    return 0


def cmd_datasets(args) -> int:
    from .data.corpus import available_corpora
    from .data.glue import GLUE_TASKS
    from .data.loaders import available_datasets

    print("labelled data sets (--data NAME):")
    for name, doc in available_datasets().items():
        print(f"  {name:16s} {doc}")
    print("\nGLUE tasks (--data glue:TASK[:SPLIT]; read through Hugging Face datasets: pip install perturblab[hf] "
          "and a reachable hub):")
    for t in GLUE_TASKS.values():
        fields = ", ".join(c for c in (t.text_column, t.text_b_column) if c)
        target = "regression" if t.task == "regression" else "/".join(t.label_names)
        print(f"  glue:{t.name:10s} {fields:22s} {target:36s} metric {t.metric}, evaluate on {t.eval_split}")
    print("\nbuilt offline from a corpus: next:CORPUS (a sentence-pair task: is the second sentence the next one "
          "of the first's document?) and, for generation, lead:CORPUS")
    print("\ncorpora of unlabelled text (selfcheck, scope-lm, similarity, generation lead:CORPUS):")
    for name, doc in available_corpora().items():
        print(f"  {name:16s} {doc}")
    print("\nAny CSV / TSV / JSONL / Parquet file works too: name its columns with --text-fields A[,B] and "
          "--label-column; --task regression for numeric targets.")
    return 0


COMMANDS: dict[str, Callable] = {"doctor": cmd_doctor, "assets": cmd_assets, "capabilities": cmd_capabilities,
                                 "models": cmd_models, "datasets": cmd_datasets}
