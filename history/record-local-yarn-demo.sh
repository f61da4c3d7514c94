#!/usr/bin/env bash
# Record history/local-yarn-demo.csv: real runs of `cobell demo --yarn`'s job on the local YARN
# (`cobell local-cluster start --yarn`), measured and recorded by cobell itself (alone at
# several scale-outs, then next to the demo's CPU-heavy co-runner), so the YARN demo starts
# with a history instead of its bootstrap runs. Runtimes depend on the machine; say which one
# (and its load) in the commit that updates the file.
#   usage: history/record-local-yarn-demo.sh   (from the repository root; ~15-25 minutes)
# In chunks (one history kept in RECORD_DIR between them; the last chunk writes the file):
#   RECORD_DIR=/tmp/rec BESIDE= history/record-local-yarn-demo.sh   # the runs alone
#   RECORD_DIR=/tmp/rec ALONE= history/record-local-yarn-demo.sh    # those beside the co-runner
set -euo pipefail
cd "$(dirname "$0")/.."
work=${RECORD_DIR:-$(mktemp -d)}
mkdir -p "$work"
keep=${RECORD_DIR:+1}
export XDG_DATA_HOME="$work/data" XDG_CACHE_HOME="${XDG_CACHE_HOME:-$HOME/.cache}"
py=${PYTHON:-.venv/bin/python}
cobell() { "$py" -m cobell_cli --db "$work/history.db" "$@"; }
cobell local-cluster start --yarn
trap 'cobell local-cluster stop --yarn || true; [ -n "$keep" ] || rm -rf "$work"' EXIT
conf="$XDG_DATA_HOME/cobell/local-yarn/conf"
export HADOOP_CONF_DIR=$conf SPARK_CONF_DIR=$conf SPARK_LOCAL_IP=127.0.0.1
submit=$("$py" -c "from cobell_cli.run.local_cluster import spark_submit_path; print(spark_submit_path())")
jobs=$("$py" -c "import cobell_cli.examples as e, os; print(os.path.dirname(e.__file__))")
args=$("$py" -c "from cobell_cli.examples import DEMO_JOB_ARGS; print(' '.join(DEMO_JOB_ARGS))")
job=$("$py" -c "from cobell_cli.cli.demo_yarn import DEMO_JOB; print(DEMO_JOB)")
co=$("$py" -c "from cobell_cli.cli.demo_yarn import CO_RUNNER_JOB; print(CO_RUNNER_JOB)")
opts=$("$py" -c "from cobell_cli.cli.demo_yarn import SPARK_SUBMIT_OPTS as o; print(' '.join(o))")
run() {  # run JOB SCALE_OUT SCRIPT ARGS...
  local name=$1 x=$2 script=$3; shift 3
  cobell submit -j "$name" -t 600 --min-scale-out "$x" --max-scale-out "$x" --json \
    --spark-log-level ERROR -- "$submit" $opts "$jobs/$script" "$@" 2>/dev/null | tail -n 1
}
for x in ${ALONE-1 2 3 4 6 2 4}; do
  run "$job" "$x" scaling_job.py $args
done
for x in ${BESIDE-2 4 5}; do  # next to the co-runner, started first
  run "$co" 2 corunner_job.py --tasks 2 --task-s 40 &
  sleep 30
  run "$job" "$x" scaling_job.py $args
  wait
done
cobell history export > history/local-yarn-demo.csv
echo "wrote history/local-yarn-demo.csv" >&2
