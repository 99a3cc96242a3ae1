"""Archetypes: kinds of question and the read profile each gets (mode auto), defined in the log."""

from __future__ import annotations

import structlog

from strata_recall.interface.app.services.context import Services
from strata_recall.schemas.archetype import ArchetypeRequest, ArchetypeResponse

log = structlog.get_logger("strata.api")


def define(s: Services, request: ArchetypeRequest) -> ArchetypeResponse:
    outcome, position = s.log.define_archetype(
        request.name, request.description, list(request.examples), request.profile.model_dump()
    )
    log.info("archetype", name=request.name, outcome=outcome, position=position)
    return ArchetypeResponse(name=request.name, outcome=outcome, position=position)
