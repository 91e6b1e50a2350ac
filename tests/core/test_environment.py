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


def test_usable_cores_is_joblibs_count(monkeypatch):
    import joblib

    monkeypatch.delenv(environment.HARDWARE_VARIABLE, raising=False)
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


def test_slowest_core_share_is_a_share_of_one_core(monkeypatch):
    # a ratio of two timings on a shared host: only its sign and finiteness are a contract
    share = environment.slowest_core_share(0.05)
    assert 0.0 < share < float("inf")
    monkeypatch.setenv(environment.HARDWARE_VARIABLE, "cores=1")
    assert environment.slowest_core_share(0.05) == 1.0  # one core: nothing to share, no pool
    with pytest.raises(ValueError, match="seconds"):
        environment.slowest_core_share(0)


# --- the machine as lessons plan for it: one override, and readers that cope with any host ----

HW = environment.HARDWARE_VARIABLE


@pytest.mark.parametrize("text, expected", [
    ("480M", 480 << 20), ("32MiB", 32 << 20), ("1.2GiB", int(1.2 * (1 << 30))), ("64 KB", 64 << 10),
    ("8k", 8 << 10), ("1024", 1024), ("1024B", 1024), ("2T", 2 << 40), (" 3 GB ", 3 << 30),
])
def test_parse_size_reads_binary_units(text, expected):
    assert environment.parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "MiB", "12 parsecs", "-5M", "1,5G", "1.2.3G", "M32"])
def test_parse_size_refuses_what_is_not_a_size(text):
    with pytest.raises(ValueError, match="expected a size such as 32MiB"):
        environment.parse_size(text)


def test_override_sets_each_fact_on_its_own(monkeypatch):
    monkeypatch.setenv(HW, "cores=128,llc=1.2GiB,memory=64GiB")
    assert environment.hardware_override() == {"cores": 128, "llc": int(1.2 * (1 << 30)),
                                               "memory": 64 << 30}
    assert environment.usable_cores() == 128
    assert environment.last_level_cache_bytes() == int(1.2 * (1 << 30))
    assert environment.available_memory_bytes() == 64 << 30
    monkeypatch.setenv(HW, " LLC = unknown ")  # case and spaces do not matter
    assert environment.hardware_override() == {"llc": None}
    assert environment.last_level_cache_bytes() is None
    monkeypatch.setenv(HW, "llc=none,")  # a trailing comma is harmless
    assert environment.last_level_cache_bytes() is None


def test_without_override_facts_come_from_the_readers(monkeypatch):
    monkeypatch.delenv(HW, raising=False)
    assert environment.hardware_override() == {}
    monkeypatch.setenv(HW, "")
    assert environment.hardware_override() == {}
    monkeypatch.setenv("LOKY_MAX_CPU_COUNT", "1")
    assert environment.usable_cores() == 1
    monkeypatch.setattr(environment, "cache_sizes", lambda: [32 << 10, 480 << 20])
    assert environment.last_level_cache_bytes() == 480 << 20
    monkeypatch.setattr(environment, "cache_sizes", lambda: [])
    assert environment.last_level_cache_bytes() is None


@pytest.mark.parametrize("raw, named", [
    ("cores=0", "cores='0'"), ("cores=-4", "cores='-4'"), ("cores=2.5", "cores='2.5'"),
    ("cores=many", "cores='many'"), ("llc=big", "llc='big'"), ("memory=unknown", "memory='unknown'"),
    ("memory=", "'memory='"), ("gpus=1", "'gpus=1'"), ("cores", "'cores'"), ("=4", "'=4'"),
])
def test_override_refuses_bad_values_naming_the_variable_and_the_item(monkeypatch, raw, named):
    monkeypatch.setenv(HW, raw)
    with pytest.raises(ValueError, match=HW) as err:
        environment.hardware_override()
    assert named in str(err.value)
    # every reader refuses it the same way rather than quietly using the real machine
    for reader in (environment.usable_cores, environment.last_level_cache_bytes,
                   environment.available_memory_bytes):
        with pytest.raises(ValueError, match=HW):
            reader()


def _cache_tree(root, sizes):
    for k, size in enumerate(sizes):
        (root / f"index{k}").mkdir()
        (root / f"index{k}" / "size").write_text(f"{size}\n")
    return root


@pytest.mark.parametrize("sizes, expected", [
    (["32K", "32K", "1024K", "8192K"], [32 << 10, 32 << 10, 1 << 20, 8 << 20]),  # typical laptop
    (["48K", "2048K", "480M"], [48 << 10, 2 << 20, 480 << 20]),  # a VM reporting the host's L3
    (["1152M"], [1152 << 20]),  # huge: 3-D V-Cache server
    (["4K"], [4 << 10]),  # tiny
])
def test_cache_sizes_read_a_fake_sysfs_tree(tmp_path, sizes, expected):
    assert environment.cache_sizes(_cache_tree(tmp_path, sizes)) == expected


