"""mlpar.gpu.stack: the numba / numba-cuda / numpy combinations, each faked, and Colab's set-up."""

import json
import os
import subprocess
import sys
import types

import pytest

from mlpar.gpu import stack

WORKS = {"numba": "0.68.1", "numba-cuda": "0.30.4", "numpy": "2.4.6"}


def fake_versions(monkeypatch, **versions):
    table = dict(WORKS, **{k.replace("_", "-"): v for k, v in versions.items()})
    monkeypatch.setattr(stack, "installed", lambda dist: table.get(dist))


def test_a_working_pair_has_no_problem(monkeypatch):
    fake_versions(monkeypatch)
    assert stack.current().problems("gpu") == []
    assert stack.require_usable("gpu") == []
    assert repr(stack.current()) == "Stack(numba 0.68.1, numba-cuda 0.30.4, numpy 2.4.6)"


@pytest.mark.parametrize("numpy", ["2.5.0", "2.5.0rc1", "2.6.1", "3.0.0"])
def test_numba_cuda_with_numpy_without_row_stack_is_refused_on_the_gpu(monkeypatch, numpy):
    fake_versions(monkeypatch, numpy=numpy)
    (problem,) = stack.current().problems("gpu")
    assert problem.fatal and "np.row_stack" in problem.text and "AttributeError" in problem.text
    with pytest.raises(RuntimeError, match=r'cannot run kernels here: .*numpy<2\.5'):
        stack.require_usable("gpu")


def test_the_same_pair_is_only_a_note_on_the_simulator(monkeypatch):
    fake_versions(monkeypatch, numpy="2.5.0")
    (problem,) = stack.require_usable("simulator")
    assert not problem.fatal and "on a GPU" in problem.text
    assert str(problem).startswith("note: ") and 'fix: pip install "numpy<2.5"' in str(problem)


@pytest.mark.parametrize("driver, extra", [(12, "cu12"), (13, "cu13"), (None, "cu12")])
def test_without_numba_cuda_the_gpu_path_is_told_to_install_it(monkeypatch, driver, extra):
    fake_versions(monkeypatch, numba_cuda=None, numpy="2.5.0")  # numpy 2.5 is fine without it
    monkeypatch.setattr(stack, "driver_cuda_major", lambda smi_output=None: driver)
    (problem,) = stack.require_usable("gpu")
    assert not problem.fatal and "deprecated" in problem.text
    assert problem.fix == f'pip install "numba-cuda[{extra}]"'
    assert stack.current().problems("simulator") == []  # the simulator needs no numba-cuda


def test_missing_numba_is_fatal_everywhere(monkeypatch):
    fake_versions(monkeypatch, numba=None, numba_cuda=None)
    for backend in ("gpu", "simulator"):
        with pytest.raises(RuntimeError, match="numba is not installed"):
            stack.require_usable(backend)


def test_versions_and_driver_banner_parse():
    assert stack.release("2.5.0rc1") == (2, 5, 0)
    assert stack.release("v0.30.4+cu12") == (0, 30, 4)
    assert stack.release("") == ()
    banner = "| NVIDIA-SMI 550.54.15   Driver Version: 550.54.15   CUDA Version: 12.4     |"
    assert stack.driver_cuda_major(banner) == 12
    assert stack.driver_cuda_major("no driver here") is None
    assert stack.colab_requirements(13) == ["numpy<2.5", "numba-cuda[cu13]"]
    assert stack.installed("surely-not-an-installed-package-xyz") is None


@pytest.mark.parametrize("call, error, words", [
    (lambda: stack.release(2.5), TypeError, "version: expected a version string"),
    (lambda: stack.cuda_extra(12.0), TypeError, "major: expected an int"),
    (lambda: stack.cuda_extra(0), ValueError, "major: expected a CUDA major version"),
    (lambda: stack.installed(None), TypeError, "distribution: expected a package name"),
    (lambda: stack.current().problems("tpu"), ValueError, "backend: expected one of"),
    (lambda: stack.colab_setup(run=3), TypeError, "run: expected a function"),
    (lambda: stack.colab_setup(on_colab="yes"), TypeError, "on_colab: expected True"),
    (lambda: stack.driver_cuda_major(12), TypeError, "smi_output"),
])
def test_bad_arguments_are_named(call, error, words):
    with pytest.raises(error, match=words):
        call()


