"""How events are encoded in the log: eventsourcing's JSON format, written by orjson.

The stored bytes are the format `JSONTranscoder` writes (custom types as {"_type_", "_data_"}), so
either transcoder reads the other's events; orjson encodes about twice as fast, which the bulk
import needs. Events carry strings, numbers, lists, dicts and datetimes only: orjson would write a
UUID value as a plain string, so memory ids inside events are always `str` (a test checks every
event type round-trips).
"""

from __future__ import annotations

from typing import Any

import orjson
from eventsourcing.persistence import JSONTranscoder

_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS


class OrjsonTranscoder(JSONTranscoder):
    def encode(self, obj: Any) -> bytes:
        return orjson.dumps(obj, default=self._encode_obj, option=_OPTIONS)

    def decode(self, data: bytes) -> Any:
        return self._revive(orjson.loads(data))

    def _revive(self, value: Any) -> Any:
        """Turn {"_type_", "_data_"} objects back into their types, innermost first (as the
        json module's object_hook does)."""
        kind = type(value)
        if kind is dict:
            for key, item in value.items():
                if type(item) is dict or (type(item) is list and item and type(item[0]) in _CONTAINERS):
                    value[key] = self._revive(item)
            return self._decode_obj(value) if len(value) == 2 and "_type_" in value else value
        if kind is list and value and type(value[0]) in _CONTAINERS:  # event lists are homogeneous
            return [self._revive(item) for item in value]
        return value


_CONTAINERS = (dict, list)
