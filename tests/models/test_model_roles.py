"""The model roles are declared once: the resolver, the checks of specs, the API definitions of a
study config and the roles of options all read them from :mod:`perturblab.models.base`."""

from __future__ import annotations

import subprocess
import sys

import pytest

from perturblab.errors import InputError
from perturblab.core.options import MODEL_ROLES
from perturblab.models.base import API_ROLES


def test_option_roles_are_the_model_roles_and_model():
    from perturblab.core.options import ROLES as OPTION_ROLES
    from perturblab.core.options import Opt

    assert OPTION_ROLES == (*MODEL_ROLES, "model")
    for role in OPTION_ROLES:  # every model role is an option role, "regressor" included
        assert Opt(role=role).role == role
    with pytest.raises(ValueError, match="unknown role 'model_kind'"):
        Opt(role="model_kind")


def test_api_roles_are_model_roles_and_the_default_of_a_definition():
    from perturblab.models import named

    assert set(API_ROLES) < set(MODEL_ROLES)
    d = named.check_definition("gpt", {"api": {"base_url": "http://127.0.0.1:1/v1", "model": "m"}})
    assert d["roles"] == list(API_ROLES)
    with pytest.raises(InputError, match="roles must be a subset of \\['classifier', 'language_model'\\]"):
        named.check_definition("gpt", {"api": {"base_url": "http://127.0.0.1:1/v1", "roles": ["encoder"]}})


@pytest.mark.parametrize("role", MODEL_ROLES)
def test_an_api_spec_serves_the_api_roles_only(role, monkeypatch):
    from perturblab.models.spec_check import fits

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert fits("api:m@http://127.0.0.1:1/v1[api_key_env=none]", role) == (role in API_ROLES)


def test_the_resolver_and_the_checks_refuse_a_role_naming_every_role():
    from perturblab.models.resolve import load_model
    from perturblab.models.spec_check import check_spec

    for refuse in (check_spec, load_model):
        with pytest.raises(InputError, match="role must be one of classifier, regressor, encoder, language_model, "
                                             "got 'model'"):
            refuse("tfidf-lr", "model")


@pytest.mark.parametrize("module", ["perturblab.models.spec", "perturblab.models.spec_check",
                                    "perturblab.models.resolve", "perturblab.core.options"])
def test_each_module_imports_first_in_a_fresh_process(module):
    """Imported before anything else, each module loads (an import circle would fail here)."""
    out = subprocess.run([sys.executable, "-c", f"import {module}; print('ok')"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
