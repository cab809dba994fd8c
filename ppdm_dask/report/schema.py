"""The JSON Schema of ``report.json`` (shipped with the package) and its validation."""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from importlib import resources
from typing import Any

__all__ = ["report_schema", "validate_report"]


@lru_cache(maxsize=1)
def _shipped_schema() -> str:
    return resources.files("ppdm_dask.report").joinpath("schema.json").read_text(encoding="utf-8")


def report_schema() -> dict[str, Any]:
    """The schema (draft 2020-12) every ``report.json`` is validated against before it is written:
    the shipped ``schema.json`` with ``release.family`` restricted to the families registered
    now (:func:`ppdm_dask.families.names`; the file itself names none, so that a plug-in family's
    reports validate too)."""
    from .. import families

    schema: dict[str, Any] = json.loads(_shipped_schema())
    schema["properties"]["release"]["properties"]["family"]["enum"] = list(families.names())
    return schema


def validate_report(doc: Mapping[str, Any]) -> None:
    """Raise :class:`~ppdm_dask.errors.DataFormatError` naming the first place where ``doc`` does
    not follow the schema."""
    import jsonschema

    from ..errors import DataFormatError

    validator = jsonschema.Draft202012Validator(report_schema())
    error = jsonschema.exceptions.best_match(validator.iter_errors(doc))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        raise DataFormatError(f"report does not follow its schema at {where}: {error.message}")
