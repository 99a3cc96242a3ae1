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
from eventsourcing.persistence import JSONTranscoder, TranscodingNotRegisteredError

_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS


class OrjsonTranscoder(JSONTranscoder):
    """JSONTranscoder's format and registry of transcodings (register, types, names), its encoding
    and decoding done here (JSONTranscoder's own helpers are private to it)."""

    def encode(self, obj: Any) -> bytes:
        return orjson.dumps(obj, default=self.encoded, option=_OPTIONS)

    def decode(self, data: bytes) -> Any:
        return self.revive(orjson.loads(data))

    def encoded(self, obj: Any) -> dict[str, Any]:
        """A value of a registered custom type as {"_type_", "_data_"}."""
        transcoding = self.types.get(type(obj))
        if transcoding is None:
            msg = f"Object of type {type(obj)} is not serializable. Please define and register a custom transcoding for this type."
            raise TranscodingNotRegisteredError(msg)
        return {"_type_": transcoding.name, "_data_": transcoding.encode(obj)}

    def decoded(self, value: dict[str, Any]) -> Any:
        """A {"_type_", "_data_"} object back as its type (other dicts as they are)."""
        if len(value) != 2 or "_type_" not in value or "_data_" not in value:
            return value
        transcoding = self.names.get(value["_type_"])
        if transcoding is None:
            msg = f"Data serialized with name '{value['_type_']}' is not deserializable. Please register a custom transcoding for this type."
            raise TranscodingNotRegisteredError(msg)
        return transcoding.decode(value["_data_"])

    def revive(self, value: Any) -> Any:
        """Turn {"_type_", "_data_"} objects back into their types, innermost first (as the
        json module's object_hook does)."""
        kind = type(value)
        if kind is dict:
            for key, item in value.items():
                if type(item) is dict or (type(item) is list and item and type(item[0]) in _CONTAINERS):
                    value[key] = self.revive(item)
            return self.decoded(value) if len(value) == 2 and "_type_" in value else value
        if kind is list and value and type(value[0]) in _CONTAINERS:  # event lists are homogeneous
            return [self.revive(item) for item in value]
        return value


_CONTAINERS = (dict, list)
