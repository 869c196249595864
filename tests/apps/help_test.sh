#!/usr/bin/env bash
# Every subcommand of `sluice` listed in its top-level usage answers --help (and -h) with exit 0
# and a usage line naming it on stdout, before it would take the flag for an argument.
#   tests/apps/help_test.sh SLUICE_BINARY
set -euo pipefail
SLUICE=$1
"$SLUICE" --help | grep -q '^usage: sluice <command>' || { echo "help_test: sluice --help" >&2; exit 1; }
commands=$("$SLUICE" --help | awk '/^commands:/{on=1; next} on && /^  [a-z]/{print $1}' | sort -u)
[[ -n $commands ]] || { echo "help_test: no commands listed" >&2; exit 1; }
for c in $commands; do
  for flag in --help -h; do
    out=$("$SLUICE" "$c" "$flag") || { echo "help_test: sluice $c $flag exited $?" >&2; exit 1; }
    grep -q "^usage: sluice $c" <<<"$out" || { echo "help_test: sluice $c $flag printed: $out" >&2; exit 1; }
  done
done
echo "help_test: $(wc -w <<<"$commands") commands answer --help"
