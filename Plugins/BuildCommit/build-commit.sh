#!/bin/sh
# build-commit.sh PACKAGE_DIR OUTPUT: writes OUTPUT, a Swift file declaring `buildCommit`, the abbreviated hash of
# PACKAGE_DIR's HEAD (`git rev-parse --short HEAD`), or nil when PACKAGE_DIR is not the top of a git checkout (a
# tarball, a copy without .git, a directory inside another repository) or git is missing. OUTPUT is rewritten only
# when its text changes. Run by the BuildCommit plugin (Plugins/BuildCommit/BuildCommit.swift says why).
set -u
dir=$1
out=$2
commit=
if top=$(git -C "$dir" rev-parse --show-toplevel 2>/dev/null) &&
  [ "$(cd "$top" && pwd -P)" = "$(cd "$dir" && pwd -P)" ]; then
  commit=$(git -C "$dir" rev-parse --short HEAD 2>/dev/null) || commit=
fi
case $commit in
  '' | *[!0-9a-f]*) value=nil ;;
  *) value="\"$commit\"" ;;
esac
text="// Generated at build time by Plugins/BuildCommit; never committed.
let buildCommit: String? = $value"
if [ ! -f "$out" ] || [ "$(cat "$out")" != "$text" ]; then
  printf '%s\n' "$text" >"$out"
fi
