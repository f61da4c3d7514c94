#!/usr/bin/env bash
# Record history/local-demo.csv: real runs of `cobell demo`'s job on a local Spark cluster,
# measured and recorded by cobell itself (alone at several scale-outs, then next to the demo's
# CPU-heavy co-runner), so the demo starts with a history instead of its bootstrap runs.
# Runtimes depend on the machine; this file was recorded on a 2-core CI-class machine.
#   usage: history/record-local-demo.sh   (from the repository root; takes ~15 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
export XDG_DATA_HOME="$work/data" SPARK_LOCAL_IP=127.0.0.1
free_port() { python -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"; }
port=$(free_port) ui=$(free_port)
cobell local-cluster start --workers 2 --cores-per-worker 4 --port $port --webui-port $ui
trap 'cobell local-cluster stop || true; rm -rf "$work"' EXIT
submit=$(python -c "from cobell_cli.run.local_cluster import spark_submit_path; print(spark_submit_path())")
jobs=$(python -c "import cobell_cli.examples as e, os; print(os.path.dirname(e.__file__))")
args=$(python -c "from cobell_cli.examples import DEMO_JOB_ARGS; print(' '.join(DEMO_JOB_ARGS))")
where=(--cluster standalone --standalone-url "http://127.0.0.1:$ui")
run() {  # run JOB SCALE_OUT SCRIPT ARGS...
  local job=$1 x=$2 script=$3; shift 3
  cobell submit -j "$job" -t 600 --min-scale-out "$x" --max-scale-out "$x" "${where[@]}" --json \
    -- "$submit" --master "spark://127.0.0.1:$port" "$jobs/$script" "$@" 2>/dev/null | tail -n 1
}
for x in 1 2 3 4 6 2 4; do
  run scaling-demo "$x" scaling_job.py $args
done
for x in 2 4 6; do  # next to the co-runner, started first
  run corunner-demo 2 corunner_job.py --tasks 2 --task-s 25 &
  sleep 20
  run scaling-demo "$x" scaling_job.py $args
  wait
done
cobell history export > history/local-demo.csv
echo "wrote history/local-demo.csv" >&2
