from pathlib import Path

import pytest

from mlpar.core import data


def test_every_manifest_file_matches_its_checksum():
    rows = data.manifest()
    for name, row in rows.items():
        assert data.verify(name).is_file()
        assert row["source"].strip() and row["licence"].strip(), name


def test_data_is_package_data_found_from_any_working_directory(monkeypatch, tmp_path):
    monkeypatch.delenv("MLPAR_DATA", raising=False)
    packaged = data.packaged_dir()
    assert packaged.parent == Path(data.__file__).parent  # mlpar/core/datasets
    monkeypatch.chdir(tmp_path)
    assert data.data_dir() == packaged
    assert data.verify("house_prices.csv").is_file()


def test_wheel_lists_the_data_files_as_package_data():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    root = Path(data.__file__).resolve().parents[2]
    config = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert f"{data.PACKAGED}/*" in config["package-data"]["mlpar.core"]


def test_missing_override_folder_says_what_to_do(monkeypatch, tmp_path):
    monkeypatch.setenv("MLPAR_DATA", str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match="MLPAR_DATA"):
        data.data_dir()


def test_env_override(monkeypatch, tmp_path):
    (tmp_path / "MANIFEST.tsv").write_text("file\tsha256\tsource\tlicence\n")
    monkeypatch.setenv("MLPAR_DATA", str(tmp_path))
    assert data.data_dir() == tmp_path


def test_unknown_name():
    with pytest.raises(ValueError, match="name: expected one of"):
        data.data_path("no_such_file.csv")
    with pytest.raises(TypeError, match="name: expected a file name string"):
        data.data_path(3)


def test_checksum_mismatch(monkeypatch, tmp_path):
    (tmp_path / "MANIFEST.tsv").write_text("file\tsha256\tsource\tlicence\nx.csv\t00\tme\tCC0\n")
    (tmp_path / "x.csv").write_text("1,2\n")
    monkeypatch.setenv("MLPAR_DATA", str(tmp_path))
    with pytest.raises(ValueError, match="x.csv: sha256 .* does not match"):
        data.verify("x.csv")


def test_every_data_file_is_in_the_manifest(monkeypatch):
    monkeypatch.delenv("MLPAR_DATA", raising=False)
    folder = data.data_dir()
    listed = set(data.manifest())
    present = {p.name for p in folder.iterdir() if p.is_file()} - {"MANIFEST.tsv", "README.md"}
    assert present == listed
