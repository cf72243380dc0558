"""The models every part of recall-gate shares: scope, record, hit, reasons, and the metadata codec.

Nothing here knows about storage, retrieval or frameworks; everything else depends on this.
"""

from __future__ import annotations

from .codec import (
    SHARED_BUCKET,
    bucket_of,
    decode_metadata,
    encode_record,
    is_encoded,
    partition_where,
    record_from_metadata,
    scope_where,
    with_clears,
)
from .enums import Origin, Reason, Status, Tier, Visibility
from .fields import check_key
from .hit import Hit, Rejection, finite_or_none
from .record import MemoryRecord
from .scope import Scope, coerce_scope

__all__ = [
    "SHARED_BUCKET",
    "Hit",
    "MemoryRecord",
    "Origin",
    "Reason",
    "Rejection",
    "Scope",
    "Status",
    "Tier",
    "Visibility",
    "bucket_of",
    "check_key",
    "coerce_scope",
    "decode_metadata",
    "encode_record",
    "finite_or_none",
    "is_encoded",
    "partition_where",
    "record_from_metadata",
    "scope_where",
    "with_clears",
]
