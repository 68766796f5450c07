"""The training loop: steps, dev evaluations, the log, checkpoints, the export."""
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Optional

import torch
from wasabi import Printer

from ...bilm.precision import precision, tf32_switches
from ...errors import DivergedRunError, ElmoError
from ..data.lm_batches import CorpusBatches
from .checkpoint import TrainState, damaged_checkpoint, load_checkpoint, rng_state, save_checkpoint, set_rng_state
from .config import TrainingSettings
from ...disk import RUN_FILE, writing
from ...distributed import Distributed
from ..objective.scoring import Perplexity, nll_sums
from .export import export_model, training_info
from ..objective.lm import PretrainingLM
from .optim import OptimizerFactory, ScheduleFactory
from .plot import plot_curves
from .run_dir import RunDir
from .train_log import TrainLog
from ..data.vocab import LMVocab

StepHook = Callable[[TrainState, PretrainingLM], None]


@dataclass
class PretrainResult:
    output_dir: Path
    model: PretrainingLM  # as trained (and exported to output_dir/model)
    state: TrainState
    parameters: int
    train_perplexity: Optional[float]  # the last log interval's, mean of both LMs
    dev: Optional[Perplexity]
    tokens_per_second: float  # per direction, all processes, training steps only
    steps_per_epoch: int = 0


class _Window:
    """Sums over the steps since the last log record."""

    def __init__(self):
        self.nll = torch.zeros(3, dtype=torch.float64)  # forward, backward, predictions
        self.seconds = 0.0

    def add(self, sums: torch.Tensor, seconds: float) -> None:
        self.nll += sums
        self.seconds += seconds

    @property
    def empty(self) -> bool:
        return bool(self.nll[2] == 0)


