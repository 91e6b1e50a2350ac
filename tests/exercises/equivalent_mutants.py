"""Mutants of the reference solutions that compute the same answer: not counted against a check.

Read by ``python -m mlpar.course.mutants`` and by ``tests/exercises/test_mutants.py``. A key is
``(lesson number, exercise, mutant key)`` as the tool prints it; the value says why the mutant
is equivalent (the same result for every input the exercise allows, or a difference below any
tolerance a right answer needs). A test fails when an entry no longer names a mutant of the
current solution, so the list cannot go stale.
"""

_ONE_D = "x is a 1-D array in every case the exercise allows, so shape[-1] is shape[0]"
_BIGGER_CHUNKS = ("a chunk size of ceil(n/k) or one more: the k chunks still cover 0..n-1 once, "
                  "contiguous, one per parallel iteration; only the last is shorter (the idea "
                  "and the sum are the same, and no check should demand the exact rounding)")
_LABELS = "the labels y are -1 or +1, never 0 (or in (-1, 1)), so the comparison keeps its answer"
_PRIME_65537 = ("65537 is prime, so floor(65537 / p) = floor(65536 / p) for every register "
                "allocation p a warp can take (256 to 8,192): the registers per SM give the "
                "same whole number of warps")
_EQUAL_SHARDS = "every shard has the same columns (the features), so any shard gives their number"

EQUIVALENT: dict[tuple[str, str, str], str] = {
    ("01", "axpy", "const: 0 -> (-1)"): _ONE_D,
    ("01", "sum_two_accumulators", "const: 0 -> (-1)"): _ONE_D,
    ("01", "chunked_sum", "const: 0 -> (-1)"): _ONE_D,
    ("01", "chunked_sum", "binop: n + n_chunks - 1 -> (n + n_chunks + 1)"): _BIGGER_CHUNKS,
    ("01", "chunked_sum", "drop-term: n + n_chunks - 1 -> (n + n_chunks)"): _BIGGER_CHUNKS,
    ("01", "chunked_sum", "const: 1 -> (0)"): _BIGGER_CHUNKS,
    ("10", "axpy_kernel", "const: 0 -> (-1)"): _ONE_D,
    ("10", "occupancy", "const: 65536 -> (65537)"): _PRIME_65537,
    ("10", "occupancy", "const: 256 -> (255)"):
        "a warp's allocation of u units of 255: floor(65536 / 255u) exceeds floor(65536 / 256u) "
        "only for u = 1 (r <= 8), where both allow far more than the 64 warps an SM holds",
    ("10", "occupancy", "const: 256 -> (257) #2"):
        "for r <= 255 registers ceil(32r / 257) = ceil(32r / 256) = ceil(r / 8): the units a "
        "warp takes come out the same",
    ("10", "occupancy", "binop: 65536 // per_warp -> (65536 / per_warp)"):
        "floor(floor(x) / w) = floor(x / w) for a whole number of warps w",
    ("06", "replay", "const: 0 -> (1)"): _EQUAL_SHARDS,
    ("06", "replay", "const: 0 -> (-1)"): _EQUAL_SHARDS,
    ("07", "mh_weights", "const: 1 -> (0) #6"):
        "W is symmetric (W[i, j] = W[j, i] is set together), so its row sums are its column sums",
    ("07", "ring_allreduce", "drop-term: (i - step) % n -> (i - step)"):
        "i - step lies in (-n, n) and Python reads a negative index from the end of the list: "
        "chunks[i][i - step] is chunks[i][(i - step) % n]",
    ("07", "ring_allreduce", "drop-term: (i - step) % n -> (i - step) #2"):
        "i - step lies in (-n, n) and Python reads a negative index from the end of the list: "
        "chunks[i][i - step] is chunks[i][(i - step) % n]",
    ("08", "convolve_tile", "const: 0 -> (1)"):
        "the lesson's kernels are square (k x k, odd k), so kernel.shape[1] is kernel.shape[0]",
    ("08", "convolve_tile", "const: 0 -> (-1)"):
        "the lesson's kernels are square (k x k, odd k), so kernel.shape[-1] is kernel.shape[0]",
    ("09", "pair_update", "compare: y_i > 0 -> (y_i >= 0)"): _LABELS,
    ("09", "pair_update", "compare: y_j > 0 -> (y_j >= 0)"): _LABELS,
    ("09", "pair_update", "const: 0 -> (-1)"): _LABELS,
    ("09", "pair_update", "const: 0 -> (-1) #2"): _LABELS,
    ("09", "choose_j", "compare: y > 0 -> (y >= 0)"): _LABELS,
    ("09", "choose_j", "compare: y < 0 -> (y <= 0)"): _LABELS,
    ("09", "choose_j", "const: 0 -> (-1) #2"): _LABELS,
    ("09", "choose_j", "const: 0 -> (1) #4"): _LABELS,
    ("09", "choose_j", "const: 1e-12 -> (2e-12)"):
        "the floor replaces a <= 0 (a repeated point) for every such pair alike and lies far "
        "below any real a, so any tiny positive floor ranks the pairs the same",
    ("09", "choose_j", "compare: b > 0 -> (b >= 0)"):
        "i is taken from a violating pair, so some b is > 0 and its b^2/a > 0 beats the 0 a "
        "pair with b = 0 gets instead of -inf: the argmax is the same",
    ("09", "rbf_kernel", "const: 0.0 -> (-1.0)"):
        "the clamp only removes rounding: the expanded |x|^2 + |y|^2 - 2x.y is never below about "
        "-1e-15 |x|^2, so clamping at -1 instead of 0 changes exp(-gamma d) by ~1e-15",
}
