from mlpar import bench
from mlpar.benchmarks import pipeline


def test_pipeline_benchmark_quick_mode(process_census):
    children, assert_no_new_children = process_census
    before = children()
    figures = pipeline.run(quick=True)
    assert "pipeline" in bench.families()
    assert {(r["p"], r["m"], r["schedule"]) for r in figures["rows_out"]} == {
        (2, m, s) for m in (1, 4) for s in ("gpipe", "1f1b")}
    for r in figures["rows_out"]:
        assert r["measured_s"] > 0 and r["predicted_s"] > 0
        assert abs(r["ratio"] - r["measured_s"] / r["predicted_s"]) < 1e-12
    assert figures["sim_wall_s"] > 0
    text = pipeline.report(figures)
    assert "ratio" in text and "p=64, m=512" in text and "α =" in text
    assert_no_new_children(before)
