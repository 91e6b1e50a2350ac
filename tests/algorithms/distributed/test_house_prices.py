import numpy as np
import pytest

from mlpar.algorithms.distributed import house_prices
from mlpar.core import data


def test_csv_is_regenerated_byte_for_byte(tmp_path):
    path = house_prices.write_csv(tmp_path / "h.csv")
    assert data.sha256(path) == data.manifest()[house_prices.FILE]["sha256"]


def test_file_and_memory_agree():
    raw, y = house_prices.read_csv()
    raw2, y2 = house_prices.generate(house_prices.CSV_SAMPLES, house_prices.CSV_SEED)
    np.testing.assert_array_equal(raw, raw2)
    np.testing.assert_array_equal(y, y2)


def test_least_squares_recovers_the_generating_weights():
    raw, y = house_prices.read_csv()
    X = house_prices.design_matrix(raw)
    assert X.shape == (4000, 5)
    np.testing.assert_allclose(X[:, 1:].mean(axis=0), 0, atol=1e-12)
    fitted = np.linalg.lstsq(X, y, rcond=None)[0]
    # noise std 20 over 4000 rows: standard errors are well under 1 k€ per standardized weight
    np.testing.assert_allclose(fitted, house_prices.true_standardized_weights(raw), atol=2.0)


def test_bad_input():
    with pytest.raises(ValueError, match="n_samples"):
        house_prices.generate(0, seed=1)
    with pytest.raises(ValueError, match="seed"):
        house_prices.generate(10, seed=-1)
    with pytest.raises(ValueError, match="constant"):
        house_prices.design_matrix(np.ones((5, 2)))
