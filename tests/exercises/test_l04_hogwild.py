"""The lesson 04 checks accept the reference solutions and reject typical mistakes."""

import numpy as np
import pytest

from mlpar.exercises import l04_hogwild as ex


def delta_solution(indptr, indices, n_features):
    degree = np.bincount(indices, minlength=n_features)
    return degree.max() / np.count_nonzero(np.diff(indptr))


def rho_solution(indptr, indices):
    rows = [set(indices[indptr[i] : indptr[i + 1]]) for i in range(len(indptr) - 1)]
    rows = [r for r in rows if r]
    return max(sum(bool(r & s) for s in rows) for r in rows) / len(rows)


def sgd_step_solution(w, cols, vals, label, step):
    margin = vals @ w[cols]
    z = label * margin
    minus_sigmoid = -np.exp(-z) / (1 + np.exp(-z)) if z >= 0 else -1 / (1 + np.exp(z))
    w[cols] -= step * label * minus_sigmoid * vals


def test_reference_solutions_pass(capsys):
    ex.check_delta(delta_solution)
    ex.check_rho(rho_solution)
    ex.check_sgd_step(sgd_step_solution)
    out = capsys.readouterr().out
    assert out.count("passed") == 3


def test_delta_without_normalising_fails():
    with pytest.raises(AssertionError, match="Exercise 1"):
        ex.check_delta(lambda indptr, indices, n: float(np.bincount(indices).max()))


def test_rho_without_counting_the_row_itself_gets_a_hint():
    def rho_minus_self(indptr, indices):
        return rho_solution(indptr, indices) - 1 / (len(indptr) - 1)

    with pytest.raises(AssertionError, match="with itself"):
        ex.check_rho(rho_minus_self)


def test_sgd_step_with_the_wrong_sign_fails():
    def wrong_sign(w, cols, vals, label, step):
        sgd_step_solution(w, cols, vals, label, -step)

    with pytest.raises(AssertionError, match="differs from the reference"):
        ex.check_sgd_step(wrong_sign)


def test_sgd_step_that_copies_fails():
    def copies(w, cols, vals, label, step):
        w = w.copy()
        sgd_step_solution(w, cols, vals, label, step)
        return w

    with pytest.raises(AssertionError, match="in place"):
        ex.check_sgd_step(copies)


def test_correct_solutions_written_differently_pass(capsys):
    from collections import Counter

    def delta_counter(indptr, indices, n_features):
        rows = sum(1 for i in range(len(indptr) - 1) if indptr[i + 1] > indptr[i])
        return max(Counter(indices.tolist()).values()) / rows

    def rho_matrix(indptr, indices):
        import scipy.sparse as sp

        n = len(indptr) - 1
        A = sp.csr_matrix((np.ones(len(indices)), indices, indptr), shape=(n, indices.max() + 1))
        meets = (A @ A.T).toarray() > 0
        nonempty = np.diff(indptr) > 0
        return meets[nonempty][:, nonempty].sum(axis=1).max() / nonempty.sum()

    def sgd_step_loop(w, cols, vals, label, step):
        margin = sum(v * w[c] for c, v in zip(cols, vals))
        g = -label / (1 + np.exp(label * margin))
        for c, v in zip(cols, vals):
            w[c] -= step * g * v

    ex.check_delta(delta_counter)
    ex.check_rho(rho_matrix)
    ex.check_sgd_step(sgd_step_loop)
    assert capsys.readouterr().out.count("passed") == 3


@pytest.mark.parametrize(
    "check, bad, match",
    [
        (ex.check_delta, lambda indptr, indices, n: np.bincount(indices).max() / n,
         "Exercise 1 .*you returned .*expected"),
        (ex.check_delta, lambda indptr, indices, n: np.bincount(indices).mean() / (len(indptr) - 1),
         "Exercise 1 .*you returned .*expected"),
        (ex.check_rho, lambda indptr, indices: 1.0, "Exercise 2 .*you returned 1.0, expected"),
        (ex.check_sgd_step, lambda w, c, v, y, s: sgd_step_solution(w, c, v, y, 2 * s),
         "Exercise 3 .*differs from the reference"),
        (ex.check_sgd_step, lambda w, c, v, y, s: sgd_step_solution(w, c, v, 1.0, s),
         "Exercise 3 .*differs from the reference"),
        (ex.check_sgd_step, lambda w, c, v, y, s: sgd_step_solution(w, c, -v, y, s),
         "Exercise 3 .*differs from the reference"),
    ],
    ids=["delta-over-features", "delta-mean-degree", "rho-constant", "step-doubled",
         "label-ignored", "sigmoid-of-plus-z"],
)
def test_more_wrong_solutions_are_rejected(check, bad, match):
    with pytest.raises(AssertionError, match=match):
        check(bad)


