import json
import subprocess
import sys

from mlpar import bench


def test_families_are_discovered():
    assert "elementwise" in bench.families()


def test_elementwise_benchmark_writes_json(tmp_path):
    out = tmp_path / "bench.json"
    result = subprocess.run(
        [sys.executable, "-m", "mlpar.bench", "elementwise", "--quick", "--json", str(out)],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "best variant" in result.stdout and "horner" in result.stdout
    assert "write-allocate counted" in result.stdout and "of roof" in result.stdout
    figures = json.loads(out.read_text())["elementwise"]
    assert figures["python_loop_over_best"] > 1
    assert set(figures["ratio_to_numpy_out"]) >= {"numpy out=", "numba simd", "numba prange", "python loop"}
