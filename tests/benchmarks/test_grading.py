"""The grading benchmark's report: the figures it is given, against its targets (no timing here)."""

from mlpar.benchmarks import grading


def test_report_marks_each_figure_against_its_target():
    figures = {"cores": 2,
               "lessons": {"00_index": {"full_s": 20.0, "grading_s": 3.0, "ratio": 0.15},
                           "04_hogwild": {"full_s": 30.0, "grading_s": 12.0, "ratio": 0.4}},
               "class": {"lesson": "04_hogwild", "students": 30, "jobs": 2, "seconds": 310.0,
                         "rows": 120, "passed": 120}}
    text = grading.report(figures)
    lines = text.splitlines()
    assert "0.15  ✓" in lines[1] and "0.40  ✗" in lines[2]
    assert "class of 30 × 04_hogwild with --jobs 2" in text and "310.0 s" in text
    assert text.rstrip().endswith("120 of 120 checks passed") and "✗" in lines[3]
