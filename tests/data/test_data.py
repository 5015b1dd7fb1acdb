"""Offline data loaders: IDX files, MNIST-format directories, Fashion-MNIST, digits."""

import gzip

import numpy as np
import pytest

from dpuq.data import (
    fashion_mnist_available,
    load_digits_images,
    load_fashion_mnist,
    load_mnist_format,
    read_idx,
    write_idx,
)


class TestIdx:
    @pytest.mark.parametrize(
        "dtype", [np.uint8, np.int8, np.int16, np.int32, np.float32, np.float64]
    )
    @pytest.mark.parametrize("suffix", ["", ".gz"])
    def test_round_trip(self, tmp_path, rng, dtype, suffix):
        arr = (rng.normal(size=(3, 4, 5)) * 50).astype(dtype)
        path = tmp_path / f"a.idx{suffix}"
        write_idx(path, arr)
        back = read_idx(path)
        assert back.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(back, arr)

    def test_reads_a_hand_written_header(self, tmp_path):
        # magic 0x00000801 (ubyte, 1 dim), size 3, then the data
        raw = bytes([0, 0, 8, 1, 0, 0, 0, 3, 7, 8, 9])
        (tmp_path / "labels").write_bytes(raw)
        assert read_idx(tmp_path / "labels").tolist() == [7, 8, 9]

    def test_big_endian_ints(self, tmp_path):
        raw = bytes([0, 0, 0x0C, 1, 0, 0, 0, 2]) + (258).to_bytes(4, "big") + (1).to_bytes(4, "big")
        (tmp_path / "ints").write_bytes(raw)
        assert read_idx(tmp_path / "ints").tolist() == [258, 1]

    def test_bad_files(self, tmp_path):
        (tmp_path / "bad").write_bytes(b"\x01\x02\x08\x01")
        with pytest.raises(ValueError, match="magic"):
            read_idx(tmp_path / "bad")
        (tmp_path / "type").write_bytes(bytes([0, 0, 0x07, 1, 0, 0, 0, 1, 0]))
        with pytest.raises(ValueError, match="type code"):
            read_idx(tmp_path / "type")
        (tmp_path / "short").write_bytes(bytes([0, 0, 8, 1, 0, 0, 0, 5, 1, 2]))
        with pytest.raises(ValueError, match="bytes"):
            read_idx(tmp_path / "short")
        (tmp_path / "x.gz").write_bytes(b"not gzip")
        with pytest.raises(ValueError, match="cannot read"):
            read_idx(tmp_path / "x.gz")
        with pytest.raises(FileNotFoundError):
            read_idx(tmp_path / "missing")


def _fake_mnist(directory, n_train=6, n_test=4, label_max=9):
    rng = np.random.default_rng(0)
    for split, n in (("train", n_train), ("t10k", n_test)):
        write_idx(
            directory / f"{split}-images-idx3-ubyte.gz",
            rng.integers(0, 256, (n, 5, 5), dtype=np.uint8),
        )
        labels = rng.integers(0, label_max + 1, n).astype(np.uint8)
        labels[0] = label_max
        with gzip.open(directory / f"{split}-labels-idx1-ubyte.gz", "wb") as fh:
            fh.write(bytes([0, 0, 8, 1]) + n.to_bytes(4, "big") + labels.tobytes())


class TestMnistFormat:
    def test_loads_and_scales(self, tmp_path):
        _fake_mnist(tmp_path)
        data = load_mnist_format(tmp_path, "train")
        assert data.images.shape == (6, 5, 5) and data.images.dtype == np.float32
        assert 0.0 <= data.images.min() and data.images.max() <= 1.0
        assert data.labels.dtype == np.int64
        assert load_mnist_format(tmp_path, "test").images.shape == (4, 5, 5)
        assert fashion_mnist_available(tmp_path)
        assert load_fashion_mnist("test", directory=tmp_path).labels.shape == (4,)

    def test_labels_out_of_range(self, tmp_path):
        _fake_mnist(tmp_path, label_max=12)
        with pytest.raises(ValueError, match="outside"):
            load_mnist_format(tmp_path, "train")

    def test_missing_directory_says_how_to_install(self, tmp_path):
        assert not fashion_mnist_available(tmp_path)
        with pytest.raises(FileNotFoundError, match="dataset-fashion-mnist"):
            load_fashion_mnist(directory=tmp_path)

    def test_bad_split(self, tmp_path):
        with pytest.raises(ValueError, match="split"):
            load_mnist_format(tmp_path, "validation")


@pytest.mark.skipif(not fashion_mnist_available(), reason="Debian's dataset-fashion-mnist absent")
def test_debian_fashion_mnist():
    train, test = load_fashion_mnist("train"), load_fashion_mnist("test")
    assert train.images.shape == (60000, 28, 28) and test.images.shape == (10000, 28, 28)
    assert np.bincount(train.labels).tolist() == [6000] * 10
    assert np.bincount(test.labels).tolist() == [1000] * 10


def test_digits():
    data = load_digits_images()
    assert data.images.shape == (1797, 8, 8)
    assert data.images.min() == 0.0 and data.images.max() == 1.0
    assert set(np.unique(data.labels)) == set(range(10))
