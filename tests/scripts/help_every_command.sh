#!/usr/bin/env bash
# Every command main.cc dispatches has its own usage, and every command the
# full usage lists is one main.cc dispatches: `shardsim CMD --help` and
# `shardsim help CMD` print the same text, exit 0, open with "Usage:" and
# name CMD.
#   help_every_command.sh SHARDSIM MAIN_CC
set -u
bin=$1
main_cc=$2
dispatched=$(grep -o 'cmd == "[a-z]*"' "$main_cc" | sed 's/cmd == "\(.*\)"/\1/' | sort -u)
listed=$("$bin" --help | sed -n 's/^  shardsim \([a-z]*\).*/\1/p' | sort -u)
status=0
if [ -z "$dispatched" ]; then echo "no commands found in $main_cc"; exit 1; fi
if [ "$dispatched" != "$listed" ]; then
  echo "main.cc dispatches and --help lists different commands:"
  diff <(echo "$dispatched") <(echo "$listed")
  status=1
fi
for cmd in $dispatched; do
  a=$("$bin" "$cmd" --help) || { echo "$cmd --help exited $?"; status=1; continue; }
  b=$("$bin" help "$cmd") || { echo "help $cmd exited $?"; status=1; continue; }
  [ "$a" = "$b" ] || { echo "$cmd --help and help $cmd differ"; status=1; }
  [ "$(echo "$a" | head -n 1)" = "Usage:" ] || { echo "$cmd --help does not open with Usage:"; status=1; }
  echo "$a" | grep -q "^  shardsim $cmd\b" || { echo "$cmd --help does not name shardsim $cmd"; status=1; }
  others=$(echo "$a" | sed -n 's/^  shardsim \([a-z]*\).*/\1/p' | grep -vx "$cmd")
  [ -z "$others" ] || { echo "$cmd --help also shows: $others"; status=1; }
done
exit $status
