#!/usr/bin/env bash
# The GPU checks, benchmarks and trainings, for a machine with one CUDA GPU.
#
#   bash benchmarks/run_gpu.sh start WORK OUT  # benchmarks; trainings started in the background; GPU tests
#   bash benchmarks/run_gpu.sh finish WORK OUT  # waits for the trainings, copies results into OUT
#   bash benchmarks/run_gpu.sh pretrain-speed WORK  # tokens/s of pretraining per config and precision
#
#   bash benchmarks/run_gpu.sh v2-check WORK       # the cuDNN path's tests on this GPU (exit 1 if they fail), its speed
#   bash benchmarks/run_gpu.sh v2-start WORK       # the release biLM on corpus v2, two sizes, in the background
#   bash benchmarks/run_gpu.sh wait WORK SECONDS   # until they are done, or SECONDS have passed
#   bash benchmarks/run_gpu.sh v2-finish WORK OUT  # their weights (float16 where large), logs and scores into OUT
#   (V2_MINUTES: 16 a size, side by side; each phase fits one 10-minute command)
#
#   bash benchmarks/run_gpu.sh overhead WORK OUT   # GPU tests; words to layers, old code against new, with and without
#                                                  # CUDA graphs (bench_overhead.py); nlp.pipe's batch settings (bench_pipe_batches.py)
#   DEVICE=cpu PIPE_ARGS="--models shipped" bash benchmarks/run_gpu.sh overhead WORK OUT   # its smoke run on a CPU
#   (made beforehand on a machine with git and PyPI, both carried along in .gpu/:
#    mkdir -p .gpu/old && git archive 7566a4d spacy_elmo | tar -x -C .gpu/old
#    python benchmarks/bench_overhead.py --sentences 2048 --write-texts .gpu/texts.json)
#
# WORK is a scratch folder that lives as long as the machine. Needs spaCy and this package
# importable, the release corpus in corpus/release/pretrain and the PTB text in assets/ptb; the
# v2 phases corpus v2, unpacked from .whl/corpus_v2.tar.xz when it is not there (made with
# `tar cJf .whl/corpus_v2.tar.xz corpus/v2/pretrain/train.txt corpus/v2/pretrain/dev*.txt`).
# A device lease ends soon after its last command: `wait` keeps one command running meanwhile.
set -uo pipefail
cd "$(dirname "$0")/.."
phase=$1
work=$2
mkdir -p "$work"
export PYTHONUNBUFFERED=1

case "$phase" in
overhead)
  device=${DEVICE:-cuda}  # DEVICE=cpu: the same commands on a CPU, a smoke run before a lease
  gpu_args=()
  [ "$device" = cuda ] && gpu_args=(--precisions fp32 tf32 --cuda-graphs) \
    && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$3/gpu.txt"
  timeout 130 python3 -m pytest -q -p no:cacheprovider -m gpu tests/bilm/test_gpu.py tests/pipeline/test_gpu.py 2>&1 \
    | tee "$3/pytest_gpu.txt" | tail -n 25
  timeout 300 python3 benchmarks/bench_overhead.py --device "$device" "${gpu_args[@]}" \
    --texts .gpu/texts.json --reference-tree .gpu/old --repeats 3 --rounds 1 2>&1 | tee "$3/bench_overhead_gpu.txt"
  # The component's batches against the forward pass: why nlp.pipe leaves the GPU idle.
  # shellcheck disable=SC2086
  timeout 200 python3 benchmarks/bench_pipe_batches.py --device "$device" --texts .gpu/texts.json \
    --output "$3/bench_pipe_batches.json" ${PIPE_ARGS:-} 2>&1 | tee "$3/bench_pipe_batches.txt"
  ;;