class FakeRun:
    def __init__(self, returncode=0, stderr=""):
        self.calls, self.returncode, self.stderr = [], returncode, stderr

    def __call__(self, args, **kwargs):
        self.calls.append(args)
        return types.SimpleNamespace(returncode=self.returncode, stderr=self.stderr, stdout="")


def test_colab_setup_does_nothing_off_colab_or_without_a_gpu(monkeypatch):
    run = FakeRun()
    assert stack.colab_setup(run=run, on_colab=False) == "not on Colab: nothing installed"
    monkeypatch.setattr(stack, "driver_cuda_major", lambda smi_output=None: None)
    assert "simulator" in stack.colab_setup(run=run, on_colab=True)
    assert run.calls == []


def test_colab_setup_installs_the_working_pair_on_a_gpu_runtime(monkeypatch):
    fake_versions(monkeypatch)
    monkeypatch.setattr(stack, "driver_cuda_major", lambda smi_output=None: 12)
    monkeypatch.setitem(sys.modules, "numpy", types.SimpleNamespace(__version__="2.4.6"))
    run = FakeRun()
    said = stack.colab_setup(run=run, on_colab=True)
    assert said == "installed numpy<2.5 and numba-cuda[cu12] for the GPU (driver CUDA 12)"
    assert run.calls[0][-2:] == ["numpy<2.5", "numba-cuda[cu12]"]


def test_colab_setup_says_so_when_it_cannot(monkeypatch):
    fake_versions(monkeypatch)
    monkeypatch.setattr(stack, "driver_cuda_major", lambda smi_output=None: 12)
    said = stack.colab_setup(run=FakeRun(1, "ERROR: No matching distribution"), on_colab=True)
    assert said.startswith("could not install numpy<2.5 and numba-cuda[cu12]")
    assert "No matching distribution" in said and "simulator" in said
    # installed, but another numpy was imported before the cell ran: only a restart helps
    for loaded in ("2.5.0", "2.0.2"):
        monkeypatch.setitem(sys.modules, "numpy", types.SimpleNamespace(__version__=loaded))
        said = stack.colab_setup(run=FakeRun(), on_colab=True)
        assert f"numpy {loaded} is already loaded: restart the session" in said
    # installed, nothing stale in memory, but pip left an unusable pair behind
    fake_versions(monkeypatch, numpy="2.5.1")
    monkeypatch.setitem(sys.modules, "numpy", types.SimpleNamespace(__version__="2.5.1"))
    assert "still cannot work" in stack.colab_setup(run=FakeRun(), on_colab=True)


def test_kernels_module_refuses_a_broken_pair_before_importing_numba():
    # Pretend the GPU path was chosen and numba-cuda sits with numpy 2.5: importing the
    # kernels must stop with the fix, and must not have imported numba (no GPU needed).
    code = (
        "import json, sys\n"
        "from mlpar.gpu import backend, stack\n"
        "backend.choose_cuda_backend = lambda prefer='auto': 'gpu'\n"
        "stack.installed = lambda d: {'numba': '0.68.1', 'numba-cuda': '0.30.4', "
        "'numpy': '2.5.0'}[d]\n"
        "try:\n"
        "    import mlpar.gpu.cuda_kernels\n"
        "    err = ''\n"
        "except RuntimeError as e:\n"
        "    err = str(e)\n"
        "print(json.dumps([err, 'numba' in sys.modules]))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    err, numba_loaded = json.loads(done.stdout)
    assert "numpy<2.5" in err and "row_stack" in err
    assert numba_loaded is False


def test_stack_module_imports_neither_numpy_nor_numba():
    code = ("import sys\nimport mlpar.gpu.stack\n"
            "print('numpy' in sys.modules, 'numba' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.split() == ["False", "False"], done.stderr[-2000:]
