"""A researcher's new strategy is a few lines of NumPy."""
import numpy as np

from clusterkit import Assignment, Clusterer, EStep, MStep, Seeder

from ._helpers import fixed_iterations


class FirstRows(Seeder):
    def seed(self, X, sample_weight, n_clusters, state):
        return X[:n_clusters].copy()


class NumpyLloydEStep(EStep):
    def assign(self, X, sample_weight, centers, state):
        d2 = ((X[:, None, :] - centers[None]) ** 2).sum(-1)
        state.meter.count("estep", d2.size)
        labels = d2.argmin(1).astype(np.int32)
        dist2 = d2[np.arange(len(X)), labels]
        qe = float(sample_weight @ dist2)
        return Assignment(labels=labels, dist2=dist2, objective=qe, qe=qe)


class NumpyMeans(MStep):
    def update(self, X, sample_weight, assignment, centers, state):
        new = centers.copy()
        for c in np.unique(assignment.labels):
            m = assignment.labels == c
            new[c] = np.average(X[m], axis=0, weights=sample_weight[m])
        return new


@fixed_iterations
def test_custom_strategies_reproduce_the_builtin_ones():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    custom = Clusterer(6, seed=FirstRows(), estep=NumpyLloydEStep(), mstep=NumpyMeans(),
                       tol=0, max_iter=10).fit(X)
    builtin = Clusterer(6, seed=X[:6], tol=0, max_iter=10).fit(X)
    np.testing.assert_allclose(custom.cluster_centers_, builtin.cluster_centers_, rtol=1e-9)
    np.testing.assert_array_equal(custom.labels_, builtin.labels_)
    assert custom.cost_["estep"] == builtin.cost_["estep"]


def test_strategies_compare_and_print_by_parameters():
    from clusterkit import AFKMC2
    assert AFKMC2(chain_length=5) == AFKMC2(chain_length=5) != AFKMC2(chain_length=6)
    assert repr(AFKMC2(chain_length=5)) == ("AFKMC2(chain_length=5, n_candidates='auto', "
                                           "potential_sample='auto')")
