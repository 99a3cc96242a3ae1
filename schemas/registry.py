"""Every contract by name, and its JSON Schema export (kept in schemas/json/, checked by a test)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from strata_recall.schemas.access import WhoamiRequest, WhoamiResponse
from strata_recall.schemas.archetype import ArchetypeRequest, ArchetypeResponse
from strata_recall.schemas.browse import (
    ContradictionsRequest,
    ContradictionsResponse,
    MemoriesRequest,
    MemoriesResponse,
    MemoryRequest,
    MemoryResponse,
    OverviewRequest,
    OverviewResponse,
    ReposRequest,
    ReposResponse,
    ReviewQueueRequest,
    ReviewRequest,
    ReviewResponse,
    SessionsRequest,
    SessionsResponse,
    TimelineRequest,
    TimelineResponse,
)
from strata_recall.schemas.edit import EditRequest, EditResponse
from strata_recall.schemas.errors import ErrorResponse
from strata_recall.schemas.feedback import FeedbackRequest, FeedbackResponse
from strata_recall.schemas.files import FilesRequest, FilesResponse
from strata_recall.schemas.forget import ForgetRequest, ForgetResponse
from strata_recall.schemas.index import IndexRequest, IndexResponse
from strata_recall.schemas.operator import (
    LogRequest,
    LogResponse,
    RecordedResponse,
    RestoreRequest,
    TokenCreateRequest,
    TokenCreateResponse,
    TokenListRequest,
    TokenListResponse,
    TokenRevokeRequest,
    TokenRevokeResponse,
    UnmergeRequest,
)
from strata_recall.schemas.read import CompactReadResponse, ReadRequest, ReadResponse
from strata_recall.schemas.update import UpdateRequest, UpdateResponse
from strata_recall.schemas.write import ImportResponse, WriteRequest, WriteResponse

CONTRACTS: dict[str, type[BaseModel]] = {
    "read-request": ReadRequest,
    "read-response": ReadResponse,
    "read-response-compact": CompactReadResponse,
    "write-request": WriteRequest,
    "write-response": WriteResponse,
    "update-request": UpdateRequest,
    "update-response": UpdateResponse,
    "forget-request": ForgetRequest,
    "forget-response": ForgetResponse,
    "edit-request": EditRequest,
    "edit-response": EditResponse,
    "feedback-request": FeedbackRequest,
    "feedback-response": FeedbackResponse,
    "index-request": IndexRequest,
    "index-response": IndexResponse,
    "files-request": FilesRequest,
    "files-response": FilesResponse,
    "import-response": ImportResponse,
    "archetype-request": ArchetypeRequest,
    "archetype-response": ArchetypeResponse,
    "overview-request": OverviewRequest,
    "overview-response": OverviewResponse,
    "memories-request": MemoriesRequest,
    "memories-response": MemoriesResponse,
    "memory-request": MemoryRequest,
    "memory-response": MemoryResponse,
    "timeline-request": TimelineRequest,
    "timeline-response": TimelineResponse,
    "review-queue-request": ReviewQueueRequest,
    "repos-request": ReposRequest,
    "repos-response": ReposResponse,
    "review-request": ReviewRequest,
    "review-response": ReviewResponse,
    "contradictions-request": ContradictionsRequest,
    "contradictions-response": ContradictionsResponse,
    "sessions-request": SessionsRequest,
    "sessions-response": SessionsResponse,
    "whoami-request": WhoamiRequest,
    "whoami-response": WhoamiResponse,
    "unmerge-request": UnmergeRequest,
    "restore-request": RestoreRequest,
    "recorded-response": RecordedResponse,
    "token-create-request": TokenCreateRequest,
    "token-create-response": TokenCreateResponse,
    "token-list-request": TokenListRequest,
    "token-list-response": TokenListResponse,
    "token-revoke-request": TokenRevokeRequest,
    "token-revoke-response": TokenRevokeResponse,
    "log-request": LogRequest,
    "log-response": LogResponse,
    "error": ErrorResponse,
}

JSON_DIR = Path(__file__).parent / "json"


def json_schema(name: str) -> dict[str, Any]:
    model = CONTRACTS[name]
    mode: Literal["validation", "serialization"] = "validation" if name.endswith("request") else "serialization"
    schema = model.model_json_schema(mode=mode)
    schema["$id"] = f"strata/{name}"
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema


def render(name: str) -> str:
    return json.dumps(json_schema(name), indent=2, sort_keys=True) + "\n"


def export(folder: Path = JSON_DIR) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name in CONTRACTS:
        path = folder / f"{name}.schema.json"
        path.write_text(render(name), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":  # python -m strata_recall.schemas.registry: regenerate the exported files
    for p in export():
        print(p)
