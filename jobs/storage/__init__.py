"""Delta storage with two backends (delta-rs, delta-spark) behind one interface."""

from jobs.storage.backend_choice import BACKENDS, open_driver_storage, open_storage
from jobs.storage.base import (
    ARRIVAL_COLUMN,
    FILE_COLUMN,
    KEY_HASH_COLUMN,
    LAYOUT_COLUMNS,
    LAYOUT_KEY,
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
from jobs.storage.file_stats import file_stats

__all__ = [
    "ARRIVAL_COLUMN", "BACKENDS", "FILE_COLUMN", "KEY_HASH_COLUMN", "LAYOUT_COLUMNS", "LAYOUT_KEY",
    "ROW_COLUMN", "DataFile", "DeltaStorage", "LiveFile", "StagedFile",
    "StorageError", "Txn", "UnsupportedTableFeature", "WriteResult", "file_stats",
    "open_driver_storage", "open_storage",
]
