"""Delta storage with two backends (delta-rs, delta-spark) behind one interface."""

from .base import (
    FILE_COLUMN,
    ROW_COLUMN,
    DataFile,
    DeltaStorage,
    LiveFile,
    StagedFile,
    StorageError,
    Txn,
    UnsupportedTableFeature,
    WriteResult,
)
from .delta_rs import file_stats
from .select import BACKENDS, open_driver_storage, open_storage

__all__ = [
    "BACKENDS", "FILE_COLUMN", "ROW_COLUMN", "DataFile", "DeltaStorage", "LiveFile", "StagedFile",
    "StorageError", "Txn", "UnsupportedTableFeature", "WriteResult", "file_stats",
    "open_driver_storage", "open_storage",
]
