#!/bin/sh
# The build stage's output for the runtime image: the guestpass binary with its DWARF debug sections stripped (the
# symbol table stays, so Swift's crash backtraces still name every function; about half of a release binary is
# DWARF) and the SwiftPM resource bundles next to it (the core migrations ship as GuestPass_CoreMigrations.resources,
# the OpenAPI document as GuestPass_GuestPassApp.resources; both are found relative to the executable).
# Used by docker/Dockerfile's build stage and by scripts/container-check, which builds on the host:
#
#   docker/stage-binary.sh BIN_DIR STAGING_DIR     (BIN_DIR: `swift build -c release ... --show-bin-path`)
set -eu
bin_dir="$1"
staging="$2"
mkdir -p "$staging"
strip --strip-debug -o "$staging/guestpass" "$bin_dir/guestpass"
find "$bin_dir" -maxdepth 1 -name '*.resources' -exec cp -R {} "$staging" \;
ls -la "$staging"
