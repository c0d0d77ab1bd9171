import numpy as np
import pytest

DTYPES = [np.float32, np.float64]
THREADS = [1, 2]


def pytest_addoption(parser):
    parser.addoption("--write-outputs", action="store_true",
                     help="rewrite the printed outputs that README.md and docs/*.rst show "
                     "with what their examples print now (tests/test_docs_examples.py)")


@pytest.fixture(params=DTYPES, ids=["float32", "float64"])
def dtype(request):
    return request.param


@pytest.fixture(params=THREADS, ids=["1thread", "2threads"])
def n_threads(request):
    return request.param


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def rtol_for(dtype):
    return 1e-5 if np.dtype(dtype) == np.float32 else 1e-10


def make_state(X, n_clusters, n_threads=1, soft=False, seed=0):
    """A FitState as the driver would build it for ``X``."""
    from clusterkit import FREE_ENERGY, QUANTIZATION_ERROR, FitState
    return FitState(n_clusters=n_clusters, n_features=X.shape[1],
                    random_state=np.random.RandomState(seed), n_threads=n_threads, needs_resp=soft,
                    objective=FREE_ENERGY if soft else QUANTIZATION_ERROR)
