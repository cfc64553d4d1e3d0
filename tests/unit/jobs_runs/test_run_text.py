"""``run.json``'s text, its lists' items encoded once, is exactly each field's ``json.dumps``
whatever happens to the lists between writes (items appended, changed in place, dropped)."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.runs.run_info import RunInfo
from jobs.runs.run_text import run_text


def plain_text(info: RunInfo) -> str:
    lines = [f"{json.dumps(f.name)}: {json.dumps(getattr(info, f.name), default=str)}"
             for f in fields(info)]
    return "{\n" + ",\n".join(lines) + "\n}\n"


STEPS = st.lists(st.tuples(st.sampled_from(["append", "change", "drop"]), st.integers(0, 50)),
                 max_size=40)


@settings(max_examples=60, deadline=None)
@given(steps=STEPS, name=st.integers(0, 3))
def test_the_text_is_each_fields_json_after_any_changes(steps, name):
    run_file = Path(f"/nonexistent/{name}/run.json")  # (only a key: nothing is read)
    info = RunInfo(run_id="r", query="q", fingerprint="f", recording="ev", input_path="/in",
                   input_version=1, plan="commit", cuts=[0], files=[], buckets=4,
                   operator="windows")
    for what, n in steps:
        if what == "append":
            info.cuts.append(info.cuts[-1] + n)
            info.files.append({"uri": f"/f{n}", "commit_version": n, "rows": n, "offset": 0})
            info.segments.append({"segment": n, "rewound": False, "sources": {"input": n}})
        elif what == "change" and info.segments:
            info.segments[n % len(info.segments)]["sources"]["input"] = -n
            info.segments[-1]["rewound"] = True
            info.cuts[n % len(info.cuts)] += 1
        elif what == "drop":
            info.files = info.files[:n % (len(info.files) + 1)]
            del info.segments[n % (len(info.segments) + 1):]
        assert run_text(run_file, info) == plain_text(info)
