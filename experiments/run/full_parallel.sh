#!/usr/bin/env bash
# The `full` experiment with its training runs side by side (MAX_JOBS at a time): on a machine
# with one GPU and many cores, or on the CPU (GPU_ID=-1, MAX_JOBS = the cores):
#
#   bash experiments/run/full_parallel.sh [PROFILE [GPU_ID [MAX_JOBS]]]
#   bash experiments/run/full_parallel.sh full 0 24      # one GPU, 16 cores
#   bash experiments/run/full_parallel.sh full -1 2      # 2 CPU cores
#
# 1. converts WNUT-16 NER and the 5-class Rotten Tomatoes sentiment task;
# 2. tunes the shipped biLM (pretrained/elmo-en-small) to each task's training text for a fixed
#    budget (TUNE_STEPS steps of 2,000 tokens) and measures the task's dev perplexity before and after;
# 3. trains, for each task and seed: the baseline, + ELMo (tuned biLM), + ELMo (shipped biLM, untuned);
# 4. scores every run on the test split and writes the report.
# SEEDS, TRAIN_STEPS, EVAL_FREQUENCY and TUNE_STEPS may be set in the environment. Needs assets/
# from `python -m spacy project assets && python -m experiments.data.fetch assets`. A run whose model-best exists is skipped, so a stopped
# experiment resumes where it was.
set -uo pipefail
cd "$(dirname "$0")/../.."
P=${1:-full}
GPU=${2:-${GPU_ID:--1}}
DEVICE=$([ "$GPU" -ge 0 ] && echo "cuda:$GPU" || echo cpu)
SEEDS=${SEEDS:-"0 1 2 3 4"}
STEPS=${TRAIN_STEPS:-1000}
EVAL=${EVAL_FREQUENCY:-200}
TUNE_STEPS=${TUNE_STEPS:-200}
MAX_JOBS=${3:-${MAX_JOBS:-2}}
BILM=pretrained/elmo-en-small
export OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1
mkdir -p "logs/$P" "metrics/$P"

python -m experiments.convert.ner assets/wnut16/ner.txt "corpus/$P/ner" | tail -n 1
python -m experiments.convert.sentiment5 assets/rt_snippets/movieReviewSnippets_GroundTruth.txt "corpus/$P/sentiment5" | tail -n 1
for task in ner sentiment5; do
  for split in train dev; do
    python -m experiments.convert.task_text "corpus/$P/$task/$split.spacy" "corpus/$P/$task/$split.txt"
  done
  (
    python -m spacy_elmo perplexity "$BILM" "corpus/$P/$task/dev.txt" --device "$DEVICE" --overwrite \
      --output "metrics/$P/bilm_${task}_before.json"
    python -m spacy_elmo pretrain configs/bilm_release.cfg "training/$P/bilm_$task" --resume --no-progress \
      --init-from "$BILM" --device "$DEVICE" --paths.train "corpus/$P/$task/train.txt" \
      --paths.dev "corpus/$P/$task/dev.txt" --vocab.path "$BILM/vocab.txt" --training.max_steps "$TUNE_STEPS" \
      --training.tokens_per_batch 2000 --training.eval_every 50 --training.checkpoint_every 50 \
      --training.optimizer.learn_rate 0.0005 --training.schedule.warmup_steps 20
    python -m spacy_elmo perplexity "training/$P/bilm_$task/model" "corpus/$P/$task/dev.txt" --device "$DEVICE" \
      --overwrite --output "metrics/$P/bilm_${task}_after.json"
  ) > "logs/$P/tune_$task.log" 2>&1 &
done
wait

config_of() {  # task variant -> config
  local base=$([ "$1" = ner ] && echo ner || echo textcat)
  [ "$2" = baseline ] && echo "configs/${base}_baseline.cfg" || echo "configs/${base}_elmo.cfg"
}
for variant in baseline elmo elmo_untuned; do
  for task in ner sentiment5; do
    elmo=$([ "$variant" = elmo ] && echo "training/$P/bilm_$task/model" || echo "$BILM")
    extra=$([ "$variant" = baseline ] && echo "" || echo "--paths.elmo $elmo")
    for seed in $SEEDS; do
      while [ "$(jobs -rp | wc -l)" -ge "$MAX_JOBS" ]; do wait -n; done
      python -m experiments.run.train_seeds "$(config_of $task $variant)" "training/$P/${task}_$variant" --seeds "$seed" \
        --gpu-id "$GPU" --paths.train "corpus/$P/$task/train.spacy" --paths.dev "corpus/$P/$task/dev.spacy" \
        --training.max_steps "$STEPS" --training.eval_frequency "$EVAL" $extra \
        > "logs/$P/${task}_${variant}_seed$seed.log" 2>&1 &
    done
  done
done
wait
for task in ner sentiment5; do
  for variant in baseline elmo elmo_untuned; do
    while [ "$(jobs -rp | wc -l)" -ge "$MAX_JOBS" ]; do wait -n; done
    python -m experiments.run.evaluate_seeds "corpus/$P/$task/test.spacy" "metrics/$P" "training/$P/${task}_$variant" \
      > "logs/$P/evaluate_${task}_$variant.log" 2>&1 &
  done
done
wait
python -m experiments.report.comparison "metrics/$P" "training/$P" "reports/$P" --title "Profile $P, seeds $SEEDS"
