#!/usr/bin/env bash
# The rustc wrapper (RUSTC_WORKSPACE_WRAPPER) of scripts/build.sh's release build.
#
# Cargo builds the library's cdylib and rlib ([lib] crate-type) in one rustc call, and rustc does no
# LTO at all in a call that also makes an rlib: `lto = true` silently never reached the wasm
# (rust-lang/rust#51009, rust-lang/cargo#9672), so std/core stayed in it as precompiled, and, for
# one, a trapping panic handler left core's formatting code that builds the messages in place. The
# package needs only the cdylib; for the library's wasm32 call this drops the rlib and asks for fat
# LTO, as `cargo rustc --crate-type cdylib` would (scripts/build.sh runs `cargo build`). Other calls, and
# any call when cargo's flags are not the expected ones, go through unchanged.
set -euo pipefail
rustc=$1
shift
lib=0 cdylib=0 rlib=0 wasm=0 lto=0
prev=
for arg in "$@"; do
  case "$prev $arg" in
    "--crate-name toolgate") lib=1 ;;
    "--crate-type cdylib") cdylib=1 ;;
    "--crate-type rlib") rlib=1 ;;
    "--target wasm32-unknown-unknown") wasm=1 ;;
  esac
  case "$prev $arg" in
    "-C lto"* | "-C linker-plugin-lto"* | "-C embed-bitcode=no") lto=1 ;;
  esac
  prev=$arg
done
if [ "$lib$cdylib$rlib$wasm$lto" != 11110 ]; then
  exec "$rustc" "$@"
fi
# The crate's `-C metadata` (cargo's hash of the package, which for a path package includes the
# checkout's path) seeds every symbol hash; LLVM's and wasm-opt's output order follows the symbol
# names, so two checkouts of the same commit made modules about 100 B apart. A fixed value makes the
# package the same bytes wherever it is built (with the same toolchain and lock file).
args=()
prev=
for arg in "$@"; do
  if [ "$prev" = --crate-type ] && [ "$arg" = rlib ]; then
    unset 'args[-1]'
  elif [ "$prev" = -C ] && [ "${arg#metadata=}" != "$arg" ]; then
    args+=("metadata=toolgate-package")
  else
    args+=("$arg")
  fi
  prev=$arg
done
exec "$rustc" "${args[@]}" -C lto=fat
