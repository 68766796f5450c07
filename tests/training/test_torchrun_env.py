"""torchrun's environment variables, set wrong by hand: a coded error that
names the variable and says to start with torchrun, before anything is loaded
or written."""
import pytest

from spacy_elmo.distributed import Distributed
from spacy_elmo.errors import ConfigError
from spacy_elmo.training import pretrain

TORCHRUN = {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}


@pytest.fixture
def environ(monkeypatch):
    """Set the environment as `env` says (None: unset), torchrun's variables unset first."""
    def set_env(**env):
        for name in TORCHRUN:
            monkeypatch.delenv(name, raising=False)
        for name, value in env.items():
            if value is not None:
                monkeypatch.setenv(name, value)

    return set_env


@pytest.mark.parametrize("env,name,found", [
    ({"WORLD_SIZE": "abc"}, "WORLD_SIZE", "'abc'"),
    ({"WORLD_SIZE": "0"}, "WORLD_SIZE", "'0'"),
    ({"WORLD_SIZE": "2"}, "RANK", "not set"),
    ({**TORCHRUN, "MASTER_ADDR": None}, "MASTER_ADDR", "not set"),
    ({**TORCHRUN, "MASTER_PORT": None}, "MASTER_PORT", "not set"),
    ({**TORCHRUN, "RANK": "2"}, "RANK", "'2'"),
    ({**TORCHRUN, "RANK": "-1"}, "RANK", "'-1'"),
    ({**TORCHRUN, "LOCAL_RANK": "x"}, "LOCAL_RANK", "'x'"),
])
def test_a_wrong_torchrun_variable_is_named_before_anything_is_loaded(tmp_path, tiny_config, environ, env, name,
                                                                      found):
    environ(**env)
    with pytest.raises(ConfigError, match=rf"E545\] The environment variable {name} is {found}: .*torchrun"):
        Distributed.from_env("cpu")
    run = tmp_path / "run"
    with pytest.raises(ConfigError, match=rf"E545\] The environment variable {name} is {found}"):
        pretrain(tiny_config(training={"max_steps": 2}), run, progress=False)
    assert not run.exists()


def test_torchruns_variables_and_none_are_read(environ):
    environ(**TORCHRUN)
    dist = Distributed.from_env("cpu")
    assert (dist.rank, dist.world_size, dist.local_rank, dist.enabled) == (1, 2, 1, True)
    environ()
    assert (Distributed.from_env("cpu").world_size, Distributed.from_env("cpu").is_main) == (1, True)
