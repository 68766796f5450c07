from pathlib import Path

import pytest
import torch

FIXTURE_DIR = Path(__file__).parent / "fixtures" / "allennlp_elmo"
TORCH_DEVICES = ["cpu"] + (["cuda:0"] if torch.cuda.is_available() else [])


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