def test_unfinished_placeholder_says_not_done():
    def placeholder(*args):
        raise NotImplementedError

    for check in (ex.check_delta, ex.check_rho, ex.check_sgd_step):
        with pytest.raises(AssertionError, match="not done yet"):
            check(placeholder)


# --- Exercise 4: locked and lock-free epochs on threads ------------------------------------

import threading  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402


def good_epoch(w, order, update, n_threads, lock):
    def work(chunk):
        for i in chunk:
            if lock is None:
                update(w, i)
            else:
                with lock:
                    update(w, i)

    threads = [threading.Thread(target=work, args=(c,)) for c in np.array_split(order, n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def good_epoch_pool_strided(w, order, update, n_threads, lock):
    # written differently: a thread pool, strided chunks, explicit acquire/release
    def work(t):
        for i in order[t::n_threads]:
            if lock is not None:
                lock.acquire()
                try:
                    update(w, i)
                finally:
                    lock.release()
            else:
                update(w, i)

    with ThreadPoolExecutor(n_threads) as pool:
        list(pool.map(work, range(n_threads)))


def serial_epoch(w, order, update, n_threads, lock):
    for i in order:
        update(w, i)


def never_released(w, order, update, n_threads, lock):
    def work(chunk):
        for i in chunk:
            if lock is not None:
                lock.acquire()
            update(w, i)

    threads = [threading.Thread(target=work, args=(c,)) for c in np.array_split(order, n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def lock_around_the_chunk(w, order, update, n_threads, lock):
    def work(chunk):
        if lock is None:
            for i in chunk:
                update(w, i)
            return
        with lock:
            for i in chunk:
                update(w, i)

    threads = [threading.Thread(target=work, args=(c,)) for c in np.array_split(order, n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def lock_ignored(w, order, update, n_threads, lock):
    good_epoch(w, order, update, n_threads, None)


def off_by_one_chunks(w, order, update, n_threads, lock):
    size = len(order) // n_threads

    def work(t):
        for i in order[t * size : (t + 1) * size]:  # the remainder is never updated
            if lock is None:
                update(w, i)
            else:
                with lock:
                    update(w, i)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def stale_copies(w, order, update, n_threads, lock):
    # "staleness ignored": each thread updates its own snapshot of w, then one wins
    results = []

    def work(chunk):
        mine = w.copy()
        for i in chunk:
            update(mine, i)
        results.append(mine)

    threads = [threading.Thread(target=work, args=(c,)) for c in np.array_split(order, n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    w[:] = results[-1]


def not_joined(w, order, update, n_threads, lock):
    def work(chunk):
        for i in chunk:
            threading.Event().wait(0.0005)
            if lock is None:
                update(w, i)
            else:
                with lock:
                    update(w, i)

    for c in np.array_split(order, n_threads):
        threading.Thread(target=work, args=(c,)).start()


def one_thread_only(w, order, update, n_threads, lock):
    good_epoch(w, order, update, 1, lock)


def test_epochs_accept_correct_solutions(capsys):
    ex.check_epochs(good_epoch)
    ex.check_epochs(good_epoch_pool_strided)
    assert capsys.readouterr().out.count("✓ Exercise 4") == 2


# never_released's threads die with the grading lock's RuntimeError: expected, not a warning
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
@pytest.mark.parametrize(
    "bad, match",
    [
        (serial_epoch, "updates ran on the calling thread"),
        (never_released, "acquired \\d+ times but released 0 times"),
        (lock_around_the_chunk, "expected once per update"),
        (lock_ignored, "updates ran without holding the lock"),
        (off_by_one_chunks, "sample \\d+ was updated 0 time\\(s\\), expected 1"),
        (stale_copies, "received a copy of w"),
        (not_joined, "returned while its threads were still updating"),
        (one_thread_only, "updates ran on 1 thread\\(s\\), expected 2"),
    ],
)
def test_epochs_reject_wrong_solutions(bad, match):
    with pytest.raises(AssertionError, match=match) as err:
        ex.check_epochs(bad)
    assert str(err.value).startswith("Exercise 4 (locked and lock-free epochs)")
    assert "thread" in str(err.value)  # the case: how many threads, with a lock or not


CHECKS = [ex.check_delta, ex.check_rho, ex.check_sgd_step, ex.check_epochs]


def _unfinished(*args):
    raise NotImplementedError


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize(
    "answer, match",
    [
        (lambda *a: [1.0, 2.0], "Exercise"),
        (lambda *a: np.zeros((2, 3)), "Exercise"),
        (lambda *a: float("nan"), "Exercise"),
        (lambda *a: 1 / 0, "raised ZeroDivisionError"),
        (_unfinished, "not done yet"),
        (None, "expected a function"),
    ],
)
def test_checks_never_crash(check, answer, match):
    with pytest.raises(AssertionError, match=match) as err:
        check(answer)
    assert str(err.value).startswith("Exercise ")
