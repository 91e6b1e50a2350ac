import json
import subprocess
import sys


def test_gossip_benchmark_quick(tmp_path):
    out = tmp_path / "bench.json"
    result = subprocess.run(
        [sys.executable, "-m", "mlpar.bench", "gossip", "--quick", "--json", str(out)],
        capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr
    assert "ring all-reduce" in result.stdout and "simulated 256-node ring" in result.stdout
    figures = json.loads(out.read_text())["gossip"]
    for row in figures["rows"]:  # bytes counted on the actors equal d·M, whatever the timing
        assert row["data_bytes"] == row["d_times_M"]
        assert row["wire_bytes"] == row["data_bytes"] + row["d_times_M"] // 40 * figures["pickle_overhead"]
        assert row["measured_s"] > 0 and row["predicted_s"] > 0
    for a in figures["allreduce"]:
        assert a["ring_bytes_per_node"] == 2 * (a["n"] - 1) * 8 * a["d"] / a["n"]
