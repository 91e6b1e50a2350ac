import pytest

from mlpar import data


def test_every_manifest_file_matches_its_checksum():
    rows = data.manifest()
    for name, row in rows.items():
        assert data.verify(name).is_file()
        assert row["source"].strip() and row["licence"].strip(), name


def test_data_found_from_notebooks_folder(monkeypatch):
    root = data.data_dir().parent
    monkeypatch.chdir(root / "notebooks")
    assert data.data_dir() == root / "data"


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


def test_every_data_file_is_in_the_manifest():
    folder = data.data_dir()
    listed = set(data.manifest())
    present = {p.name for p in folder.iterdir() if p.is_file()} - {"MANIFEST.tsv", "README.md"}
    assert present == listed
