"""Frames a check reads more than once are persisted through one ``FrameCache`` per scan, so
the pipeline can release them all when the window is done (a long-lived session would
otherwise fill its memory window after window)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark import StorageLevel

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


class FrameCache:
    def __init__(self, enabled: bool = True):
        self.enabled = enabled
        self._frames: list[DataFrame] = []

    def keep(self, frame: DataFrame) -> DataFrame:
        if not self.enabled:
            return frame
        frame = frame.persist(StorageLevel.MEMORY_AND_DISK)
        self._frames.append(frame)
        return frame

    def release(self) -> None:
        for frame in self._frames:
            frame.unpersist()
        self._frames.clear()


NO_CACHE = FrameCache(enabled=False)
