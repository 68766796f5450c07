#!/usr/bin/env bash
# Ablation of the full experiment: 3x longer downstream training (3,000 steps), 3 seeds, with the
# tuned biLMs and corpora that `bash experiments/run/full_parallel.sh full` left. Two runs at a time.
#   bash experiments/run/long_training.sh
cd "$(dirname "$0")/../.."
P=long
export OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1
mkdir -p logs/$P metrics/$P
for variant in baseline elmo; do
  for task in ner sentiment5; do
    base=$([ $task = ner ] && echo ner || echo textcat)
    cfg=configs/${base}_$([ $variant = baseline ] && echo baseline || echo elmo).cfg
    extra=$([ $variant = baseline ] && echo "" || echo "--paths.elmo training/full/bilm_$task/model")
    for seed in 0 1 2; do
      while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n; done
      python -m experiments.run.train_seeds $cfg training/$P/${task}_$variant --seeds $seed --gpu-id -1 \
        --paths.train corpus/full/$task/train.spacy --paths.dev corpus/full/$task/dev.spacy \
        --training.max_steps 3000 --training.eval_frequency 500 $extra > logs/$P/${task}_${variant}_seed$seed.log 2>&1 &
    done
  done
done
wait
for task in ner sentiment5; do for variant in baseline elmo; do
  python -m experiments.run.evaluate_seeds corpus/full/$task/test.spacy metrics/$P training/$P/${task}_$variant > logs/$P/eval_${task}_$variant.log 2>&1
done; done
python -m experiments.report.comparison metrics/$P training/$P reports/$P --title "3,000 training steps, seeds 0 1 2" > logs/$P/report.log 2>&1
echo done
