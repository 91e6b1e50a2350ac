from mlpar import environment


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


def test_usable_cores_is_capped_by_quota(monkeypatch):
    monkeypatch.setattr(environment, "cores_by_affinity", lambda: 8)
    monkeypatch.setattr(environment, "cores_by_quota", lambda: 2.5)
    assert environment.usable_cores() == 2
    monkeypatch.setattr(environment, "cores_by_quota", lambda: 0.5)
    assert environment.usable_cores() == 1
    monkeypatch.setattr(environment, "cores_by_quota", lambda: None)
    assert environment.usable_cores() == 8


def test_report_lists_the_facts():
    report = environment.environment_report(measure_bandwidth=False)
    facts = report.as_dict()
    for key in ("cores (affinity)", "cores (cgroup quota)", "BLAS", "numba", "numba threading layer", "GPU"):
        assert key in facts
    assert "cores (affinity)" in repr(report)
    assert any("GB/s" in v for v in environment.environment_report().as_dict().values())