def test_cache_sizes_skip_what_cannot_be_read(tmp_path):
    _cache_tree(tmp_path, ["32K", "garbage", "0K", "2M"])
    (tmp_path / "index9").mkdir()  # a level without a size file
    (tmp_path / "index8").mkdir()
    (tmp_path / "index8" / "size").mkdir()  # a size that is a folder: unreadable as text
    assert environment.cache_sizes(tmp_path) == [32 << 10, 2 << 20]


def test_cache_sizes_of_a_missing_or_empty_tree_are_empty(tmp_path):
    assert environment.cache_sizes(tmp_path / "nowhere") == []
    assert environment.cache_sizes(tmp_path) == []


def test_last_level_cache_is_the_largest_reported_or_none(monkeypatch, tmp_path):
    monkeypatch.delenv(HW, raising=False)
    tree = _cache_tree(tmp_path, ["32K", "1M", "300M", "2M"])
    real = environment.cache_sizes
    monkeypatch.setattr(environment, "cache_sizes", lambda root=tree: real(root))
    assert environment.last_level_cache_bytes() == 300 << 20
    monkeypatch.setattr(environment, "cache_sizes", lambda root=tmp_path / "none": real(root))
    assert environment.last_level_cache_bytes() is None


class _FakePath:
    """Stands in for ``pathlib.Path`` inside environment: /proc/meminfo reads as ``text``."""

    text: str | None = None

    def __init__(self, *parts):
        self.parts = parts

    def read_text(self):
        if self.text is None:
            raise OSError("no such file")
        return self.text


@pytest.mark.parametrize("meminfo, expected", [
    ("MemTotal:  16318412 kB\nMemFree: 1 kB\nMemAvailable:   8159206 kB\n", 8159206 * 1024),
    ("MemAvailable: 1048576 kB\n", 1 << 30),
])
def test_available_memory_reads_memavailable(monkeypatch, meminfo, expected):
    monkeypatch.delenv(HW, raising=False)
    monkeypatch.setattr(_FakePath, "text", meminfo)
    monkeypatch.setattr(environment, "Path", _FakePath)
    assert environment.available_memory_bytes() == expected


@pytest.mark.parametrize("meminfo", [None, "MemTotal: 100 kB\n", "MemAvailable: lots kB\n",
                                     "MemAvailable:\n"])
def test_available_memory_falls_back_to_physical_memory(monkeypatch, meminfo):
    monkeypatch.delenv(HW, raising=False)
    monkeypatch.setattr(_FakePath, "text", meminfo)
    monkeypatch.setattr(environment, "Path", _FakePath)
    monkeypatch.setattr(environment.os, "sysconf",
                        lambda name: {"SC_PAGE_SIZE": 4096, "SC_PHYS_PAGES": 1 << 20}[name])
    assert environment.available_memory_bytes() == 4 << 30


def test_available_memory_has_a_default_when_nothing_says(monkeypatch):
    monkeypatch.delenv(HW, raising=False)
    monkeypatch.setattr(environment, "Path", _FakePath)

    def no_sysconf(name):
        raise ValueError(name)

    monkeypatch.setattr(environment.os, "sysconf", no_sysconf)
    assert environment.available_memory_bytes() == 4 << 30


@pytest.mark.parametrize("hardware, megabytes, capped", [
    ("llc=32MiB,memory=16GiB", 128, False),  # a laptop: the floor already spans 4 caches
    ("llc=unknown,memory=16GiB", 128, False),  # no cache information: the floor
    ("llc=480MiB,memory=64GiB", 1920, False),  # the VM of issue 24, with memory to match
    ("llc=1.2GiB,memory=8GiB", 1024, True),  # huge cache, small budget: capped, and said so
    ("llc=1.2GiB,memory=128GiB", 2048, True),  # huge cache, memory to spare: the time cap
    ("llc=1MiB,memory=512MiB", 64, False),  # Binder-like memory: below the floor, past the cache
    ("llc=unknown,memory=256MiB", 32, False),
])
def test_bandwidth_probe_spans_the_cache_within_the_memory_budget(monkeypatch, hardware, megabytes,
                                                                  capped):
    monkeypatch.setenv(HW, hardware)
    got, caveat = environment.bandwidth_probe_megabytes()
    assert got == megabytes and bool(caveat) is capped
    assert 2 * got * 2**20 <= max(2 << 20, environment.available_memory_bytes() // 4)
    if capped:
        assert "capped by the " + ("time" if "128GiB" in hardware else "memory") + " budget" in caveat


def test_report_names_the_cache_and_the_probe_size(monkeypatch):
    monkeypatch.setenv(HW, "llc=unknown")
    assert environment.environment_report(False).as_dict()["last-level cache"] == "not reported"
    monkeypatch.setenv(HW, "llc=16MiB,memory=64MiB")
    facts = environment.environment_report().as_dict()
    assert facts["last-level cache"] == "16 MiB"
    assert "(copy of 8 MiB; capped by the memory budget" in facts["memory bandwidth, 1 core"]


def test_cache_sizes_refuses_a_root_that_is_not_a_path():
    with pytest.raises(TypeError, match="root: expected a path"):
        environment.cache_sizes(3)