start)
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -c "import torch, spacy, thinc; print('torch', torch.__version__, 'spaCy', spacy.__version__, 'thinc', thinc.__version__)"
  timeout "${BENCH_SECONDS:-270}" python3 benchmarks/bench_bilm_gpu.py --text corpus/release/pretrain/train.txt --sentences 2048 \
    --output "$work/bench_bilm_gpu.json" 2>&1 | tee "$work/bench_bilm_gpu.log"
  setsid nohup bash benchmarks/run_gpu.sh trainings "$work" >"$work/trainings.log" 2>&1 < /dev/null &
  OMP_NUM_THREADS=4 timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests/bilm/test_gpu.py \
    tests/pipeline/test_gpu.py 2>&1 | tee "$work/pytest_gpu.log" | tail -n 25
  OMP_NUM_THREADS=4 timeout 60 python3 -m pytest -q -p no:cacheprovider tests/bilm -k cuda 2>&1 | tee "$work/pytest_cuda_params.log" | tail -n 5
  tail -n 5 "$work/release.log" "$work/ptb.log" 2>/dev/null
  tar czf "$3/start.tgz" -C "$work" bench_bilm_gpu.json bench_bilm_gpu.log pytest_gpu.log pytest_cuda_params.log
  ;;
trainings)
  python3 -m experiments.pretrain_for_budget configs/bilm_release.cfg "$work/release" --minutes "${RELEASE_MINUTES:-10}" \
    --device "${DEVICE:-cuda}" --paths.train corpus/release/pretrain/train.txt --paths.dev corpus/release/pretrain/dev.txt \
    --score corpus/release/pretrain/dev_wiki.txt --score corpus/release/pretrain/dev_bbc.txt \
    --score corpus/release/pretrain/dev_reviews.txt --score corpus/release/pretrain/dev_oanc.txt \
    --score corpus/release/pretrain/dev.txt >"$work/release.log" 2>&1 &
  python3 -m experiments.pretrain_for_budget configs/bilm_ptb_gpu.cfg "$work/ptb" --minutes "${PTB_MINUTES:-9}" \
    --max-epochs 25 --device "${DEVICE:-cuda}" --score assets/ptb/valid.txt --score assets/ptb/test.txt >"$work/ptb.log" 2>&1 &
  wait
  touch "$work/DONE"
  ;;
finish)
  out=$3
  for _ in $(seq 1 "${WAIT_STEPS:-110}"); do [ -e "$work/DONE" ] && break; sleep 5; done
  tail -n 8 "$work/release.log" "$work/ptb.log"
  cp "$work"/release/model/weights.hdf5 "$out/release_weights.hdf5"
  cp "$work"/release/model/softmax.hdf5 "$out/release_softmax.hdf5"
  (cd "$work" && tar czf "$out/results.tgz" --exclude='*.hdf5' --exclude='*.pt' --exclude='.*' \
    *.log *.json release/model release/log.jsonl release/budget_run.json release/curves.png release/config.cfg \
    ptb/model/options.json ptb/model/pretrain.json ptb/log.jsonl ptb/budget_run.json ptb/curves.png ptb/config.cfg)
  ls -la "$out"
  ;;
v2-check)
  [ -e corpus/v2/pretrain/train.txt ] || tar xJf .whl/corpus_v2.tar.xz
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  # The cuDNN path against the step-by-step one on this GPU (values, gradients, autocast, export):
  # if it fails, nothing is trained through it.
  OMP_NUM_THREADS=4 timeout 150 python3 -m pytest -q -p no:cacheprovider tests/bilm/test_lstm_torch.py \
    >"$work/pytest_lstm_torch.log" 2>&1
  status=$?
  tail -n 3 "$work/pytest_lstm_torch.log"
  [ "$status" = 0 ] || { echo "the cuDNN path's tests failed (exit $status): see $work/pytest_lstm_torch.log"; exit 1; }
  # Alone on the GPU: the whole pretraining step through cuDNN against the step-by-step LSTMs.
  for size in "" "--set model.lstm_dim=1024 --set model.projection_dim=256"; do
    timeout 200 python3 benchmarks/bench_pretrain.py --text corpus/v2/pretrain/train.txt --configs bilm_release \
      --device cuda --precisions fp32 --threads 1 --reference none --lstm-paths own torch --steps 40 --warmup 10 \
      --set model.cell_clip=0 --set model.proj_clip=0 $size --output "$work/bench_pretrain_v2${size:+_large}.json" \
      2>&1 | grep -E "tokens/s|Error|error" | tee -a "$work/bench_pretrain_v2.log"
  done
  ;;
