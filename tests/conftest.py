from pathlib import Path

import pytest
import torch

FIXTURE_DIR = Path(__file__).parent / "fixtures" / "allennlp_elmo"
TORCH_DEVICES = ["cpu"] + (["cuda:0"] if torch.cuda.is_available() else [])


def pytest_addoption(parser) -> None:
    parser.addoption("--slow", action="store_true", help="also run the tests marked slow (CI runs every test)")


def pytest_collection_modifyitems(config, items) -> None:
    """Tests marked slow run only with --slow: the inner loop leaves them out."""
    if config.getoption("--slow"):
        return
    skip = pytest.mark.skip(reason="slow: pass --slow to run it")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def fixture_dir() -> Path:
    return FIXTURE_DIR


@pytest.fixture(scope="session")
def fixture_paths():
    return FIXTURE_DIR / "options.json", FIXTURE_DIR / "lm_weights.hdf5"


@pytest.fixture(params=TORCH_DEVICES)
def device(request) -> str:
    """Every torch device here: the CPU, and the first GPU when there is one (in
    float32: PyTorch lets cuDNN convolutions use TF32 unless told otherwise)."""
    if request.param == "cpu":
        yield request.param
        return
    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield request.param
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved
