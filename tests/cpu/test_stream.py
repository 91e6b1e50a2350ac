import numpy as np
import pytest

from mlpar.cpu import stream


def test_bytes_follow_the_write_allocate_rule():
    assert stream.bytes_moved(10, reads=2, writes=1) == 10 * 8 * 4  # product / triad: 32 B
    assert stream.bytes_moved(10, reads=1, writes=1) == 10 * 8 * 3  # copy: 24 B
    assert stream.bytes_moved(10, reads=2, writes=1, write_allocate=False) == 10 * 8 * 3
    with pytest.raises(ValueError, match="reads"):
        stream.bytes_moved(1, reads=-1, writes=1)


def test_last_level_cache_and_beyond_cache_length():
    llc = stream.last_level_cache()
    assert llc >= 1 << 15
    n = stream.beyond_cache_length(3)
    assert n & (n - 1) == 0 and 3 * 8 * n >= stream.CACHE_MULTIPLE * llc
    with pytest.raises(ValueError, match="arrays"):
        stream.beyond_cache_length(0)


@pytest.mark.parametrize("kernel", sorted(stream.KERNELS))
def test_stream_kernels_give_a_rate(kernel):
    assert stream.stream_bandwidth(kernel, 1, n=1 << 16, repeat=1) > 0


def test_memory_roof_is_the_best_rate():
    roof = stream.memory_roof(n=1 << 16, repeat=1)
    assert roof.gbps == max(roof.rates.values()) and roof.best_at(1) <= roof.gbps
    assert "write-allocate counted" in repr(roof)
    with pytest.raises(ValueError, match="kernel: expected one of"):
        stream.stream_bandwidth("scale")


def test_the_roof_can_run_on_arrays_the_caller_already_holds():
    n = 1 << 12
    out, x, y = np.empty(n), np.ones(n), np.full(n, 2.0)
    roof = stream.memory_roof(repeat=1, arrays=(out, x, y))
    assert roof.n == n and roof.gbps > 0
    assert np.all(x == 1.0) and np.all(y == 2.0)  # only the first array is written
    with pytest.raises(TypeError, match="arrays: expected three"):
        stream.memory_roof(arrays=(out, x))
    with pytest.raises(ValueError, match="arrays: expected three arrays of one length"):
        stream.memory_roof(arrays=(out, x, y[:10]))
    with pytest.raises(ValueError, match="n, arrays"):
        stream.memory_roof(n=n, arrays=(out, x, y))
    x.flags.writeable = False
    with pytest.raises(ValueError, match="writable"):
        stream.stream_bandwidth(arrays=(x, out, y))