v2-start)
  # Both sizes without clipping (cell_clip = proj_clip = 0), so that their LSTM layers run as
  # cuDNN (spacy_elmo/bilm/lstm_torch.py); v1's vocabulary, so that perplexities compare. Today's
  # size continues the shipped biLM (the release line, at v2's lower learning rate); the large one
  # starts from scratch (no biLM of its shape exists).
  [ -e "$work/pytest_lstm_torch.log" ] && grep -q " passed" "$work/pytest_lstm_torch.log" \
    && ! grep -q "failed" "$work/pytest_lstm_torch.log" || { echo "run v2-check first, and green"; exit 1; }
  scores=()
  for f in corpus/v2/pretrain/dev*.txt; do scores+=(--score "$f"); done
  common=(--minutes "${V2_MINUTES:-16}" --device cuda --paths.train corpus/v2/pretrain/train.txt
          --paths.dev corpus/v2/pretrain/dev.txt --vocab.path elmo-en-small
          --model.cell_clip 0 --model.proj_clip 0 --training.tokens_per_batch "${V2_TOKENS:-16000}"
          --training.eval_every 1000 --training.checkpoint_every 1000 --training.log_every 200)
  rm -f "$work/DONE_v2"
  setsid nohup bash -c "python3 -m experiments.pretrain_for_budget configs/bilm_release.cfg '$work/v2_base' \
      ${common[*]} --paths.init elmo-en-small --training.optimizer.learn_rate 0.001 ${scores[*]} >'$work/v2_base.log' 2>&1 &
    python3 -m experiments.pretrain_for_budget configs/bilm_release.cfg '$work/v2_large' \
      ${common[*]} --model.lstm_dim 1024 --model.projection_dim 256 ${scores[*]} >'$work/v2_large.log' 2>&1 &
    wait; touch '$work/DONE_v2'" >/dev/null 2>&1 < /dev/null &
  sleep 90
  tail -n 3 "$work/v2_base.log" "$work/v2_large.log"
  ;;
wait)
  for _ in $(seq 1 $(( $3 / 10 ))); do [ -e "$work/DONE_v2" ] && break; sleep 10; done
  tail -n 2 "$work/v2_base.log" "$work/v2_large.log"
  ;;
v2-finish)
  out=$3
  tail -n 20 "$work/v2_base.log" "$work/v2_large.log"
  [ -e "$work/DONE_v2" ] || { echo "the trainings are still running: wait first"; exit 1; }
  for size in base large; do
    dtype=float32
    [ "$size" = large ] && dtype=float16  # 40 MB as float32; the card may ship float16 (loaded back as float32)
    python3 -c "import sys; from spacy_elmo.training import export_model, load_model; \
lm, vocab, info = load_model(sys.argv[1]); export_model(lm, vocab, info, sys.argv[2], sys.argv[3])" \
      "$work/v2_$size/model" "$work/v2_${size}_export" "$dtype"
    # The perplexity of the weights as they ship (float16 for the large one), not as they trained.
    python3 -m spacy_elmo perplexity "$work/v2_${size}_export" corpus/v2/pretrain/dev.txt --device cuda \
      --output "$work/v2_${size}_export_dev.json" 2>&1 | tail -n 2
    (cd "$work" && tar cf "$out/v2_$size.tar" "v2_${size}_export" "v2_$size/log.jsonl" "v2_$size/budget_run.json" \
      "v2_$size/config.cfg" "v2_$size.log" "v2_${size}_export_dev.json" bench_pretrain_v2* pytest_lstm_torch.log)
  done
  # A result file may hold 16 MiB at most: the large biLM's weights come in parts (cat them back).
  (cd "$out" && split -b 15M -d v2_large.tar v2_large.tar.part && rm v2_large.tar)
  ls -la "$out"
  ;;
pretrain-speed)
  python3 benchmarks/bench_pretrain.py --text corpus/release/pretrain/train.txt --configs bilm_small bilm_release \
    --device cuda --precisions fp32 tf32 bf16 --steps 60 --warmup 15 --output "$work/bench_pretrain_gpu.json" \
    2>&1 | grep -v "^\s*$" | grep -E "tokens/s|written|Error|error" | tee "$work/bench_pretrain_gpu.log"
  ;;
esac
