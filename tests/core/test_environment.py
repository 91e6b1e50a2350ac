import pytest

from mlpar.core import environment


def test_quota_cgroup_v2(tmp_path):
    (tmp_path / "cpu.max").write_text("200000 100000\n")
    assert environment.cores_by_quota(tmp_path) == 2.0
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert environment.cores_by_quota(tmp_path) is None


def test_quota_cgroup_v1(tmp_path):
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("150000\n")
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert environment.cores_by_quota(tmp_path) == 1.5
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    assert environment.cores_by_quota(tmp_path) is None


def test_no_cgroup_files(tmp_path):
    assert environment.cores_by_quota(tmp_path) is None


def test_usable_cores_is_joblibs_count():
    import joblib

    n = environment.usable_cores()
    assert n == joblib.cpu_count()
    assert 1 <= n <= environment.cores_by_affinity()
    quota = environment.cores_by_quota()
    if quota is not None:  # joblib rounds a fractional quota up
        assert n <= max(1, -(-quota // 1))


def test_usable_cores_follows_lokys_cap(monkeypatch):
    monkeypatch.setenv("LOKY_MAX_CPU_COUNT", "1")
    assert environment.usable_cores() == 1


def test_report_lists_the_facts():
    report = environment.environment_report(measure_bandwidth=False)
    facts = report.as_dict()
    for key in ("cores (affinity)", "cores (cgroup quota)", "cores usable (joblib.cpu_count)",
                "BLAS", "numba", "numba threading layer", "GPU"):
        assert key in facts
    assert "cores (affinity)" in repr(report)
    assert any("GB/s" in v for v in environment.environment_report().as_dict().values())


def test_slowest_core_share_is_a_share_of_one_core():
    share = environment.slowest_core_share(0.05)
    assert 0.0 < share <= 1.5  # above 1 only by timing noise
    with pytest.raises(ValueError, match="seconds"):
        environment.slowest_core_share(0)
