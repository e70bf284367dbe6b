#!/usr/bin/env bash
# install-relocatable.sh BUILD_DIR - installs the build into a scratch
# prefix, moves the prefix elsewhere, and checks that the installed tool
# still finds its own data there, with no environment pointing at it and no
# --db: `show` lists the shipped system DB's choices from the moved tree, a
# shipped plan is found by name in the moved tree (not in the source tree it
# was built from), and the man page and bash completion cover every command.
set -euo pipefail
build=$(cd "$1" && pwd)
scratch=$(mktemp -d /tmp/mla-tune-install-XXXXXX)
trap 'rm -rf "$scratch"' EXIT
fail() { echo "install-relocatable: FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$scratch/first" >/dev/null
mv "$scratch/first" "$scratch/moved"
P=$scratch/moved
mkdir "$scratch/home" "$scratch/cwd"
cd "$scratch/cwd"
run() { env -u MLA_TUNE_DB -u MLA_TUNE_SYSTEM_DB -u MLA_TUNE_SYSTEM_DB_PATH -u MLA_TUNE_CONFIG_DIR \
          -u XDG_DATA_HOME HOME="$scratch/home" "$P/bin/mla-tune" "$@"; }

# the shipped choices, read from the moved tree
out=$(run show) || fail "show exited $?: $out"
last=$(tail -1 <<<"$out")
[[ $last == *"system DB $P/share/mla-tune/tuning.db)" ]] || fail "show read another system DB: $last"
n=$(sed -E 's/^([0-9]+) choices.*/\1/' <<<"$last")
[ "$n" -gt 0 ] || fail "the system DB has no choices: $last"
# the choices' rows come before the crossover points' (which ship too)
rows=$(awk '/^crossover points/ {exit} /^system  sm_90 / {n++} END {print n + 0}' <<<"$out")
[ "$rows" -eq "$n" ] || fail "$n choices said, $rows system sm_90 rows shown"
points=$(awk '/^crossover points/ {on = 1; next} on && /^system  sm_90 / {n++} END {print n + 0}' <<<"$out")
[ "$points" -gt 0 ] || fail "the system DB ships no crossover points"
[ -f "$P/share/mla-tune/PROVENANCE.md" ] || fail "no PROVENANCE.md beside the system DB"

# a shipped plan by name, from the moved tree
plan=$(run sweep --dry-run --config quick | head -1)
[[ $plan == *"($P/share/mla-tune/configs/plans/quick.yaml)"* ]] || fail "plan not from the moved tree: $plan"

# --version
run --version | grep -qE '^mla-tune [0-9]+\.[0-9]+\.[0-9]+ ' || fail "--version"

# man page and completion name every command the tool lists
commands=$(run --help | awk '/^commands:/ {on = 1; next} on && !NF {exit} on {print $1}')
[ -n "$commands" ] || fail "no commands in --help"
for c in $commands; do
  grep -q "^\.B $c\$" "$P/share/man/man1/mla-tune.1" || fail "man page lacks command $c"
done
completion=$P/share/bash-completion/completions/mla-tune
words=$(bash -c 'source "$1"; COMP_WORDS=("$2" ""); COMP_CWORD=1; _mla_tune; echo "${COMPREPLY[@]}"' _ "$completion" "$P/bin/mla-tune")
for c in $commands; do [[ " $words " == *" $c "* ]] || fail "completion lacks $c (offers: $words)"; done
opts=$(bash -c 'source "$1"; COMP_WORDS=("$2" lookup --hea); COMP_CWORD=2; _mla_tune; echo "${COMPREPLY[@]}"' _ "$completion" "$P/bin/mla-tune")
[ "$opts" = "--heads" ] || fail "completion of 'lookup --hea': '$opts'"
echo "install-relocatable: ok ($n shipped choices read from $P after the move)"
