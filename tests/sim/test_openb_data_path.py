"""Where ``bench openb`` / ``simulate`` find the openb trace without ``--data`` (issue 26 item 6).

Order: ``--data``, ``$KUBEGPU_OPENB_DATA``, ``openb_data`` in ``$XDG_CONFIG_HOME/kubegpu/config.yaml``
(XDG Base Directory spec: ``~/.config`` when unset), then ``../shared/data`` beside a checkout. A wheel
install (no checkout) is simulated by pointing the module's ``__file__`` into a site-packages tree.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kubegpu.cli.main import cli
from kubegpu.errors import InputError
from kubegpu.sim import bench


@pytest.fixture
def wheel(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setattr(bench, "__file__", str(tmp_path / "site-packages" / "kubegpu" / "sim" / "bench.py"))
    monkeypatch.delenv(bench.DATA_ENV, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    return tmp_path


def test_wheel_without_settings_finds_nothing(wheel: Path) -> None:
    assert bench.locate_data_dir() == (None, "")


def test_env_var_wins_over_config(wheel: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (wheel / "cfg" / "kubegpu").mkdir(parents=True)
    (wheel / "cfg" / "kubegpu" / "config.yaml").write_text("openb_data: /from/config\n")
    monkeypatch.setenv(bench.DATA_ENV, "/from/env")
    assert bench.locate_data_dir() == (Path("/from/env"), "$KUBEGPU_OPENB_DATA")


def test_config_file_relative_to_its_folder(wheel: Path) -> None:
    cfg = wheel / "cfg" / "kubegpu" / "config.yaml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text("openb_data: data/openb\n")
    assert bench.locate_data_dir() == (cfg.parent / "data" / "openb", f"{cfg} openb_data")


def test_bad_config_value_is_one_line(wheel: Path) -> None:
    cfg = wheel / "cfg" / "kubegpu" / "config.yaml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text("openb_data: [1]\n")
    with pytest.raises(InputError) as e:
        bench.locate_data_dir()
    assert str(e.value) == f"{cfg}: openb_data: must be a folder path"


def test_cli_error_says_how_to_point_at_the_data(wheel: Path) -> None:
    r = CliRunner().invoke(cli, ["bench", "openb", "--out", str(wheel / "o.json")])
    assert r.exit_code == 2
    assert "openb data not found: pass --data DIR, set KUBEGPU_OPENB_DATA=DIR" in r.output
    assert "Traceback" not in r.output


def test_cli_data_flag_wins_and_is_named(wheel: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(bench.DATA_ENV, str(wheel))
    r = CliRunner().invoke(
        cli, ["bench", "openb", "--out", str(wheel / "o.json"), "--data", str(wheel / "nowhere")]
    )
    assert r.exit_code == 2
    assert f"openb data not found at {wheel / 'nowhere'} (from --data): no csv/ folder there" in r.output