class Trainer:
    """One run's model, optimiser, schedule and position, and what it writes.

    `lm` is trained directly, or through DistributedDataParallel when there
    are several processes; process 0 alone writes the log, the checkpoint and
    the export.
    """

    def __init__(
        self,
        lm: PretrainingLM,
        vocab: LMVocab,
        settings: TrainingSettings,
        *,
        seed: int,
        optimizer: OptimizerFactory,
        schedule: ScheduleFactory,
        export_info: Dict[str, Any],
        run: RunDir,
        train: CorpusBatches,
        dev: Optional[CorpusBatches],
        dist: Distributed,
        printer: Printer,
    ):
        """settings: the loop's ([training]: steps, intervals, clipping, precision);
        the optimiser and the schedule come built by their factories, and
        `export_info` goes into the export's pretrain.json as it is."""
        self.lm = lm
        self.vocab = vocab
        self.settings = settings
        self.seed = seed
        self.export_info = dict(export_info)
        self.run = run
        self.train = train
        self.dev = dev
        self.dist = dist
        self.printer = printer
        self.optimizer = optimizer(lm.parameters())
        self.schedule = schedule(self.optimizer)
        self.state = TrainState(world_size=dist.world_size)
        self.log = TrainLog(run.log)
        self.last_checkpoint: Optional[int] = None
        self.last_dev_step = -1
        self.model: torch.nn.Module = lm
        if dist.enabled:
            self.model = torch.nn.parallel.DistributedDataParallel(
                lm,
                device_ids=[dist.device] if dist.device.type == "cuda" else None,
                # A batch with no target in some tail cluster leaves its weights unused.
                find_unused_parameters=lm.softmax.kind == "adaptive",
            )
        torch.manual_seed(seed + 1 + dist.rank)  # dropout differs between processes

    @property
    def parameters(self) -> int:
        return sum(p.numel() for p in self.lm.parameters())

    def steps_per_epoch(self) -> int:
        return len(self.train.epoch(self.seed, 0, 0, self.dist.world_size))

    def restore(self) -> None:
        """Continue from the run's checkpoint: weights, optimiser, schedule,
        random state and the position in the data."""
        path = self.run.checkpoint
        payload = load_checkpoint(path)
        self.run.check_checkpoint_vocab(payload, self.vocab, self.lm)
        # torch's load_state_dict also takes the saved settings of each group of parameters; a
        # run resumed with other settings (weight decay, betas, eps, ...: warned as changed) uses
        # the config's, and the rate stays the schedule's.
        configured = [{k: v for k, v in group.items() if k not in ("params", "lr", "initial_lr")}
                      for group in self.optimizer.param_groups]
        try:
            self.lm.load_state_dict(payload["model"])
            self.optimizer.load_state_dict(payload["optimizer"])
            for group, settings in zip(self.optimizer.param_groups, configured):
                group.update(settings)
            self.schedule.load_state_dict(payload["schedule"], path)
        except ElmoError:
            raise
        except (RuntimeError, ValueError, KeyError, TypeError, IndexError) as err:
            # The config is the run's (RunDir.claim checks it): the model is the same, so the file is not.
            raise damaged_checkpoint(path, f"it does not fit the run's model ({str(err).strip()[:300]})") from err
        state: TrainState = payload["state"]
        rngs = payload["rng"]
        world_size = self.dist.world_size
        if len(rngs) == world_size:
            try:
                set_rng_state(rngs[self.dist.rank])
            except (RuntimeError, KeyError, TypeError) as err:
                raise damaged_checkpoint(path, f"its random state is not one ({str(err).strip()[:200]})") from err
        else:
            torch.manual_seed(self.seed + 1 + self.dist.rank + 1000 * state.step)
            self.printer.warn(
                f"The run was saved by {len(rngs)} process(es) and resumes on {world_size}: it continues "
                "from the same weights and place in the data, but with other dropout draws"
            )
        if state.world_size != world_size:
            # The same place in the epoch's plan: batches taken so far, all processes together.
            state.epoch_step = -(-state.epoch_step * state.world_size // world_size)
            state.world_size = world_size
        self.state = state
        self.last_checkpoint = state.step
        # A dev evaluation logged at the checkpoint's step (a run stopped in its export) is not
        # made and logged again; every process reads the same record.
        if self.log.dev_at(state.step) is not None:
            self.last_dev_step = state.step
        if self.dist.is_main:
            self.log.truncate(state.step)
            if self.log.skipped:
                self.printer.warn(f"Left out {self.log.skipped} damaged line(s) of {self.log.path}: "
                                  "not a JSON record in UTF-8")
        self.printer.info(f"Resuming from {self.run.checkpoint} at step {state.step:,} (epoch {state.epoch})")

    def fit(self, progress: bool = True, on_step: Optional[StepHook] = None) -> PretrainResult:
        """Train until max_steps or max_epochs, then evaluate, save and export."""
        from tqdm import tqdm

        settings, state = self.settings, self.state
        total = min(n for n in (settings.max_steps, self.steps_per_epoch() * settings.max_epochs) if n)
        bar = tqdm(
            total=total, initial=state.step, unit="step", mininterval=1.0,
            disable=not (progress and self.dist.is_main),
        )
        window = _Window()
        train_seconds, train_tokens = 0.0, 0
        # A resumed run that has no step left to train exports what its log last measured.
        last_train_ppl: Optional[float] = self._logged_train_perplexity()
        last_dev: Optional[Perplexity] = self.log.dev_at(state.step) if self.last_dev_step == state.step else None
        lr = self.schedule.lr
        self.model.train()
        started = time.perf_counter() - state.elapsed
        while not self._finished():
            plan = self.train.epoch(self.seed, state.epoch, self.dist.rank, self.dist.world_size)
            for indices in plan[state.epoch_step :]:
                if settings.max_steps and state.step >= settings.max_steps:
                    break
                t0 = time.perf_counter()
                sums, lr = self._step(indices, bar)
                seconds = time.perf_counter() - t0
                state.step += 1
                state.epoch_step += 1
                state.tokens += int(sums[2])
                state.elapsed = time.perf_counter() - started
                window.add(sums, seconds)
                train_seconds += seconds
                train_tokens += int(sums[2])
                bar.update(1)
                if state.step % settings.log_every == 0:
                    last_train_ppl = self._log_train(window, lr, bar)
                    window = _Window()
                if self.dev is not None and settings.eval_every and state.step % settings.eval_every == 0:
                    last_dev = self._evaluate_and_log(bar)
                if state.step % settings.checkpoint_every == 0:
                    self.save_checkpoint()
                if on_step is not None:
                    on_step(state, self.lm)
            else:
                state.epoch += 1
                state.epoch_step = 0
                continue
            break  # max_steps reached within the epoch
        bar.close()
        if not window.empty:
            last_train_ppl = self._log_train(window, lr, None)
        if self.dev is not None and self.last_dev_step != state.step:
            last_dev = self._evaluate_and_log(None)
        if self.last_checkpoint != state.step:
            self.save_checkpoint()
        if self.dist.is_main:
            self._export(last_train_ppl, last_dev)
        return PretrainResult(
            output_dir=self.run.path,
            model=self.lm,
            state=state,
            parameters=self.parameters,
            train_perplexity=last_train_ppl,
            dev=last_dev,
            tokens_per_second=train_tokens / train_seconds if train_seconds else 0.0,
            steps_per_epoch=self.steps_per_epoch(),
        )

    def evaluate(self, data: CorpusBatches) -> Perplexity:
        """Perplexity over all of `data`, each process scoring its share."""
        batches = (data.batch(b) for b in data.evaluation(self.dist.rank, self.dist.world_size))
        sums = self.dist.sum(nll_sums(self.lm, batches, self.dist.device))
        return Perplexity.from_sums(float(sums[0]), float(sums[1]), int(sums[2]))

    def save_checkpoint(self) -> None:
        rngs = self.dist.gather(rng_state())  # every process's, for an exact resume
        if self.dist.is_main:
            save_checkpoint(
                self.run.checkpoint, state=self.state, model=self.lm, optimizer=self.optimizer,
                schedule=self.schedule.state_dict(), rng=rngs, vocab_sha256=self.vocab.sha256,
            )
        self.last_checkpoint = self.state.step

    def _step(self, indices, bar):
        """One update. RETURNS: (the sums of all processes: forward and
        backward negative log-likelihood and predictions; the learning rate)."""
        batch = self.train.batch(indices).to(self.dist.device)
        with precision(self.dist.device, self.settings.precision):
            log_probs = self.model(batch).float()  # (2, n_targets)
        loss = -log_probs.mean()
        sums = torch.stack([-log_probs[0].sum(), -log_probs[1].sum(), log_probs.new_tensor(log_probs.shape[1])])
        sums = self.dist.sum(sums.detach().double().cpu())
        if not torch.isfinite(sums).all():
            self._diverged("loss", float(sums[0] + sums[1]), bar)
        self.optimizer.zero_grad(set_to_none=True)
        with tf32_switches(self.dist.device, self.settings.precision):  # as the forward pass multiplied
            loss.backward()
        if self.settings.grad_clip:
            norm = torch.nn.utils.clip_grad_norm_(self.lm.parameters(), self.settings.grad_clip)
            if not torch.isfinite(norm):
                self._diverged("gradient norm", float(norm), bar)
        lr = self.schedule.lr
        self.optimizer.step()
        # A finite loss can still give a non-finite update: an infinite gradient, which the
        # norm check above catches when clipping, and this check (one synchronisation for
        # all weights, before any checkpoint) when not.
        if not self.settings.grad_clip and not bool(
            torch.stack([torch.isfinite(p).all() for p in self.lm.parameters()]).all()
        ):
            self._bad_weights(bar)
        self.schedule.step()
        return sums, lr

    def _bad_weights(self, bar) -> None:
        bar.close()
        bad = [name for name, p in self.lm.named_parameters() if not bool(torch.isfinite(p).all())]
        step = self.state.step + 1
        if self.dist.is_main:
            self.log.write({"kind": "stopped", "step": step, "reason": f"non-finite weights: {', '.join(bad)}"})
        if self.last_checkpoint is None:
            saved = "No checkpoint had been written yet: start again"
        else:
            saved = f"The checkpoint of step {self.last_checkpoint:,} is kept: continue with --resume"
        raise DivergedRunError("E512", step=step, names=", ".join(bad[:3]), n_bad=len(bad), saved=saved)

    def _finished(self) -> bool:
        settings, state = self.settings, self.state
        return bool(
            (settings.max_steps and state.step >= settings.max_steps)
            or (settings.max_epochs and state.epoch >= settings.max_epochs)
        )

    def _logged_train_perplexity(self) -> Optional[float]:
        """The training perplexity the run's log last recorded (None for a new run)."""
        if not self.dist.is_main or self.state.step == 0:
            return None
        return self.log.train_perplexity_at(self.state.step)

    def _log_train(self, window: _Window, lr: float, bar) -> float:
        nll_f, nll_b, n = (float(v) for v in window.nll)
        ppl = Perplexity.from_sums(nll_f, nll_b, int(n))
        state = self.state
        record = {
            "kind": "train", "step": state.step, "epoch": state.epoch, "tokens": state.tokens,
            "loss": (nll_f + nll_b) / (2 * n), "ppl": ppl.mean, "ppl_forward": ppl.forward,
            "ppl_backward": ppl.backward, "lr": lr,
            "tokens_per_s": n / window.seconds if window.seconds else 0.0, "elapsed_s": round(state.elapsed, 2),
        }
        if self.dist.is_main:
            self.log.write(record)
            if bar is not None:
                bar.set_postfix_str(f"tok/s {record['tokens_per_s']:,.0f} loss {record['loss']:.3f} ppl {ppl.mean:.1f}")
        return ppl.mean

    def _evaluate_and_log(self, bar) -> Perplexity:
        ppl = self.evaluate(self.dev)
        self.schedule.observe(ppl.mean)
        state = self.state
        self.last_dev_step = state.step
        if self.dist.is_main:
            self.log.write({
                "kind": "dev", "step": state.step, "epoch": state.epoch, "tokens": state.tokens,
                "ppl": ppl.mean, "ppl_forward": ppl.forward, "ppl_backward": ppl.backward,
                "dev_tokens": ppl.tokens, "elapsed_s": round(state.elapsed, 2),
            })
            line = (f"step {state.step:,}: dev perplexity {ppl.mean:.2f} "
                    f"(forward {ppl.forward:.2f}, backward {ppl.backward:.2f})")
            (bar.write if bar is not None else print)(line)
        return ppl

    def _diverged(self, what: str, value: float, bar) -> None:
        """Stop on a loss or gradient that is not finite; the checkpoint on disk stays."""
        bar.close()
        step = self.state.step + 1
        if self.dist.is_main:
            self.log.write({"kind": "stopped", "step": step, "reason": f"{what} is {value}"})
        kept = (
            f"the last good checkpoint (step {self.last_checkpoint:,}) is kept in {self.run.checkpoint}"
            if self.last_checkpoint is not None else "no checkpoint had been written yet"
        )
        raise DivergedRunError("E312", step=step, what=what, value=value, kept=kept)

    def _export(self, train_ppl: Optional[float], dev: Optional[Perplexity]) -> None:
        state = self.state
        info = {**self.export_info, **training_info(self.lm, self.vocab, state, train_ppl, dev)}
        with writing(self.run.model, code=RUN_FILE):
            export_model(self.lm, self.vocab, info, self.run.model)
        with writing(self.run.plot, code=RUN_FILE):
            plot_curves(self.log.records(), self.run.plot, title=f"biLM pretraining: {self.run.path.name}")
        summary = f"Exported the biLM to {self.run.model} after {state.step:,} steps ({state.tokens:,} tokens)"
        if dev:
            summary += f"; dev perplexity forward {dev.forward:.2f}, backward {dev.backward:.2f}"
        self.printer.good(summary)
