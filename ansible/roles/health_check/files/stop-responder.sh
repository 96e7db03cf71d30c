#!/bin/sh
# health_check (native) overlay: stops one client-role responder (`health_check -r client --daemon`)
# by its pid file. The one implementation of this: the Ansible role copies it beside the binary on
# every host (roles/health_check/tasks/responder_stop.yml) and cleanup_health_check.sh calls it for
# each pid file it finds.
#
#   stop-responder.sh PIDFILE [EXPECTED_EXE]
#
# The process named by PIDFILE is signalled only when it is alive, not a zombie, and is our
# responder: its /proc/PID/exe is EXPECTED_EXE when that is given, else its comm is health_check
# and one of its arguments is PIDFILE (it was started with --pid-file PIDFILE). A recycled pid is
# left alone. SIGTERM first (the responder exits and removes its pid file), SIGKILL after 5 s, then
# it must be gone. The pid file is removed only while it still holds that pid (a process that is
# not running leaves a stale one).
#
# Prints one line saying what it did. Exit status: 0 done (also: nothing to stop, not ours);
# 1 the process survived SIGKILL; 2 usage.
set -eu

me=stop-responder
if [ $# -lt 1 ] || [ $# -gt 2 ] || [ -z "$1" ]; then
  echo "usage: $0 PIDFILE [EXPECTED_EXE]" >&2
  exit 2
fi
pid_file=$1
expected_exe=${2:-}

if [ ! -e "$pid_file" ] && [ ! -L "$pid_file" ]; then
  echo "$me: no pid file $pid_file: nothing to stop"
  exit 0
fi
# A responder writes its pid file itself, as a regular file (never through a link).
if [ -L "$pid_file" ] || [ ! -f "$pid_file" ]; then
  echo "$me: $pid_file is not a regular file: nothing stopped, left alone"
  exit 0
fi
read_pid() {
  IFS= read -r line <"$pid_file" 2>/dev/null || true
  printf '%s' "${line:-}"
}
pid=$(read_pid)
case "$pid" in
  '' | *[!0-9]* | 0*)
    echo "$me: $pid_file holds no pid: nothing to stop (the file is left alone)"
    exit 0
    ;;
esac

# Alive and not a zombie (an exited daemon whose new parent does not reap it is a zombie).
alive() {
  state=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -c1) || state=
  [ -n "$state" ] && [ "$state" != Z ]
}

# Our responder: its executable, or its name and the pid file among its arguments.
ours() {
  if [ -n "$expected_exe" ]; then
    exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || return 1
    # A binary replaced or removed while it runs shows as "PATH (deleted)".
    [ "${exe% (deleted)}" = "$expected_exe" ]
  else
    comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 1
    [ "$comm" = health_check ] || return 1
    tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | grep -qxF -e "$pid_file" -e "--pid-file=$pid_file"
  fi
}

# Removes the pid file if it still holds $pid (a new responder may have replaced it meanwhile).
remove_pid_file() {
  if [ -f "$pid_file" ] && [ "$(read_pid)" = "$pid" ]; then
    rm -f -- "$pid_file"
  fi
}

# Waits up to $1 tenths of a second for the process to end; true when it has.
ended_within() {
  i=0
  while alive; do
    [ "$i" -lt "$1" ] || return 1
    sleep 0.1
    i=$((i + 1))
  done
}

if ! alive; then
  remove_pid_file
  echo "$me: the responder (pid $pid) is not running: removed the stale pid file $pid_file"
  exit 0
fi
if ! ours; then
  if [ -n "$expected_exe" ]; then
    echo "$me: pid $pid in $pid_file is not $expected_exe (a recycled pid or another install's responder): left alone"
  else
    echo "$me: pid $pid in $pid_file is not a health_check started with that pid file (a recycled pid?): left alone"
  fi
  exit 0
fi

if ! kill -TERM "$pid" 2>/dev/null && alive; then
  echo "$me: cannot signal the responder (pid $pid): run this as its user or as root"
  exit 1
fi
if ended_within 50; then
  remove_pid_file
  echo "$me: stopped the responder (pid $pid)"
  exit 0
fi
kill -KILL "$pid" 2>/dev/null || true
if ended_within 20; then
  remove_pid_file
  echo "$me: the responder (pid $pid) ignored SIGTERM for 5 s; killed it with SIGKILL"
  exit 0
fi
echo "$me: could not stop the responder (pid $pid), even with SIGKILL;" \
  "it may be stuck in the kernel: see /proc/$pid/stack, or reboot"
exit 1
