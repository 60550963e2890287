# Sourced by scripts/test.sh and scripts/reelgate: the one cargo build directory of this clone's
# commands, outside the clone, so running the service and testing it compile the workspace once
# (and a fresh clone of the same repository on a warm machine compiles only what changed).
#
#   CARGO_TARGET_DIR   cargo's build directory (default $XDG_CACHE_HOME/reelgate/target, else
#                      $HOME/.cache/reelgate/target)
#   REELGATE_TOOLS_DIR the test tools (default beside it: .../reelgate/tools)
REELGATE_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/reelgate"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$REELGATE_CACHE/target}"
export REELGATE_TOOLS_DIR="${REELGATE_TOOLS_DIR:-$REELGATE_CACHE/tools}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
