#!/bin/sh
# health_check (native) overlay: benchpress runs this file; it hands over to the binary beside it.
# exec, so a benchpress timeout signals the binary itself and no shell keeps stdout open.
exec "$(dirname "$(readlink -f "$0")")/health_check" "$@"
