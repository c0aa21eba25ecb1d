"""The engine's model catalogue: exact lookups and the GET /v1/models body."""

from __future__ import annotations

import pytest

from engine.model_catalogue import MODELS_CREATED, ModelCatalogue, ModelInfo


def _model(name: str, credit: float = 1.0) -> ModelInfo:
    return ModelInfo(name=name, uid=f"uid-{name}", provider="acme", credit=credit, vision=False)


def test_the_default_catalogue_serves_a_few_known_models() -> None:
    catalogue = ModelCatalogue.default()
    assert catalogue.names() == [
        "claude-sonnet-4-6",
        "claude-opus-4-1",
        "gpt-5",
        "gemini-2.5-pro",
        "swe-1",
        "cascade-base",
    ]
    assert catalogue.get("claude-sonnet-4-6") == ModelInfo(
        name="claude-sonnet-4-6", uid="claude-sonnet-4-6", provider="anthropic", credit=1.0, vision=True
    )
    swe = catalogue.get("swe-1")
    assert swe is not None
    assert swe.uid == "MODEL_SWE_1"
    assert swe.credit == 0.0
    assert not swe.vision
    assert len(catalogue) == 6
    assert [model.name for model in catalogue] == catalogue.names()


@pytest.mark.parametrize("name", ["Claude-Sonnet-4-6", "claude-sonnet-4-6 ", "claude-sonnet", "MODEL_SWE_1", ""])
def test_lookups_are_exact(name: str) -> None:
    assert ModelCatalogue.default().get(name) is None


def test_the_models_list_body() -> None:
    catalogue = ModelCatalogue([_model("a"), _model("b")])
    assert catalogue.openai_list() == {
        "object": "list",
        "data": [
            {"id": "a", "object": "model", "created": MODELS_CREATED, "owned_by": "acme"},
            {"id": "b", "object": "model", "created": MODELS_CREATED, "owned_by": "acme"},
        ],
    }


def test_the_default_list_names_every_model_with_its_provider() -> None:
    body = ModelCatalogue.default().openai_list()
    assert [(entry["id"], entry["owned_by"]) for entry in body["data"]] == [
        ("claude-sonnet-4-6", "anthropic"),
        ("claude-opus-4-1", "anthropic"),
        ("gpt-5", "openai"),
        ("gemini-2.5-pro", "google"),
        ("swe-1", "windsurf"),
        ("cascade-base", "windsurf"),
    ]


def test_a_name_listed_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="listed twice"):
        ModelCatalogue([_model("a"), _model("a", credit=2.0)])


@pytest.mark.parametrize("credit", [-1.0, float("inf"), float("nan")])
def test_a_credit_must_be_finite_and_not_negative(credit: float) -> None:
    with pytest.raises(ValueError, match="credit"):
        _model("a", credit=credit)


def test_a_model_needs_a_name_and_a_uid() -> None:
    with pytest.raises(ValueError, match="name and a uid"):
        ModelInfo(name="", uid="u", provider="p", credit=0.0, vision=False)
    with pytest.raises(ValueError, match="name and a uid"):
        ModelInfo(name="n", uid="", provider="p", credit=0.0, vision=False)


def test_a_free_model_is_allowed() -> None:
    assert ModelCatalogue([_model("free", credit=0.0)]).get("free") == _model("free", credit=0.0)
