"""The one line that says what a continuation added (``jobs.runs.run_segments.describe``)."""

from __future__ import annotations

from jobs.runs.run_segments import describe

SEGMENT = {"segment": 1, "from_version": 0, "to_version": 0, "first_batch": 3, "batches": 1,
           "events": 1}


def test_a_run_of_one_recording_shows_its_versions():
    line = describe({**SEGMENT, "from_version": 9, "to_version": 11, "first_batch": 20,
                     "batches": 2, "events": 20_000, "sources": {"input": 11}})
    assert line == "segment 1: v9 -> v11, batches 20-21, 20,000 new events"


def test_a_run_of_several_recordings_shows_the_version_each_reached():
    # (before: "v0 -> v0" from the first recording, although the second one gained a version)
    line = describe({**SEGMENT, "sources": {"ss": 0, "tt": 1}})
    assert line == "segment 1: up to ss@v0, tt@v1, batches 3-3, 1 new events"
