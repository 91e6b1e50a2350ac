"""The grader's defences, one part at a time, without a grading process (fast).

The data-only channel (what crosses it, what it refuses), the event schema, spreadsheet and
terminal safety with an exact round trip, student identity from LMS exports, and reading files
that are not what their name says.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap

import numpy as np
import pytest

from mlpar.course.grading import channel, checker, csv_safety, identity, plain, submissions

# --- the data-only channel ---------------------------------------------------------------------


@pytest.mark.parametrize("value", [
    None, True, 3, -2**70, 0.25, float("inf"), 1 + 2j, "text", [1, [2.5, "x"]], (1, (2, 3)),
    {"a": 1, 2: [3]}, np.arange(6, dtype=np.int32).reshape(2, 3), np.ones((2, 2), dtype=np.complex64),
    np.array(True), np.float32(1.5), np.int64(-7), np.zeros((0, 3)),
])
def test_plain_data_crosses_unchanged(value):
    back = plain.decode(json.loads(json.dumps(plain.encode(value, strict=True))))
    assert type(back) is type(value)
    if isinstance(value, np.ndarray):
        assert back.dtype == value.dtype and np.array_equal(back, value) and back.flags.writeable
    else:
        assert back == value


def test_what_a_student_returns_arrives_as_the_plain_value_it_holds():
    class AlwaysEqual(int):
        def __eq__(self, other):
            return True

        __hash__ = int.__hash__

    class Watched(np.ndarray):
        pass

    sent = [AlwaysEqual(0), np.ones(2).view(Watched), np.float64(2.0)]
    got = plain.decode(plain.encode(sent, strict=False))
    assert type(got[0]) is int and got[0] != 5
    assert type(got[1]) is np.ndarray and type(got[2]) is np.float64
    with pytest.raises(plain.NotPlain, match="a object"):
        plain.encode(object(), strict=False)
    with pytest.raises(plain.NotPlain):
        plain.encode(np.array([object()]), strict=False)
    with pytest.raises(plain.NotPlain):  # the checker's own arguments must be exactly plain
        plain.encode(AlwaysEqual(1), strict=True)


@pytest.mark.parametrize("data", [
    {"a": ["|O", [1], "AAAAAAAAAAA="]},                      # object dtype
    {"a": ["<f8", [3], "AAAAAAAAAAA="]},                     # data does not fit the shape
    {"a": ["<f8", [-1], ""]},                                # a negative dimension
    {"i": "12x"}, {"x": 1}, {"f": "1.0"}, [1], {"n": None, "b": True},
])
def test_decode_refuses_anything_else(data):
    with pytest.raises(ValueError):
        plain.decode(data)


def test_deep_data_is_refused_both_ways():
    deep = []
    for _ in range(plain.MAX_DEPTH + 5):
        deep = [deep]
    with pytest.raises(plain.NotPlain):
        plain.encode(deep, strict=True)
    encoded = {"n": None}
    for _ in range(plain.MAX_DEPTH + 5):
        encoded = {"l": [encoded]}
    with pytest.raises(ValueError):
        plain.decode(encoded)


def test_frames_cross_a_pipe_and_a_silent_peer_times_out():
    read, write = os.pipe()
    try:
        plain.send(write, {"seq": 1, "return": plain.encode([1.5, "x"], strict=True)})
        assert plain.decode(plain.receive(read, timeout=5)["return"]) == [1.5, "x"]
        with pytest.raises(TimeoutError):
            plain.receive(read, timeout=0.2)
        os.write(write, b"\xff\xff\xff\xff")  # a frame longer than any allowed
        with pytest.raises(plain.ChannelClosed):
            plain.receive(read, timeout=1)
    finally:
        os.close(read)
        os.close(write)


def test_checks_are_value_checks_unless_they_watch_the_function(tmp_path, monkeypatch):
    (tmp_path / "fake_checks.py").write_text(textwrap.dedent("""\
        import threading

        def _helper(func):
            return threading.active_count()

        def check_plain(func):
            assert func(2) == 4

        def check_threads(func):
            func(2)
            _helper(func)

        def check_source(func):
            import inspect
            inspect.getsource(func)
        """))
    monkeypatch.syspath_prepend(str(tmp_path))
    assert checker.observing("fake_checks", "check_plain") is None
    assert "threading in _helper" in checker.observing("fake_checks", "check_threads")
    assert "inspect." in checker.observing("fake_checks", "check_source")
    assert checker.observing("fake_checks", "check_missing") is not None
    sys.modules.pop("fake_checks", None)


def test_a_check_that_refuses_library_calls_watches_the_function_run(tmp_path, monkeypatch):
    # call_refusing (the package's helper, not the check module's) profiles the student's function:
    # judged in the checker, with a stand-in for the function, it would watch nothing
    (tmp_path / "fake_refusing.py").write_text(textwrap.dedent("""\
        from mlpar.exercises import call_refusing

        def check_refuses(func):
            call_refusing("x", func, {abs: "abs"}, 2)
        """))
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "in mlpar.exercises.call_refusing" in checker.observing("fake_refusing", "check_refuses")
    sys.modules.pop("fake_refusing", None)


def test_an_answer_that_calls_the_library_model_it_must_write_fails_in_grading():
    from mlpar.course.grading import sandbox

    job = {"lesson": "04_hogwild", "seed": 5, "cells": [
        {"kind": "solution", "exercises": ["stale_prediction"], "source": (
            "from mlpar.algorithms.sgd.conflicts import stale_rate_model as _model\n\n\n"
            "def predict_stale_rate(density, threads):\n    return _model(density, threads)")},
        {"kind": "check", "exercise": "stale_prediction", "module": "mlpar.exercises.l04_hogwild",
         "check": "check_stale_prediction", "argument": "predict_stale_rate",
         "observing": checker.observing("mlpar.exercises.l04_hogwild", "check_stale_prediction")}]}
    outcome = sandbox.run_job(job, timeout=120, memory_mb=3072)
    (check,) = [e for e in outcome.events if e["event"] == "check"]
    assert not check["passed"] and "your answer calls" in check["message"], check


# --- the event channel ---------------------------------------------------------------------------

@pytest.mark.parametrize("line", [
    '{"event": "check", "exercise": "x", "passed": true, "message": "", "flags": [], "seconds": "soon"}',
    '{"event": "check", "exercise": "x", "passed": 1, "message": "", "flags": []}',
    '{"event": "check", "exercise": ["x"], "passed": true, "message": "", "flags": []}',
    '{"event": "unknown"}', "[" * 100_000 + "]" * 100_000, "not json", '{"event": "done", "seconds": NaN}',
])
def test_an_event_of_the_wrong_shape_is_dropped(line):
    assert channel.event(line) is None


def test_an_event_of_the_right_shape_is_kept_with_its_fields_bounded():
    event = channel.event(json.dumps({"event": "check", "exercise": "x", "passed": False,
                                      "message": "m" * 10_000, "flags": ["timeout"], "seconds": 1}))
    assert event["passed"] is False and len(event["message"]) == 2000 and event["seconds"] == 1.0


# --- spreadsheets, terminals, identity ------------------------------------------------------------

@pytest.mark.parametrize("text", ["=2+5", "+1", "-1", "@SUM(1,2)", "\tx", "'quoted", "plain", "",
                                  "=cmd|' /c calc'!A0"])
def test_csv_cells_never_start_a_formula_and_read_back_exactly(text):
    cell = csv_safety.cell(text)
    assert not cell.startswith(("=", "+", "-", "@", "\t", "\r"))
    assert csv_safety.uncell(cell) == text


def test_control_characters_never_reach_the_terminal():
    shown = csv_safety.printable("\x1b]0;title\x07\x1b[2J\u202eevil\x9b")
    assert shown == "?]0;title??[2J?evil?"


def test_feedback_file_names_are_unique_per_student_and_short():
    names = ["李娜", "王伟", "=2+5", "+2+5", "kim", "Zoë", "n" * 300]
    stems = [identity.file_stem(n) for n in names]
    assert len(set(stems)) == len(names) and all(len(s.encode()) <= 60 for s in stems)
    assert stems[4].startswith("kim-") and stems[5].startswith("Zoe-")


def test_a_latin1_folder_name_is_read_as_cp1252_and_names_are_normal():
    assert identity.of_folder(os.fsdecode(b"M\xfcller")) == "Müller"
    assert identity.of_folder("Zoe\u0308  ") == "Zoë"
    assert identity.of_folder("Wei Zhang_1111_assignsubmission_file") == "Wei Zhang (1111)"


# --- reading files that are not what their name says ---------------------------------------------

def test_fifos_devices_links_and_folders_named_like_notebooks_are_error_rows(tmp_path):
    lessons = ["00_index"]
    (tmp_path / "a").mkdir()
    os.mkfifo(tmp_path / "a" / "00_index.ipynb")                      # would block a plain read
    (tmp_path / "b").mkdir()
    os.symlink("/dev/zero", tmp_path / "b" / "00_index.ipynb")         # would never end
    (tmp_path / "c" / "00_index.ipynb").mkdir(parents=True)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "00_index.IPYNB").write_text("{}")
    found = {s.student: s for s in submissions.find(tmp_path, lessons)}
    assert "not a regular file" in found["a"].error
    assert "symbolic link" in found["b"].error
    assert "folder named like a notebook" in found["c"].error
    assert found["d"].error is None  # an upper-case suffix is a notebook
    # a FIFO handed to read() directly is refused without blocking
    sub = submissions.read(submissions.Submission(tmp_path / "a" / "00_index.ipynb", "a"), lessons)
    assert "not a regular file" in sub.error and len(sub.sha256) == 64


@pytest.mark.parametrize("notebook, words", [
    ({"nbformat": 4, "metadata": [], "cells": []}, "metadata is not a mapping"),
    ({"nbformat": 4, "cells": [{"cell_type": "code", "source": [["x"]]}]}, "source is not text"),
    ({"nbformat": 4, "cells": [{"cell_type": "code", "source": "", "id": ["x"]}]}, "id is not a short"),
    ({"nbformat": 4, "cells": [{"cell_type": "code", "source": "", "metadata": 3}]}, "metadata is not"),
    ({"nbformat": 4, "cells": [{"cell_type": "shell", "source": ""}]}, "unknown cell_type"),
    ({"nbformat": "4", "cells": []}, "is not supported"),
])
def test_a_notebook_of_the_wrong_shape_is_an_error_not_a_crash(notebook, words):
    problem, kept = submissions.notebook_problem(notebook)
    assert words in problem and kept is None


def test_what_is_kept_of_a_notebook_is_only_what_grading_reads():
    problem, kept = submissions.notebook_problem({
        "nbformat": 4, "metadata": {"mlpar": {"lesson": "00_index"}},
        "cells": [{"cell_type": "code", "id": "a", "source": ["x = 1\n", "y = 2"],
                   "metadata": {"tags": ["grading"]}, "outputs": [{"data": "x" * 1000}]}]})
    assert problem is None and kept == {"lesson": "00_index", "cells": [
        {"cell_type": "code", "source": "x = 1\ny = 2", "metadata": {"tags": ["grading"]}, "id": "a"}]}
