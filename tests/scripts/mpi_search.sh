#!/usr/bin/env bash
# The plan search over MPI ranks (mpirun -n N shardsim search) gives the
# same answer, byte for byte, as one process, for N = 1, 2 and 4 (waves are
# fixed before they run; results are shared with every rank); a bad
# scenario exits 2 with one line from rank 0.
#   mpi_search.sh SHARDSIM MPIEXEC SCENARIO WORKDIR
set -euo pipefail
bin=$1 mpiexec=$2 scenario=$3 work=$4
mkdir -p "$work"
args=(search "$scenario" --max-simulations 24 --top 24 --json --no-timing)
"$bin" "${args[@]}" > "$work/search.1proc.json"
for n in 1 2 4; do
  "$mpiexec" -n "$n" --oversubscribe "$bin" "${args[@]}" --jobs 1 > "$work/search.mpi$n.json"
  if ! cmp -s "$work/search.1proc.json" "$work/search.mpi$n.json"; then
    echo "mpirun -n $n: the search differs from one process:" >&2
    diff "$work/search.1proc.json" "$work/search.mpi$n.json" | head -20 >&2
    exit 1
  fi
done
set +e
err=$("$mpiexec" -n 2 --oversubscribe "$bin" search "$work/missing.json" 2>&1 >/dev/null)
rc=$?
set -e
if [ "$rc" != 2 ] || [ "$(grep -c 'missing.json: error: cannot read file' <<<"$err")" != 1 ]; then
  echo "a missing scenario under mpirun: exit $rc, output:" >&2
  echo "$err" >&2
  exit 1
fi
echo "mpi search: 1, 2 and 4 ranks agree with one process; errors exit 2 once"
