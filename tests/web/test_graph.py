"""The graph's pure parts: PCA projection and k-means."""

from __future__ import annotations

import numpy as np

from phi.web.graph import kmeans, project_2d


def test_projection_is_centred_bounded_and_stable() -> None:
    rng = np.random.default_rng(7)
    points = rng.normal(size=(8, 16))
    coords = project_2d(points)
    assert coords.shape == (8, 2)
    assert np.allclose(coords.mean(axis=0), 0, atol=1e-9)
    assert np.isclose(np.max(np.linalg.norm(coords, axis=1)), 1.0)
    assert np.allclose(project_2d(points), coords)
    assert np.allclose(project_2d(-points), coords)  # SVD sign flips do not flip the picture


def test_projection_of_few_people() -> None:
    assert project_2d(np.zeros((0, 4))).shape == (0, 2)
    assert np.allclose(project_2d(np.ones((1, 4))), [[0.0, 0.0]])
    two = project_2d(np.array([[0.0, 1.0], [1.0, 0.0]]))
    assert np.allclose(np.abs(two[:, 0]), 1.0) and np.allclose(two[:, 1], 0.0)


def test_kmeans_separates_groups_deterministically() -> None:
    points = np.array([[0, 0], [0.1, 0], [5, 5], [5.1, 5], [0, 0.1]], dtype=float)
    labels = kmeans(points, 2)
    assert labels == kmeans(points, 2)
    assert labels[0] == labels[1] == labels[4] != labels[2] == labels[3]
    assert sorted(kmeans(points, 9)) == [0, 1, 2, 3, 4]  # k is capped at the number of points
    assert kmeans(np.zeros((0, 2)), 3) == []
