"""The learning-rate schedule: torch's schedulers, the curves the config names,
saved and restored exactly."""
import inspect
import io
import math

import pytest
import torch

from spacy_elmo.errors import ElmoError
from spacy_elmo.training.registry import SCHEDULES, registry
from spacy_elmo.training.run.checkpoint import TrainState, load_checkpoint, save_checkpoint

BASE, MAX_STEPS = 0.1, 20


def schedule_factory(max_steps=MAX_STEPS, **settings):
    """The registered schedule a [training.schedule] section names, with those of `settings`
    (and `max_steps`) that it takes, resolved by confection as the config's is."""
    name = f"spacy-elmo.{settings.pop('name', 'constant')}.v1"
    takes = inspect.signature(registry.get(SCHEDULES, name)).parameters
    arguments = {key: value for key, value in {**settings, "max_steps": max_steps}.items() if key in takes}
    return registry.resolve({"schedule": {"@" + SCHEDULES: name, **arguments}})["schedule"]


def make(**settings):
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(2))], lr=BASE)
    return optimizer, schedule_factory(**settings)(optimizer)


def expected(name, step, warmup=0, final=0.0):
    """The rate of `step` (0-based), written out."""
    factor = min(1.0, (step + 1) / warmup) if warmup else 1.0
    progress = min(1.0, max(0, step - warmup) / max(1, MAX_STEPS - warmup))
    if name == "linear":
        factor *= final + (1 - final) * (1 - progress)
    elif name == "cosine":
        factor *= final + (1 - final) * 0.5 * (1 + math.cos(math.pi * progress))
    return BASE * factor


def rates(schedule, n):
    out = []
    for _ in range(n):
        out.append(schedule.lr)
        schedule.optimizer.step()
        schedule.step()
    return out


@pytest.mark.parametrize("name", ["constant", "linear", "cosine"])
@pytest.mark.parametrize("warmup", [0, 1, 5])
def test_each_schedule_follows_its_curve(name, warmup):
    _, schedule = make(name=name, warmup_steps=warmup, final_factor=0.1)
    got = rates(schedule, MAX_STEPS)
    want = [expected(name, s, warmup, 0.1) for s in range(MAX_STEPS)]
    assert got == pytest.approx(want, rel=1e-9, abs=0)
    if name != "constant":
        assert got[-1] < got[warmup] * 0.2  # it really decays


def test_plateau_multiplies_by_decay_when_the_dev_perplexity_stops_improving():
    _, schedule = make(name="plateau", warmup_steps=4, decay=0.5, min_improvement=1.0)
    got = []
    for step, dev in enumerate([50.0, 49.5, None, None, 40.0, 45.0, None, None]):
        got.append(schedule.lr)
        schedule.optimizer.step()
        schedule.step()
        if dev is not None:
            schedule.observe(dev)
    # Warm-up 1/4 .. 4/4; 49.5 is not 1.0 better than 50: halved, and the warm-up goes on
    # from there (3/4 * 1/2, 4/4 * 1/2); 40 is better; 45 is not: halved again.
    assert got == pytest.approx([BASE * f for f in (0.25, 0.5, 0.375, 0.5, 0.5, 0.5, 0.25, 0.25)], rel=1e-12)


@pytest.mark.parametrize("settings", [
    {"name": "cosine", "warmup_steps": 3, "final_factor": 0.0},
    {"name": "linear", "warmup_steps": 0, "final_factor": 0.5},
    {"name": "plateau", "warmup_steps": 6, "decay": 0.3},
])
def test_a_saved_schedule_continues_exactly_after_a_weights_only_load(settings):
    optimizer, whole = make(**settings)
    want = []
    for step in range(MAX_STEPS):
        want.append(whole.lr)
        optimizer.step()
        whole.step()
        if step % 3 == 2:
            whole.observe([30.0, 31.0, 29.0, 32.0, 32.0, 20.0, 21.0][step // 3])
    # The same run, saved at step 10 as a checkpoint keeps it, then rebuilt.
    optimizer, first = make(**settings)
    got = []
    for step in range(10):
        got.append(first.lr)
        optimizer.step()
        first.step()
        if step % 3 == 2:
            first.observe([30.0, 31.0, 29.0, 32.0, 32.0, 20.0, 21.0][step // 3])
    buffer = io.BytesIO()
    torch.save({"optimizer": optimizer.state_dict(), "schedule": first.state_dict()}, buffer)
    buffer.seek(0)
    saved = torch.load(buffer, weights_only=True)
    optimizer, second = make(**settings)
    optimizer.load_state_dict(saved["optimizer"])
    second.load_state_dict(saved["schedule"])
    for step in range(10, MAX_STEPS):
        got.append(second.lr)
        optimizer.step()
        second.step()
        if step % 3 == 2:
            second.observe([30.0, 31.0, 29.0, 32.0, 32.0, 20.0, 21.0][step // 3])
    assert got == want
    assert len(set(want)) > 3  # the rate did change along the way


@pytest.mark.parametrize("changed", [{"final_factor": 0.5}, {"name": "linear"}, {"warmup_steps": 2}])
def test_a_schedule_built_for_other_settings_is_refused_on_resume(changed):
    _, first = make(name="cosine", warmup_steps=3)
    _, second = make(**{"name": "cosine", "warmup_steps": 3, **changed})
    with pytest.raises(ElmoError) as err:
        second.load_state_dict(first.state_dict(), "run/checkpoint.pt")
    assert err.value.code == "E315" and "run/checkpoint.pt" in str(err.value)
    key, value = next(iter(changed.items()))
    assert f"schedule.{key} = {value!r}" in str(err.value)


def test_a_checkpoint_of_the_old_format_is_a_coded_error(tmp_path):
    model = torch.nn.Linear(2, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    path = tmp_path / "checkpoint.pt"
    save_checkpoint(path, state=TrainState(step=3), model=model, optimizer=optimizer,
                    schedule=schedule_factory(10)(optimizer).state_dict(), rng=[])
    assert load_checkpoint(path)["state"].step == 3
    payload = torch.load(path, weights_only=True)
    payload.update(format=1, schedule={"plateau_factor": 1.0, "best": None})  # what version 0.1.0 wrote
    torch.save(payload, path)
    with pytest.raises(ElmoError) as err:
        load_checkpoint(path)
    assert err.value.code == "E314" and "format 1, expected 2" in str(err.value)
