"""The one error shape every interface returns."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from strata_recall.schemas.common import Response


class ErrorDetail(Response):
    code: str = Field(description="Stable machine-readable code, e.g. missing_field, not_found, evidence_required.")
    path: str = Field(
        description="The field the error concerns, dotted, e.g. memory.links.problem_id; '' for the whole request."
    )
    message: str = Field(description="A sentence for a person or an agent.")


class ErrorResponse(Response):
    ok: Literal[False] = False
    error: ErrorDetail
    errors: list[ErrorDetail] = Field(description="Every problem found; the first is `error`.")
