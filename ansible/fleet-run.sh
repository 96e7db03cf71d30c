#!/usr/bin/env bash
# Runs fleet.yml with the arguments given (inventory, -e, --limit ...) and, when the run is
# interrupted (Ctrl-C, SIGTERM) or fails, stops every responder afterwards with `--tags stop`:
# ansible-playbook skips always: sections when it is interrupted, so the playbook alone cannot.
#
#   ansible/fleet-run.sh -i inventory.ini -e health_check_mode=mesh
#
# ANSIBLE_PLAYBOOK picks the ansible-playbook to run (default: the one on PATH).
set -uo pipefail
here=$(dirname "$(readlink -f "$0")")
playbook=${ANSIBLE_PLAYBOOK:-ansible-playbook}

interrupted=0
# shellcheck disable=SC2317  # called by the traps below
forward() {
  interrupted=1
  kill "-$1" "$child" 2>/dev/null
}
"$playbook" "$here/fleet.yml" "$@" &
child=$!
trap 'forward INT' INT
trap 'forward TERM' TERM
# wait returns early when a trapped signal arrives: wait again until the playbook has ended.
while :; do
  wait "$child"
  rc=$?
  kill -0 "$child" 2>/dev/null || break
done
trap '' INT TERM  # nothing interrupts the cleanup

if [ "$interrupted" -eq 1 ] || [ "$rc" -ne 0 ]; then
  echo "fleet-run.sh: the run ended early (status $rc): stopping the responders (--tags stop)" >&2
  "$playbook" "$here/fleet.yml" "$@" --tags stop >&2 || true
fi
exit "$rc"
