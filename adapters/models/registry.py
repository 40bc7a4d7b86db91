"""Lazy registry of model adapters: ``provider:model`` → adapter instance.

A provider module is imported only when a spec names it, so optional dependencies stay optional.
Each provider module exposes ``create(model: str, options: AdapterOptions) -> ModelAdapter``.
"""

from __future__ import annotations

import importlib
import unicodedata

from adapters.models.base import AdapterError, AdapterOptions, ModelAdapter

__all__ = ["PROVIDERS", "UnknownModelError", "create_adapter", "split_spec"]

PROVIDERS: dict[str, str] = {
    "openai": "adapters.models.openai",
    "gemini": "adapters.models.gemini",
    "anthropic": "adapters.models.anthropic",
    "reference": "adapters.models.reference",
    "cassette": "adapters.models.cassette",
    "scripted": "adapters.models.scripted",
}


class UnknownModelError(AdapterError, ValueError):
    """The model spec names no known provider."""


def split_spec(spec: str) -> tuple[str, str]:
    provider, sep, model = spec.partition(":")
    if not sep or not provider or not model:
        raise UnknownModelError(
            f"model spec {spec!r} is not PROVIDER:MODEL (providers: {', '.join(PROVIDERS)})"
        )
    if provider not in PROVIDERS:
        raise UnknownModelError(
            f"model spec {spec!r}: unknown provider {provider!r} (known: {', '.join(PROVIDERS)})"
        )
    if model != model.strip() or any(unicodedata.category(c) == "Cc" for c in model):
        # Sent as it is ("gpt-4o " or a name with a newline): the API refuses it, or a server
        # that trims it answers for a model the run's record names otherwise.
        raise UnknownModelError(
            f"model spec {spec!r}: the model name has spaces at an end or a control character"
        )
    return provider, model


def create_adapter(spec: str, options: AdapterOptions | None = None) -> ModelAdapter:
    provider, model = split_spec(spec)
    module = importlib.import_module(PROVIDERS[provider])
    return module.create(model, options or AdapterOptions())
